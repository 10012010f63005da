// The CUDA demo's kernel library: the OpenCL demo's kernel library
// (../kernel_library.h), written in CUDA C++.
//
// Every kernel here has an OpenCL twin of the same name, and takes from it
// its problem: the input values, the output size, the CPU reference and the
// tolerance. Only the source and the launch are CUDA's own, so the two demos
// run the same problems and check them the same way.
//
// Two ways to name a kernel are used, as CUDA libraries do:
//   gemm, conv       one template per family (`gemm_tiled<TS, WPT>`,
//                    `conv2d<KS, TX, TY>`) in one source; the variant is the
//                    name expression NVRTC instantiates and lowers, and the
//                    loader looks the lowered symbol up in the entry's
//                    metadata. One source, many kernels, one key each.
//   reduce, softmax  an extern "C" kernel per variant, its parameters baked
//                    into a generated source; the symbol is the name itself.
//
// Nothing here touches CUDA or a cache; the specs are plain data.
#pragma once

#include <kcache/status.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "kernel_library.h"

namespace kcache_demo {

struct CudaKernelSpec {
  std::string family;   // "gemm", "conv", "reduce", "softmax"
  std::string name;     // unique; the name of the OpenCL twin
  std::string source;   // CUDA C++, generated
  std::string options;  // NVRTC options (part of the key)
  // What to look up in the module: a name expression ("gemm_tiled<16, 4>")
  // for templates, the plain name for extern "C" kernels.
  std::string entry;
  // True when `entry` is a name expression given to NVRTC (and lowered);
  // false for extern "C" kernels, whose request names no kernel at all.
  bool name_expression = false;
  std::array<unsigned, 3> grid{1, 1, 1};   // blocks
  std::array<unsigned, 3> block{1, 1, 1};  // threads per block
  // The problem, from the OpenCL twin: args in kernel parameter order (one
  // output), the reference and the tolerance (see KernelSpec).
  std::vector<KernelArg> args;
  std::function<std::vector<float>(const std::vector<KernelArg>& args)> reference;
  double tolerance = 1e-4;
};

// Every kernel of the library (39, as in the OpenCL library), in a stable
// order, grouped by family. kInternal when a CUDA variant does not fit its
// OpenCL twin's problem (a bug in cuda_kernel_library.cpp, not a run-time
// condition). quick_subset (kernel_library.h) picks the first two of each
// family from it: both kinds of naming.
kcache::Result<std::vector<CudaKernelSpec>> make_cuda_kernel_library();

}  // namespace kcache_demo
