#include "key/key_prefixes.h"

#include <mutex>

namespace kcache {
namespace {

// Every field, the options first (what differs most often between two
// requests of one program).
bool same_inputs(const CompilerInputs& a, const CompilerInputs& b) {
  return a.dialect == b.dialect && a.leading_options == b.leading_options &&
         a.trailing_options == b.trailing_options && a.toolkit_dirs == b.toolkit_dirs &&
         a.system_dirs == b.system_dirs && a.environment == b.environment &&
         a.harmless_options == b.harmless_options &&
         a.owns_unfound_headers == b.owns_unfound_headers &&
         a.one_option_string == b.one_option_string;
}

}  // namespace

bool KeyPrefixes::Kept::matches(const CompilerIdentity& c, const CompilerInputs& i, const Target& t,
                                std::string_view o, const std::vector<std::string>& dirs) const {
  return options == o && t.arch == arch && t.features == features && c.id == compiler.id &&
         c.version == compiler.version && c.backend == compiler.backend && dirs == include_dirs &&
         same_inputs(i, inputs);
}

bool KeyPrefixes::append(const CompilerIdentity& compiler, const CompilerInputs& inputs,
                         const Target& target, std::string_view options,
                         const std::vector<std::string>& include_dirs, std::string& text) const {
  ReaderLock lock(mutex_);
  for (const auto& kept : kept_) {
    if (kept->matches(compiler, inputs, target, options, include_dirs)) {
      text.append(kept->prefix);
      return true;
    }
  }
  return false;
}

void KeyPrefixes::keep(const CompilerIdentity& compiler, const CompilerInputs& inputs,
                       const Target& target, std::string_view options,
                       const std::vector<std::string>& include_dirs, std::string prefix) {
  auto kept =
      std::make_shared<const Kept>(Kept{compiler, inputs, target.arch, target.features,
                                        std::string(options), include_dirs, std::move(prefix)});
  WriterLock lock(mutex_);
  for (const auto& held : kept_) {  // another thread kept it meanwhile
    if (held->matches(compiler, inputs, target, options, include_dirs)) return;
  }
  if (kept_.size() < kLimit) {
    kept_.push_back(std::move(kept));
    return;
  }
  kept_[next_] = std::move(kept);
  next_ = (next_ + 1) % kLimit;
}

}  // namespace kcache
