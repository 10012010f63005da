// What the benchmarks share: a temporary folder, per-operation timing with
// median and p90, `--name=value` arguments, and the kernel text and compiler
// identity that make key material look like a real PoCL request's.
#pragma once

#include <kcache/compiler.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kcache::bench {

using Clock = std::chrono::steady_clock;

inline double micros_since(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::micro>(end - start).count();
}

// Empties the CPU caches between timed passes, so that no pass starts with
// lines another pass left warm: writes one byte in each cache line of a
// buffer twice the largest cache the kernel reports (64 MiB when it
// reports none).
class CacheFlusher {
 public:
  CacheFlusher() : buffer_(2 * largest_cache()) {}
  void flush() {
    for (std::size_t at = 0; at < buffer_.size(); at += 64) ++buffer_[at];
    sink_ = sink_ + buffer_[buffer_.size() / 2];
  }

 private:
  static std::size_t largest_cache() {
    std::size_t largest = 32u << 20;
    for (int i = 0; i < 8; ++i) {
      const std::string path =
          "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size";
      std::FILE* file = std::fopen(path.c_str(), "r");
      if (file == nullptr) continue;
      unsigned long size = 0;
      char unit = 0;
      if (std::fscanf(file, "%lu%c", &size, &unit) >= 1) {
        if (unit == 'K') size <<= 10;
        if (unit == 'M') size <<= 20;
        largest = std::max<std::size_t>(largest, size);
      }
      std::fclose(file);
    }
    return largest;
  }
  std::vector<std::uint8_t> buffer_;
  volatile std::uint8_t sink_ = 0;
};

// A fresh folder under $TMPDIR (else /tmp), removed with everything in it.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + "XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror(("mkdtemp " + pattern).c_str());
      std::exit(1);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Median and p90 of per-operation times, in microseconds.
struct Summary {
  double median = 0;
  double p90 = 0;
  std::size_t count = 0;
};

inline Summary summarize(std::vector<double> samples) {
  Summary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  auto at = [&](double quantile) {
    auto index = static_cast<std::size_t>(quantile * static_cast<double>(samples.size() - 1));
    std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(index),
                     samples.end());
    return samples[index];
  };
  s.median = at(0.5);
  s.p90 = at(0.9);
  return s;
}

// "--name=value" arguments; anything else is an error the caller reports.
class Args {
 public:
  Args(int argc, char** argv) : argv_(argv + 1, argv + argc) {}

  [[nodiscard]] std::optional<std::string> get(std::string_view name) const {
    const std::string prefix = "--" + std::string(name) + "=";
    for (const auto& arg : argv_) {
      if (arg.starts_with(prefix)) return arg.substr(prefix.size());
    }
    return std::nullopt;
  }
  [[nodiscard]] bool flag(std::string_view name) const {
    return std::find(argv_.begin(), argv_.end(), "--" + std::string(name)) != argv_.end();
  }
  [[nodiscard]] double number(std::string_view name, double fallback) const {
    auto value = get(name);
    return value ? std::strtod(value->c_str(), nullptr) : fallback;
  }
  // The first argument not among `known` (flags or "--name=" prefixes).
  [[nodiscard]] std::optional<std::string> unknown(
      const std::vector<std::string_view>& known) const {
    for (const auto& arg : argv_) {
      const std::string_view name =
          std::string_view(arg).substr(0, std::min(arg.find('='), arg.size()));
      if (std::find(known.begin(), known.end(), name) == known.end()) return arg;
    }
    return std::nullopt;
  }

 private:
  std::vector<std::string> argv_;
};

// A tiled GEMM in OpenCL C, about 1.5 KB: the size of source a real
// request hashes. TILE and the other macros come from the options.
inline constexpr std::string_view kGemmSource = R"CL(
#ifndef TILE
#define TILE 16
#endif
#ifndef ALPHA
#define ALPHA 1.0f
#endif
// C = ALPHA * A * B + C for row-major square matrices of side n.
__kernel void gemm(const int n, __global const float* restrict a,
                   __global const float* restrict b, __global float* restrict c) {
  __local float a_tile[TILE][TILE];
  __local float b_tile[TILE][TILE];
  const int row = get_global_id(1);
  const int col = get_global_id(0);
  const int local_row = get_local_id(1);
  const int local_col = get_local_id(0);
  float sum = 0.0f;
  for (int t = 0; t < n / TILE; ++t) {
    a_tile[local_row][local_col] = a[row * n + t * TILE + local_col];
    b_tile[local_row][local_col] = b[(t * TILE + local_row) * n + col];
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll
    for (int k = 0; k < TILE; ++k) {
      sum = fma(a_tile[local_row][k], b_tile[k][local_col], sum);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  c[row * n + col] = ALPHA * sum + c[row * n + col];
}

// A second entry point, so the program has more than one kernel to build.
__kernel void scale(const int n, const float factor, __global float* restrict x) {
  const int i = get_global_id(0);
  if (i < n) x[i] = factor * x[i];
}
)CL";

// The identity the OpenCL backend reports for PoCL 3.1 on this machine
// (docs: ../shared/reference/baseline.md §2), so that fake requests carry
// key material of the real length.
inline CompilerIdentity pocl_like_identity() {
  return {"opencl", "Portable Computing Language | pthread-skylake-avx512-AMD EPYC | vendor 32902",
          "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, "
          "DISTRO, POCL_DEBUG | OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512 "
          "| driver 3.1+debian | OpenCL C 1.2 PoCL"};
}

}  // namespace kcache::bench
