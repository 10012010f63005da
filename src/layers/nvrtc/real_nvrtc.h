// The real libnvrtc behind the NVRTC shim's stand-in: found by path (the
// stand-in has its soname) and opened once; its entry points, null where
// it has none.
#pragma once

#include <string>

#include "compiler/nvrtc/nvrtc_api.h"

namespace kcache::layer {

// The real library's entry points (null where it has none: nvrtc_api.h).
struct Real : NvrtcFunctions {
  void* CPEx = nullptr;  // __nvrtcCPEx, undocumented: jumped to as is
  std::string path;      // the file it was opened from
};

// The real library, opened at the first call; nullptr when none is found
// (said once on stderr). The one a program opened and looked up through
// the dlsym layer (nvrtc_claim.h), else the one its search finds (where it
// looks: real_nvrtc.cpp).
const Real* real();

// Notes the code that called one of the stand-in's functions (its return
// address), before real(): the first caller's search path (its RPATH,
// LD_LIBRARY_PATH, its RUNPATH) is where the program would have found the
// real library, so it is looked at first. Later callers change nothing.
// Called by the functions a program can call first (those that take no
// program: a program comes from nvrtcCreateProgram or __nvrtcCPEx, which
// has found the real library by then).
void note_caller(const void* return_address);

}  // namespace kcache::layer
