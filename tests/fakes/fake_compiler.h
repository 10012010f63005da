// A compiler for tests: deterministic output derived from the request,
// counts its compiles, can fail on demand or take time, and can hold its
// compiles at a gate so that a test waits on real events ("a compile has
// started", "N compiles run at once") instead of sleeping.
#pragma once

#include <kcache/compiler.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace kcache::testing {

class FakeCompiler final : public Compiler {
 public:
  explicit FakeCompiler(std::string version = "1.0") {
    identity_ = {"fake", "fake-compiler", std::move(version)};
  }

  const CompilerIdentity& identity() const override { return identity_; }
  std::string library() const override { return library_path; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) return Target{"fake_arch", "", 4};
    if (requested.arch == "unsupported") {
      return Status::invalid_argument("the fake compiler cannot target 'unsupported'");
    }
    return requested;
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& target) override {
    {
      std::unique_lock lock(mutex_);
      ++compiles;
      ++running_;
      changed_.notify_all();
      // Held compiles wait for open_gate(); the limit turns a cache that
      // never lets the test go on into a failed test, not a hung one.
      if (!changed_.wait_for(lock, kGateLimit, [&] { return gate_open_; })) gate_expired = true;
    }
    struct Finish {
      FakeCompiler& self;
      ~Finish() {
        std::lock_guard lock(self.mutex_);
        --self.running_;
        ++self.finished_;
        self.changed_.notify_all();
      }
    } finish{*this};
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    if (request.source.find("#error") != std::string::npos) {
      return Status::compile_error("fake compile failed", "fake.cl:1: error: #error found");
    }
    CompileOutput output;
    std::string text = "BIN[" + target.id() + "|" + request.options + "|" + request.source + "]";
    output.binary.assign(text.begin(), text.end());
    if (binary_size > output.binary.size()) output.binary.resize(binary_size, 0xAB);
    output.metadata.emplace_back(kFormatField, "fake");
    output.log = "fake log";
    return output;
  }

  // From now on every compile, once started, waits until open_gate().
  void close_gate() {
    std::lock_guard lock(mutex_);
    gate_open_ = false;
  }
  void open_gate() {
    std::lock_guard lock(mutex_);
    gate_open_ = true;
    changed_.notify_all();
  }
  // Waits until `n` compiles are running at once (started, not returned);
  // false when that did not happen within `limit`.
  bool wait_until_running(int n, std::chrono::milliseconds limit = kWaitLimit) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, limit, [&] { return running_ >= n; });
  }
  // Compiles that have returned.
  int finished() {
    std::lock_guard lock(mutex_);
    return finished_;
  }

  std::atomic<int> compiles{0};  // compiles started
  std::chrono::milliseconds delay{0};
  std::size_t binary_size = 0;
  // What library() says (empty: none, as a backend that loads no library).
  std::string library_path;
  // A held compile went on without open_gate(), after kGateLimit.
  std::atomic<bool> gate_expired{false};

  // Generous: only a broken cache (or a hung test) ever waits this long.
  static constexpr std::chrono::milliseconds kWaitLimit{30'000};
  static constexpr std::chrono::milliseconds kGateLimit{60'000};

 private:
  CompilerIdentity identity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool gate_open_ = true;
  int running_ = 0;
  int finished_ = 0;
};

}  // namespace kcache::testing
