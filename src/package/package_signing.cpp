// Signing packages (kcache/package.h): keygen, sign, the trusted keys.
#include <kcache/package.h>

#include "format/entry.h"
#include "format/kdb_file.h"
#include "sign/ed25519.h"
#include "sign/key_file.h"
#include "sign/package_signer.h"
#include "store/system/trusted_keys.h"

namespace kcache {

Result<std::string> generate_signing_key(const std::string& path, bool overwrite) {
  auto pair = ed25519_generate();
  if (!pair) return pair.status();
  if (Status s = write_key_pair(path, *pair, overwrite, Env::posix()); !s.is_ok()) return s;
  return key_id(pair->public_key);
}

Result<std::string> check_signing_key(const std::string& path) {
  auto signer = signer_from_key_file(path, Env::posix());
  if (!signer) return signer.status();
  return key_id(signer->public_key);
}

Result<std::string> sign_package(const std::string& path, const std::string& signing_key) {
  Env& env = Env::posix();
  auto signer = signer_from_key_file(signing_key, env);
  if (!signer) return signer.status();
  auto kdb = KdbReader::open(path, env);
  if (!kdb) return kdb.status();
  // A broken signature says the package was altered: not vouched for anew.
  if (auto problem = signature_problem(**kdb)) {
    return Status::corruption(path + ": " + *problem + "; not signed (make the package again)");
  }
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> entries;
  for (const auto& slot : (*kdb)->slots()) {
    auto bytes = (*kdb)->read(slot);
    if (!bytes) return bytes.status();
    // Only what was checked is vouched for.
    if (!decode_package_entry(**kdb, slot, *bytes)) {
      return Status::corruption(path + ": entry " + slot.key.hex() +
                                " fails its checks; not signed (make the package again)");
    }
    const auto span = bytes->span();
    entries.emplace_back(slot.key, std::vector<std::uint8_t>(span.begin(), span.end()));
  }
  if (Status s = write_kdb(env, path, entries, (*kdb)->metadata(), &*signer); !s.is_ok()) return s;
  return key_id(signer->public_key);
}

TrustedKeyList list_trusted_keys(const std::vector<std::string>& paths) {
  const Env& env = Env::posix();
  TrustedKeyList out;
  std::vector<std::string> there;
  for (const auto& path : paths) {
    if (!path.empty() && !env.exists(path)) {
      out.problems.push_back("Trusted key " + path + " does not exist");
      continue;
    }
    there.push_back(path);
  }
  if (there.empty() && !paths.empty()) return out;
  TrustedKeys keys = TrustedKeys::load(there, env);
  out.problems.insert(out.problems.end(), keys.problems().begin(), keys.problems().end());
  for (const auto& key : keys.keys()) out.ids.push_back(key_id(key));
  return out;
}

Result<std::vector<std::string>> read_trusted_keys(const std::vector<std::string>& paths) {
  const Env& env = Env::posix();
  for (const auto& path : paths) {
    if (!path.empty() && !env.exists(path)) {
      return Status::not_found("trusted key " + path + " does not exist");
    }
  }
  TrustedKeyList listed = list_trusted_keys(paths);
  if (!listed.problems.empty()) return Status::invalid_argument(listed.problems.front());
  return std::move(listed.ids);
}

}  // namespace kcache
