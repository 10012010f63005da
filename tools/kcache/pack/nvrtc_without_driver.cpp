#include "pack/nvrtc_without_driver.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef KCACHE_NO_GPU_DRIVER_RELATIVE
#define KCACHE_NO_GPU_DRIVER_RELATIVE "../libexec/kcache"
#endif

namespace kcache::tool {
namespace {

constexpr const char* kStandIn = "libkcache-no-gpu-driver.so";

// The stand-in beside this program (the build tree) or where it is
// installed, relative to it; empty when neither is there.
std::string stand_in_path() {
  std::error_code error;
  const auto program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  for (const auto& folder :
       {program.parent_path(), program.parent_path() / KCACHE_NO_GPU_DRIVER_RELATIVE}) {
    const auto path = folder / kStandIn;
    if (std::filesystem::is_regular_file(path, error)) return path.lexically_normal().string();
  }
  return {};
}

}  // namespace

// NVRTC 13 loads the GPU driver (libcuda.so.1) and starts it (cuInit) on
// its first compile in a process, though a cubin for a named arch owes
// nothing to a GPU: on an H100 host 16 workers starting at once slept 1.7
// cores' worth in the driver's locks. With the GPUs hidden the driver still
// took its locks (16 compile processes at once: 0.55 s with the GPU seen,
// 0.33 s hidden, 0.12 s with no driver; docs/benchmarks.md). So both: the
// GPUs hidden, and kcache's stand-in (no_gpu_driver.cpp, soname
// libcuda.so.1) loaded first, which NVRTC's dlopen of that name then gets.
// The pack compiles as a build machine without a GPU does; the cubins and
// keys are the same (the environment is not in a key;
// scripts/device/nvrtc_driver_probe.sh compares them all three ways).
// Where the stand-in is missing, or the driver is loaded already, the
// hidden GPUs alone remain.
void keep_nvrtc_from_the_driver(const std::vector<Line>& lines) {
  const bool only_nvrtc = std::all_of(lines.begin(), lines.end(),
                                      [](const Line& line) { return line.backend == "nvrtc"; });
  if (!only_nvrtc) return;
  ::setenv("CUDA_VISIBLE_DEVICES", "", 1);
  if (void* loaded = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD)) {
    ::dlclose(loaded);  // the driver, or a stand-in, is there already
    return;
  }
  if (const std::string path = stand_in_path(); !path.empty()) {
    // Kept for the process's life: never closed.
    (void)::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
}

}  // namespace kcache::tool
