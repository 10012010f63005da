// The environment variables of the settings table (src/core/config.cpp)
// that code outside the table names too. The table's row and that code use
// the same constant, so a name is spelled once.
//
// Everything kcache's library reads comes through the table (make_compiler
// hands a backend its setting's value); only the drop-in layers read their
// variable with getenv themselves, as they run in another program's
// process and must know whether to serve before any cache is opened.
#pragma once

namespace kcache {

// log_level: the layers stay quiet unless it is set.
inline constexpr char kLogLevelVariable[] = "KCACHE_LOG_LEVEL";
// layer_disable: the drop-in layers' off switch (layers/layer_switch.h).
inline constexpr char kLayerDisableVariable[] = "KCACHE_LAYER_DISABLE";
// nvrtc_library: the libnvrtc the nvrtc backend loads, and the real one
// behind the NVRTC shim.
inline constexpr char kNvrtcLibraryVariable[] = "KCACHE_NVRTC_LIBRARY";
// hip_library: the libamdhip64 the hip backend's worker loads.
inline constexpr char kHipLibraryVariable[] = "KCACHE_HIP_LIBRARY";
// hip_worker: the hip backend's helper program.
inline constexpr char kHipWorkerVariable[] = "KCACHE_HIP_WORKER";

}  // namespace kcache
