// Where the drop-in layers are, relative to the folder of libkcache (built
// and installed beside it; src/CMakeLists.txt makes them): `kcache run`
// preloads them from there, and the dlsym layer loads a stand-in or the
// OpenCL layer from there when a program opens a library they serve.
#pragma once

namespace kcache::layer {

inline constexpr const char* kOpenClLayerFile = "libkcache_opencl_layer.so";
inline constexpr const char* kDlsymLayerFile = "libkcache_dlsym_layer.so";
// The NVRTC shim's stand-ins: <folder>/kcache/nvrtc/<soname>.
inline constexpr const char* kNvrtcStandInFolder = "kcache/nvrtc";
// The sonames there is a stand-in for (src/CMakeLists.txt builds one each).
inline constexpr const char* kNvrtcStandInSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                                       "libnvrtc.so.11.2"};

}  // namespace kcache::layer
