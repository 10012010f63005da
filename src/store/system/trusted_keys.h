// The public keys packages must be signed with (KCACHE_TRUSTED_KEYS), and
// the rule a package is held to when there are some: signed by one of them,
// its signature over header, index, metadata and entry digests holding.
// Each key file is held to the ownership rule of packages (trusted_path.h):
// a key another user could have written would let that user sign.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "env/env.h"
#include "format/entry.h"
#include "format/kdb_file.h"

namespace kcache {

class TrustedKeys {
 public:
  // Reads every key named in `paths`: .pub files, or folders whose *.pub
  // files are read. What cannot be used is listed in problems(), one
  // message each; the other keys still count.
  static TrustedKeys load(const std::vector<std::string>& paths, const Env& env);

  // Whether keys were asked for at all (then unsigned packages are refused,
  // even when no key could be read).
  [[nodiscard]] bool configured() const { return configured_; }
  [[nodiscard]] const std::vector<std::string>& problems() const { return problems_; }
  [[nodiscard]] const std::vector<KdbPublicKey>& keys() const { return keys_; }

  // Why `kdb` is not accepted under these keys, in words for a warning
  // ("it is not signed", "its signature does not match its contents");
  // nullopt when it is signed by one of them and the signature holds.
  [[nodiscard]] std::optional<std::string> refusal(const KdbReader& kdb) const;

 private:
  bool configured_ = false;
  std::vector<KdbPublicKey> keys_;
  std::vector<std::string> problems_;
};

// Whether the signature `kdb` carries is its signer's over its contents:
// nullopt when it holds (or the package is unsigned), else why not.
std::optional<std::string> signature_problem(const KdbReader& kdb);

// The same with whether it was checked: `checked` is false when it could
// not be here (no libsodium). A package is held to a checked failure when
// no key is asked for. One Ed25519 verification.
struct SignatureFailure {
  std::string why;
  bool checked = false;
};
std::optional<SignatureFailure> signature_failure(const KdbReader& kdb);

// Why the system tier refuses the package `kdb` (as `kcache info` says
// it: PackageInfo::refusal), opened from a file another user could have
// written for `untrusted` (untrusted_reason; nullopt when no one could):
// under configured `keys`, not signed by one of them (or the signature
// does not hold); without, for its file's owner or mode, or for a
// signature that was checked and does not hold. nullopt when it is used.
std::optional<std::string> package_refusal(const KdbReader& kdb,
                                           const std::optional<std::string>& untrusted,
                                           const TrustedKeys& keys);

// Whether `bytes`, read from `slot`, are what the package was signed with
// (true for an unsigned package).
bool matches_signed_digest(const KdbReader& kdb, const KdbSlot& slot,
                           std::span<const std::uint8_t> bytes);

// What an entry that is not as signed is called.
inline constexpr std::string_view kNotAsSigned =
    "the entry is not the one its package was signed with";

// The entry `bytes` (read from `slot` of `kdb`) hold, with every check a
// package entry gets: its checksum and key (decode_entry), then, in a
// signed package, the digest it was signed with (kCorruption).
Result<Entry> decode_package_entry(const KdbReader& kdb, const KdbSlot& slot,
                                   const ByteBuffer& bytes);

}  // namespace kcache
