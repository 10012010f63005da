// What is known of one package and the compilers asked of it: whether it
// serves each (package_fit.h: decided once per compiler, from its
// metadata), for a few identities, newest decided first, and whether one it
// does not serve was said. Thread-safe: lookups share the package.
#pragma once

#include <kcache/compiler.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/field_text.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"

namespace kcache {

class CompilerFits {
 public:
  // Whether the package serves `compiler`; when it does not and that was
  // not said yet, why not (in words for a warning), and it counts as said
  // from then on.
  struct Answer {
    bool serves = true;
    std::optional<std::string> unsaid_reason;
  };
  // For the package with `metadata`, found as database `db`.
  Answer ask(const Fields& metadata, std::string_view db, const CompilerIdentity& compiler) const
      EXCLUDES(mutex_);
  // Whether it serves `compiler`, said or not.
  bool serves(const Fields& metadata, std::string_view db, const CompilerIdentity& compiler) const
      EXCLUDES(mutex_);

 private:
  // Whether the package serves a compiler: why not, and whether that was
  // said.
  struct CompilerFit {
    CompilerIdentity identity;
    std::optional<std::string> unfit;
    bool said = false;
  };
  // What is known of `compiler`, decided now when nothing was.
  CompilerFit& fit_locked(const Fields& metadata, std::string_view db,
                          const CompilerIdentity& compiler) const REQUIRES(mutex_);

  mutable Mutex mutex_;
  mutable std::vector<CompilerFit> fits_ GUARDED_BY(mutex_);  // newest decided first
};

}  // namespace kcache
