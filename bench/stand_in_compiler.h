// A compiler that compiles instantly, with another compiler's rules (its
// dialect, search folders): only the cache's own work is timed. Its binary
// is `size` bytes, the source's first 64 first (distinct per source).
#pragma once

#include <kcache/cache.h>

#include <algorithm>
#include <string>
#include <utility>

namespace kcache::bench {

class StandIn final : public Compiler {
 public:
  StandIn(CompilerInputs inputs, const std::string& bench, std::size_t size)
      : inputs_(std::move(inputs)), size_(size) {
    identity_ = {"nvrtc", "stand-in", bench + " 1"};
  }
  const CompilerIdentity& identity() const override { return identity_; }
  const CompilerInputs& inputs() const override { return inputs_; }
  Result<Target> resolve_target(const Target& requested) const override { return requested; }
  Result<CompileOutput> compile(const KernelRequest& request, const Target&) override {
    CompileOutput output;
    output.binary.assign(size_, 0x5A);
    std::copy_n(request.source.begin(), std::min<std::size_t>(64, request.source.size()),
                output.binary.begin());
    return output;
  }

 private:
  CompilerIdentity identity_;
  CompilerInputs inputs_;
  std::size_t size_;
};

}  // namespace kcache::bench
