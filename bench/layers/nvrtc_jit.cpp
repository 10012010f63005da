// A JIT as CuPy's: loads NVRTC by soname (dlopen, dlsym) and compiles
// KERNELS distinct kernels to CUBIN (templated elementwise, a reduction
// with a name expression, an in-memory header), reading each CUBIN and
// lowered name. Prints the time its compiles took and a digest of what
// they gave, so runs under the NVRTC shim can be told equal
// (bench/layers/nvrtc_shim.sh runs it without and under the shim).
//
// Usage: nvrtc_jit SONAME ARCH [KERNELS]   e.g. libnvrtc.so.13 sm_90 40
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

template <class F>
F symbol(void* handle, const char* name) {
  auto* f = reinterpret_cast<F>(::dlsym(handle, name));
  if (f == nullptr) {
    std::fprintf(stderr, "no %s\n", name);
    std::exit(1);
  }
  return f;
}

const char* kHeader =
    "#pragma once\ntemplate <typename T> __device__ T twice(T x) { return x + x; }\n";

std::string source_of(int i) {
  return "#include \"jit_common.h\"\n"
         "template <typename T> __global__ void elementwise(T* out, const T* a, const T* b, int n) "
         "{\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) out[i] = twice(a[i]) * b[i] + T(" +
         std::to_string(i) +
         ");\n}\n"
         "template <int BLOCK> __global__ void reduce(const float* in, float* out, int n) {\n"
         "  __shared__ float part[BLOCK];\n"
         "  float s = 0; for (int i = threadIdx.x; i < n; i += BLOCK) s += in[i] * " +
         std::to_string(i + 1) +
         ".0f;\n"
         "  part[threadIdx.x] = s; __syncthreads();\n"
         "  for (int w = BLOCK / 2; w > 0; w /= 2) { if (threadIdx.x < w) part[threadIdx.x] += "
         "part[threadIdx.x + w]; __syncthreads(); }\n"
         "  if (threadIdx.x == 0) *out = part[0];\n}\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: nvrtc_jit SONAME ARCH [KERNELS]\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  void* nvrtc = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (nvrtc == nullptr) {
    std::fprintf(stderr, "no %s: %s\n", argv[1], ::dlerror());
    return 125;
  }
  auto create =
      symbol<nvrtcResult (*)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                             const char* const*)>(nvrtc, "nvrtcCreateProgram");
  auto add = symbol<nvrtcResult (*)(nvrtcProgram, const char*)>(nvrtc, "nvrtcAddNameExpression");
  auto compile =
      symbol<nvrtcResult (*)(nvrtcProgram, int, const char* const*)>(nvrtc, "nvrtcCompileProgram");
  auto cubin_size = symbol<nvrtcResult (*)(nvrtcProgram, std::size_t*)>(nvrtc, "nvrtcGetCUBINSize");
  auto cubin = symbol<nvrtcResult (*)(nvrtcProgram, char*)>(nvrtc, "nvrtcGetCUBIN");
  auto lowered = symbol<nvrtcResult (*)(nvrtcProgram, const char*, const char**)>(
      nvrtc, "nvrtcGetLoweredName");
  auto destroy = symbol<nvrtcResult (*)(nvrtcProgram*)>(nvrtc, "nvrtcDestroyProgram");
  const auto loaded = std::chrono::steady_clock::now();

  const int kernels = argc > 3 ? std::atoi(argv[3]) : 40;
  const std::string arch = std::string("-arch=") + argv[2];
  std::uint64_t digest = 1469598103934665603ULL;
  for (int i = 0; i < kernels; ++i) {
    const std::string source = source_of(i);
    const char* header_names[] = {"jit_common.h"};
    nvrtcProgram program = nullptr;
    if (create(&program, source.c_str(), "", 1, &kHeader, header_names) != 0) return 1;
    const char* expressions[] = {"elementwise<float>", "reduce<256>"};
    for (const char* e : expressions) add(program, e);
    const char* options[] = {arch.c_str(), "--std=c++17", "-DCUPY_LIKE=1"};
    if (compile(program, 3, options) != 0) {
      std::fprintf(stderr, "kernel %d did not compile\n", i);
      return 1;
    }
    std::size_t size = 0;
    cubin_size(program, &size);
    std::string bytes(size, '\0');
    cubin(program, bytes.data());
    for (char c : bytes) digest = (digest ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    for (const char* e : expressions) {
      const char* name = nullptr;
      lowered(program, e, &name);
      for (const char* c = name; c && *c; ++c) digest = (digest ^ *c) * 1099511628211ULL;
    }
    destroy(&program);
  }
  const auto done = std::chrono::steady_clock::now();
  auto ms = [](auto from, auto to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  std::printf("kernels %d load_ms %.1f compile_ms %.1f per_kernel_ms %.3f digest %016llx\n",
              kernels, ms(start, loaded), ms(loaded, done), ms(loaded, done) / kernels,
              static_cast<unsigned long long>(digest));
  return 0;
}
