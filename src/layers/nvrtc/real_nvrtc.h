// The real libnvrtc behind the NVRTC shim's stand-in: found by path (the
// stand-in has its soname) and opened once; its entry points, null where
// it has none.
#pragma once

#include <cstddef>
#include <string>

// nvrtc.h's C ABI, written out: kcache builds without the CUDA toolkit.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

namespace kcache::layer {

// The real library's entry points (null where it has none).
struct Real {
  const char* (*GetErrorString)(nvrtcResult) = nullptr;
  nvrtcResult (*Version)(int*, int*) = nullptr;
  nvrtcResult (*GetNumSupportedArchs)(int*) = nullptr;
  nvrtcResult (*GetSupportedArchs)(int*) = nullptr;
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*) = nullptr;
  nvrtcResult (*DestroyProgram)(nvrtcProgram*) = nullptr;
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*) = nullptr;
  nvrtcResult (*GetPTXSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetPTX)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetNVVMSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetNVVM)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetLTOIRSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetLTOIR)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetOptiXIRSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetOptiXIR)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*) = nullptr;
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char*) = nullptr;
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char*, const char**) = nullptr;
  nvrtcResult (*GetPCHHeapSize)(std::size_t*) = nullptr;
  nvrtcResult (*SetPCHHeapSize)(std::size_t) = nullptr;
  nvrtcResult (*GetPCHCreateStatus)(nvrtcProgram) = nullptr;
  nvrtcResult (*GetPCHHeapSizeRequired)(nvrtcProgram, std::size_t*) = nullptr;
  nvrtcResult (*SetFlowCallback)(nvrtcProgram, int (*)(void*, void*), void*) = nullptr;
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
