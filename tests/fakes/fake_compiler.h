// A compiler for tests: deterministic output derived from the request,
// counts its compiles, can fail on demand or take time.
#pragma once

#include <kcache/compiler.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kcache::testing {

class FakeCompiler final : public Compiler {
 public:
  explicit FakeCompiler(std::string version = "1.0") {
    identity_ = {"fake", "fake-compiler", std::move(version)};
  }

  const CompilerIdentity& identity() const override { return identity_; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) return Target{"fake_arch", "", 4};
    if (requested.arch == "unsupported") {
      return Status::invalid_argument("the fake compiler cannot target 'unsupported'");
    }
    return requested;
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& target) override {
    ++compiles;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (request.source.find("#error") != std::string::npos) {
      return Status::compile_error("fake compile failed", "fake.cl:1: error: #error found");
    }
    CompileOutput output;
    std::string text = "BIN[" + target.id() + "|" + request.options + "|" + request.source + "]";
    output.binary.assign(text.begin(), text.end());
    if (binary_size > output.binary.size()) output.binary.resize(binary_size, 0xAB);
    output.metadata.emplace_back("format", "fake");
    output.log = "fake log";
    return output;
  }

  std::atomic<int> compiles{0};
  std::chrono::milliseconds delay{0};
  std::size_t binary_size = 0;

 private:
  CompilerIdentity identity_;
};

}  // namespace kcache::testing
