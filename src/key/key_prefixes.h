// The key text's first fields (schema, compiler, target, environment,
// options, include folders) kept by what they were derived from, for
// requests that read no file (design.md §1.7, "Keying fast").
//
// A program asks for many kernels with one option set and one compiler;
// parsing the same options three times (the request's, the compiler's
// leading and trailing ones) and writing the same fields again cost about
// half of deriving such a key. A prefix is kept only once the options were
// found to need no search (no -include, no -imacros, no include folder
// from the compiler, no -D testing for a header), so a request that finds
// one and whose source names no file keys as the full derivation would,
// byte for byte: the prefix is found by comparing every input it was made
// from, never by a hash alone.
#pragma once

#include <kcache/compiler.h>
#include <kcache/key.h>

#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace kcache {

class KeyPrefixes {
 public:
  // Appends to `text` the prefix kept for these inputs and returns true,
  // or returns false (and leaves `text` alone) when none is kept.
  bool append(const CompilerIdentity& compiler, const CompilerInputs& inputs, const Target& target,
              std::string_view options, const std::vector<std::string>& include_dirs,
              std::string& text) const;

  // Keeps `prefix` for these inputs (the oldest goes when kLimit are kept).
  void keep(const CompilerIdentity& compiler, const CompilerInputs& inputs, const Target& target,
            std::string_view options, const std::vector<std::string>& include_dirs,
            std::string prefix);

  // Option sets a process keeps: a few per compiler in practice.
  static constexpr std::size_t kLimit = 32;

 private:
  struct Kept {
    CompilerIdentity compiler;
    CompilerInputs inputs;
    std::string arch;
    std::string features;
    std::string options;
    std::vector<std::string> include_dirs;
    std::string prefix;

    bool matches(const CompilerIdentity& c, const CompilerInputs& i, const Target& t,
                 std::string_view o, const std::vector<std::string>& dirs) const;
  };

  mutable SharedMutex mutex_;
  std::vector<std::shared_ptr<const Kept>> kept_ GUARDED_BY(mutex_);
  std::size_t next_ GUARDED_BY(mutex_) = 0;  // where the next one goes once full
};

}  // namespace kcache
