// Whether the system tier uses a package file for who could have written
// it and who signed it. Trusted as far as its file (ssh's StrictModes,
// env/trusted_path.h) unless keys are configured: a package another user
// could write is refused. With trusted keys (KCACHE_TRUSTED_KEYS,
// trusted_keys.h) its signature decides, wherever it lies. A refusal is
// said once, in the words `kcache verify` uses too.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/log.h"
#include "env/env.h"
#include "format/kdb_file.h"
#include "store/system/trusted_keys.h"

namespace kcache {

class PackageTrust {
 public:
  // `key_paths`: the trusted keys' files or folders (KCACHE_TRUSTED_KEYS).
  PackageTrust(std::vector<std::string> key_paths, const Env& env, const Logger& log);

  // The keys packages must be signed with, read on first use; each key
  // file that cannot be used is said once.
  const TrustedKeys& keys() const;

  // Whether the package at `path` is refused before it is opened: another
  // user could have written it and no keys are configured. Said once.
  bool refuses_unopened(const std::string& path) const;

  // How the package `kdb`, opened from `path`, is used.
  struct Admission {
    bool used = false;  // false: refused, and said once
    // Under keys, its entries are compared with the digests they were
    // signed with: on every read when others could have written the file.
    bool check_digests = false;
    bool check_every_read = false;
  };
  Admission admit_opened(const std::string& path, const KdbReader& kdb) const;

  // For verify, why the package at `path` is not used for its owner or
  // mode ("not used: ..."); nullopt when it is, or when keys are
  // configured (its signature decides).
  std::optional<std::string> owner_refusal(const std::string& path) const;
  // For verify, why `kdb` is not used for its signature ("not used: ...");
  // nullopt when it is. A signature is checked whether or not keys are
  // trusted: an altered signed package is a problem either way.
  std::optional<std::string> signature_refusal(const KdbReader& kdb) const;

 private:
  // Why another user could have written the package `kdb` has open at
  // `path`: the rule applied to the file now at `path`, which must be the
  // one opened.
  std::optional<std::string> owner_problem_of_opened(const std::string& path,
                                                     const KdbReader& kdb) const;
  // Says once that the package at `path` is refused for `reason`.
  void warn_untrusted(const std::string& path, const std::string& reason) const;

  const std::vector<std::string> key_paths_;
  const Env& env_;
  const Logger& log_;
  mutable std::once_flag keys_loaded_;
  mutable TrustedKeys keys_;  // written once, under keys_loaded_
};

}  // namespace kcache
