#include "store/system/trusted_keys.h"

#include <algorithm>
#include <filesystem>

#include "env/trusted_path.h"
#include "sign/ed25519.h"
#include "sign/key_file.h"

namespace kcache {
namespace {

void add_key_file(const std::string& named, const Env& env, std::vector<KdbPublicKey>& keys,
                  std::vector<std::string>& problems) {
  // A link names the file it points to, whose folders are then checked.
  std::error_code error;
  const auto resolved = std::filesystem::canonical(named, error);
  const std::string path = error ? named : resolved.string();
  auto key = read_public_key(path, env);
  if (!key) {
    problems.push_back("Trusted key file " + named + " is not used: " + key.status().message());
    return;
  }
  // Read first, then checked: the file exists now, so its folder is
  // checked too (one created after a check of an absent file would not be).
  // Through the links that name it: whoever owns one chooses the key.
  if (auto reason = untrusted_reason_through_links(named, env)) {
    problems.push_back("Trusted key file " + named +
                       " is not used: another user could have written it (" + *reason + ")");
    return;
  }
  if (std::find(keys.begin(), keys.end(), *key) == keys.end()) keys.push_back(*key);
}

}  // namespace

TrustedKeys TrustedKeys::load(const std::vector<std::string>& paths, const Env& env) {
  TrustedKeys trusted;
  trusted.configured_ = !paths.empty();
  for (const auto& path : paths) {
    if (path.empty()) {
      trusted.problems_.push_back(
          "The trusted_keys setting (KCACHE_TRUSTED_KEYS) is set but names no key file; every "
          "package is refused until it names one");
      continue;
    }
    if (!env.is_dir(path)) {
      add_key_file(path, env, trusted.keys_, trusted.problems_);
      continue;
    }
    if (auto reason = untrusted_reason(path, env)) {
      trusted.problems_.push_back("Trusted key folder " + path +
                                  " is not used: another user could have written it (" + *reason +
                                  ")");
      continue;
    }
    auto entries = env.list_dir(path);
    if (!entries) {
      trusted.problems_.push_back("Trusted key folder " + path +
                                  " cannot be read: " + entries.status().message());
      continue;
    }
    std::vector<std::string> names;
    for (const auto& entry : *entries) {
      if (entry.name.size() > 4 && entry.name.ends_with(".pub")) names.push_back(entry.name);
    }
    std::sort(names.begin(), names.end());
    if (names.empty())
      trusted.problems_.push_back("Trusted key folder " + path + " has no .pub file");
    for (const auto& name : names)
      add_key_file(path + "/" + name, env, trusted.keys_, trusted.problems_);
  }
  return trusted;
}

std::optional<std::string> TrustedKeys::refusal(const KdbReader& kdb) const {
  if (!kdb.is_signed())
    return "it is not signed, and only packages signed by a trusted key are used";
  const KdbPublicKey& signer = *kdb.signer_key();
  if (std::find(keys_.begin(), keys_.end(), signer) == keys_.end()) {
    // Not "not a trusted key" when no key could be read: it may be the
    // very key meant (fail closed, but say why).
    return "it is signed by key " + key_id(signer) +
           (keys_.empty() ? ", and no trusted key could be used" : ", which is not a trusted key");
  }
  return signature_problem(kdb);
}

std::optional<SignatureFailure> signature_failure(const KdbReader& kdb) {
  if (!kdb.is_signed()) return std::nullopt;
  auto holds = ed25519_verify(kdb.signed_message(), *kdb.signature(), *kdb.signer_key());
  if (!holds) {
    return SignatureFailure{"its signature cannot be checked: " + holds.status().message(), false};
  }
  if (!*holds) {
    return SignatureFailure{
        "its signature does not match its contents (altered after signing, or forged)", true};
  }
  return std::nullopt;
}

std::optional<std::string> signature_problem(const KdbReader& kdb) {
  auto failure = signature_failure(kdb);
  if (!failure) return std::nullopt;
  return failure->why;
}

std::optional<std::string> package_refusal(const KdbReader& kdb,
                                           const std::optional<std::string>& untrusted,
                                           const TrustedKeys& keys) {
  if (keys.configured()) return keys.refusal(kdb);
  if (untrusted) return refusal_words(*untrusted);
  if (auto failure = signature_failure(kdb); failure && failure->checked) return failure->why;
  return std::nullopt;
}

bool matches_signed_digest(const KdbReader& kdb, const KdbSlot& slot,
                           std::span<const std::uint8_t> bytes) {
  const Sha256* digest = kdb.entry_digest(slot);
  return digest == nullptr || sha256(bytes) == *digest;
}

Result<Entry> decode_package_entry(const KdbReader& kdb, const KdbSlot& slot,
                                   const ByteBuffer& bytes) {
  auto entry = decode_entry(bytes, &slot.key);
  if (entry && !matches_signed_digest(kdb, slot, bytes.span())) {
    return Status::corruption(std::string(kNotAsSigned));
  }
  return entry;
}

}  // namespace kcache
