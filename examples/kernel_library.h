// The demo's kernel library: OpenCL kernels generated at run time, the way
// MIOpen generates its solvers' kernels.
//
// Each `KernelSpec` is one variant of one family (tiled GEMM, direct
// convolution, reduction, softmax): its OpenCL C source is generated as text
// with the tile sizes, work-group sizes and problem shape baked in, so every
// variant is a distinct program and a distinct cache key. A spec also carries
// the problem it is tested on (its arguments and launch geometry) and a CPU
// reference for the result.
//
// Nothing here touches OpenCL or kcache; the specs are plain data.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kcache_demo {

// The problem shapes every variant of a family is generated for and tested
// on; the CUDA library (cuda/cuda_kernel_library.h) generates its sources for
// the same ones. Small enough that all 39 kernels run in well under a second
// on a 2-core CPU, so the compile cost is what the demo shows.
inline constexpr int kGemmSize = 64;  // M = N = K
inline constexpr int kConvSize = 32;  // H = W
inline constexpr int kConvChannels = 4;
inline constexpr int kReduceCount = 16384;
inline constexpr int kSoftmaxRows = 32;

// One kernel argument, in order. Every kernel has exactly one output buffer,
// the one that is checked.
struct KernelArg {
  enum class Kind { kInput, kOutput, kInt };

  static KernelArg input(std::vector<float> values) {
    return {Kind::kInput, std::move(values), 0, 0};
  }
  static KernelArg output(std::size_t count) { return {Kind::kOutput, {}, count, 0}; }
  static KernelArg integer(int value) { return {Kind::kInt, {}, 0, value}; }

  Kind kind = Kind::kInt;
  std::vector<float> values;  // kInput: uploaded before the launch
  std::size_t count = 0;      // kOutput: floats read back after it
  int value = 0;              // kInt
};

// An NDRange launch; the local size always divides the global size.
struct Launch {
  unsigned dims = 1;
  std::array<std::size_t, 3> global{1, 1, 1};
  std::array<std::size_t, 3> local{1, 1, 1};
};

struct KernelSpec {
  std::string family;         // "gemm", "conv", "reduce", "softmax"
  std::string name;           // unique, also the OpenCL kernel name
  std::string source;         // OpenCL C 1.2, parameters baked in
  std::string build_options;  // given to clBuildProgram (and part of the key)
  std::vector<KernelArg> args;
  Launch launch;
  // The expected content of the output buffer, computed on the CPU (in
  // double where it accumulates) from the input args.
  std::function<std::vector<float>(const std::vector<KernelArg>& args)> reference;
  // An element is right when |got - want| <= tolerance * max(1, |want|).
  double tolerance = 1e-4;
};

// Every kernel of the library (39), in a stable order, grouped by family.
std::vector<KernelSpec> make_kernel_library();

// A subset for tests: the first two variants of each family (8 kernels), of
// this library or of its CUDA twin (cuda/cuda_kernel_library.h).
template <typename Spec>
std::vector<Spec> quick_subset(std::vector<Spec> library) {
  std::vector<Spec> subset;
  for (auto& spec : library) {
    const auto same_family = std::count_if(subset.begin(), subset.end(),
                                           [&](const Spec& s) { return s.family == spec.family; });
    if (same_family < 2) subset.push_back(std::move(spec));
  }
  return subset;
}

// Compares a result with the reference. Returns an empty string when every
// element is within tolerance, else a one-line description of the first
// mismatch and the count of bad elements.
std::string check_result(const std::vector<float>& got, const std::vector<float>& want,
                         double tolerance);

}  // namespace kcache_demo
