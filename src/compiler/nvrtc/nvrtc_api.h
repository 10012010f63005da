// NVRTC's C API as kcache calls it, written once for the "nvrtc" backend
// (nvrtc_compiler.cpp) and the NVRTC shim (layers/nvrtc/real_nvrtc.cpp):
// nvrtc.h's types and result codes, the table of its functions, and where
// libnvrtc may be. Header-only: the shim links only libkcache's public ABI.
//
// nvrtc.h's few declarations are written out rather than included, so
// kcache builds on machines without the CUDA toolkit (the ABI is stable
// since CUDA 7).
#pragma once

#include <cstddef>
#include <type_traits>

#include "compiler/vendor_library.h"

// nvrtc.h's types and the result codes kcache uses, as nvrtc.h names them.
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
inline constexpr nvrtcResult NVRTC_SUCCESS = 0;
inline constexpr nvrtcResult NVRTC_ERROR_INVALID_OPTION = 5;
inline constexpr nvrtcResult NVRTC_ERROR_COMPILATION = 6;
inline constexpr nvrtcResult NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION = 8;
inline constexpr nvrtcResult NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION = 9;
inline constexpr nvrtcResult NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID = 10;
inline constexpr nvrtcResult NVRTC_ERROR_INTERNAL_ERROR = 11;

namespace kcache {

// The entry points of one libnvrtc; null where it has none.
struct NvrtcFunctions {
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
};

// Calls visit(member, symbol, in_every) for each function of the table, in
// its order; `in_every`: every libnvrtc kcache knows (11.2 to 13) has it,
// so the backend may rely on it (the others came and went: NVVM is gone
// from 13, LTO IR and OptiX IR came with 12.0, PCH and the flow callback
// with 12.8).
template <class Visit>
void for_each_nvrtc_function(Visit&& visit) {
  using F = NvrtcFunctions;
  visit(&F::GetErrorString, "nvrtcGetErrorString", true);
  visit(&F::Version, "nvrtcVersion", true);
  visit(&F::GetNumSupportedArchs, "nvrtcGetNumSupportedArchs", true);
  visit(&F::GetSupportedArchs, "nvrtcGetSupportedArchs", true);
  visit(&F::CreateProgram, "nvrtcCreateProgram", true);
  visit(&F::DestroyProgram, "nvrtcDestroyProgram", true);
  visit(&F::CompileProgram, "nvrtcCompileProgram", true);
  visit(&F::GetPTXSize, "nvrtcGetPTXSize", true);
  visit(&F::GetPTX, "nvrtcGetPTX", true);
  visit(&F::GetCUBINSize, "nvrtcGetCUBINSize", true);
  visit(&F::GetCUBIN, "nvrtcGetCUBIN", true);
  visit(&F::GetNVVMSize, "nvrtcGetNVVMSize", false);
  visit(&F::GetNVVM, "nvrtcGetNVVM", false);
  visit(&F::GetLTOIRSize, "nvrtcGetLTOIRSize", false);
  visit(&F::GetLTOIR, "nvrtcGetLTOIR", false);
  visit(&F::GetOptiXIRSize, "nvrtcGetOptiXIRSize", false);
  visit(&F::GetOptiXIR, "nvrtcGetOptiXIR", false);
  visit(&F::GetProgramLogSize, "nvrtcGetProgramLogSize", true);
  visit(&F::GetProgramLog, "nvrtcGetProgramLog", true);
  visit(&F::AddNameExpression, "nvrtcAddNameExpression", true);
  visit(&F::GetLoweredName, "nvrtcGetLoweredName", true);
  visit(&F::GetPCHHeapSize, "nvrtcGetPCHHeapSize", false);
  visit(&F::SetPCHHeapSize, "nvrtcSetPCHHeapSize", false);
  visit(&F::GetPCHCreateStatus, "nvrtcGetPCHCreateStatus", false);
  visit(&F::GetPCHHeapSizeRequired, "nvrtcGetPCHHeapSizeRequired", false);
  visit(&F::SetFlowCallback, "nvrtcSetFlowCallback", false);
}

// Fills `table` with find(symbol) (the address, or null) for each of its
// functions. Returns the first function every libnvrtc has (see above)
// that find did not give, or nullptr when it gave them all.
template <class Find>
const char* bind_nvrtc_functions(NvrtcFunctions& table, Find&& find) {
  const char* missing = nullptr;
  for_each_nvrtc_function([&](auto member, const char* symbol, bool in_every) {
    auto& function = table.*member;
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(find(symbol));
    if (function == nullptr && in_every && missing == nullptr) missing = symbol;
  });
  return missing;
}

// libnvrtc's sonames, newest first, then the unversioned name, and the
// toolkit folders it lies in: $CUDA_HOME/lib64, $CUDA_PATH/lib64, then
// /usr/local/cuda/lib64.
inline constexpr const char* kNvrtcSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                                "libnvrtc.so.11.2", "libnvrtc.so"};
inline constexpr const char* kCudaRootVariables[] = {"CUDA_HOME", "CUDA_PATH"};
inline constexpr VendorToolkit kCudaToolkit{kNvrtcSonames, kCudaRootVariables, "/usr/local/cuda",
                                            "lib64"};

}  // namespace kcache
