// A backend whose compile's log is kept with the binary (metadata
// "build_log"), so that a drop-in layer answers a hit's log query as the
// compile did. Identity and inputs are the backend's: the key is the
// backend's key.
#pragma once

#include <kcache/compiler.h>

#include <memory>
#include <utility>

namespace kcache::layer {

class LoggedCompiler final : public Compiler {
 public:
  explicit LoggedCompiler(std::unique_ptr<Compiler> inner) : inner_(std::move(inner)) {}
  const CompilerIdentity& identity() const override { return inner_->identity(); }
  std::string library() const override { return inner_->library(); }
  bool stored_binary_serves(
      const KernelRequest& request,
      const std::vector<std::pair<std::string, std::string>>& metadata) const override {
    return inner_->stored_binary_serves(request, metadata);
  }
  const CompilerInputs& inputs() const override { return inner_->inputs(); }
  Result<Target> resolve_target(const Target& requested) const override {
    return inner_->resolve_target(requested);
  }
  Result<CompileOutput> compile(const KernelRequest& request, const Target& target) override {
    auto output = inner_->compile(request, target);
    if (output && !output->log.empty()) output->metadata.emplace_back(kBuildLogField, output->log);
    return output;
  }

 private:
  std::unique_ptr<Compiler> inner_;
};

}  // namespace kcache::layer
