// read_package_info (kcache/package.h): what `kcache info PKG` and
// `kcache verify PKG` show.
#include <kcache/package.h>

#include "env/trusted_path.h"
#include "format/entry.h"
#include "format/kdb_file.h"
#include "sign/key_file.h"
#include "store/system/package_fit.h"
#include "store/system/trusted_keys.h"

namespace kcache {

bool starts_as_package(std::span<const std::uint8_t> head) { return has_kdb_magic(head); }

Result<PackageInfo> read_package_info(const std::string& path, bool check_entries,
                                      const std::vector<std::string>& trusted_keys) {
  const Env& env = Env::posix();
  PackageInfo info;
  info.path = path;
  info.untrusted = untrusted_reason(path, env).value_or("");
  auto kdb = KdbReader::open(path, env);
  if (!kdb) return kdb.status();
  info.format_version = kKdbFormatVersion;  // open refuses any other
  info.kernels = (*kdb)->slots().size();
  info.metadata = (*kdb)->metadata();
  if ((*kdb)->is_signed()) info.signer = key_id(*(*kdb)->signer_key());
  const auto signature = signature_failure(**kdb);  // verified once
  if (signature) info.signature_problem = signature->why;
  if (!trusted_keys.empty()) {
    info.refusal = TrustedKeys::load(trusted_keys, env).refusal(**kdb).value_or("");
  } else if (!info.untrusted.empty()) {
    info.refusal = refusal_words(info.untrusted);
  } else if (signature && signature->checked) {
    info.refusal = signature->why;  // the system tier refuses it too
  }
  if (check_entries) {
    for (const auto& slot : (*kdb)->slots()) {
      auto bytes = (*kdb)->read(slot);
      if (!bytes) return bytes.status();
      if (auto entry = decode_package_entry(**kdb, slot, *bytes); !entry) {
        ++info.bad_entries;
        info.bad_entry_problems.emplace_back(slot.key.hex(), entry.status().message());
        if (entry.status().message() != kNotAsSigned) continue;
        ++info.entries_not_as_signed;
        // Under keys the system tier refuses such a package whole, as it
        // says: "trusted" would not be what it does.
        if (!trusted_keys.empty() && info.refusal.empty()) {
          info.refusal = "it was altered after it was signed (" + std::string(kNotAsSigned) + ")";
        }
      }
    }
  }
  return info;
}

std::string package_unfit_reason(const PackageInfo& info, const std::string& db,
                                 const CompilerIdentity& compiler) {
  return unfit_reason(info.metadata, db, compiler).value_or("");
}

}  // namespace kcache
