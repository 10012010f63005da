// merge_packages (kcache/package.h): `kcache merge`.
#include <kcache/package.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "format/entry.h"
#include "format/kdb_file.h"
#include "package/package_metadata.h"
#include "sign/package_signer.h"
#include "store/system/package_fit.h"
#include "store/system/trusted_keys.h"

namespace kcache {
namespace {

std::string field(const Fields& fields, std::string_view name) {
  for (const auto& [key, value] : fields) {
    if (key == name) return value;
  }
  return {};
}

// Whether `entry` holds the binary the entry `kept` (encoded, already
// checked) holds: the metadata (when it was compiled, in how long) may
// differ between two packs of one kernel, the binary may not.
bool same_binary(const Entry& entry, const std::vector<std::uint8_t>& kept, const CacheKey& key) {
  auto first = decode_entry(ByteBuffer::copy_of(kept), &key, EntryCheck::kChecksumPassed);
  if (!first) return false;
  const auto a = entry.payload();
  const auto b = first->payload();
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

Result<MergeReport> merge_packages_reporting(const std::vector<std::string>& inputs,
                                             const std::string& output,
                                             const std::string& signing_key) {
  Env& env = const_cast<Env&>(Env::posix());
  if (inputs.empty()) return Status::invalid_argument("no package to merge");
  auto signer = optional_signer(signing_key, env);
  if (!signer) return signer.status();
  std::string db;
  std::map<CacheKey, std::size_t> seen;  // -> its index in entries
  std::set<std::string> compilers;
  std::set<std::string> features;
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> entries;
  MergeReport report;
  for (const auto& path : inputs) {
    auto kdb = KdbReader::open(path, env);
    if (!kdb) {
      const std::string& why = kdb.status().message();  // it may name the file itself
      return Status(kdb.status().code(), why.starts_with(path + " ") ? why : path + ": " + why);
    }
    if (auto problem = signature_problem(**kdb)) {
      return Status::corruption(path + ": " + *problem + "; not merged");
    }
    const std::string its_db = field((*kdb)->metadata(), "db");
    if (db.empty()) db = its_db;
    if (its_db.empty() || its_db != db) {
      return Status::invalid_argument(path + " is a package of '" + its_db + "', not of '" + db +
                                      "': only packages of one database are merged");
    }
    // A package of a key or entry format this kcache does not read is not
    // relabelled as one it does.
    if (auto unfit = unfit_reason((*kdb)->metadata(), its_db, CompilerIdentity{})) {
      return Status::invalid_argument(path + ": " + *unfit + "; not merged");
    }
    for (const auto& [name, value] : (*kdb)->metadata()) {
      if (name == "compiler") compilers.insert(value);
      if (name == "features") features.insert(value);
    }
    for (const auto& slot : (*kdb)->slots()) {
      auto bytes = (*kdb)->read(slot);
      if (!bytes) return Status(bytes.status().code(), path + ": " + bytes.status().message());
      auto entry = decode_package_entry(**kdb, slot, *bytes);
      auto kept = seen.find(slot.key);
      if (!entry) {  // left out: it fails its checks
        if (kept == seen.end()) ++report.left_out;
        continue;
      }
      if (kept != seen.end()) {  // the first copy stays; another binary is said
        if (!same_binary(*entry, entries[kept->second].second, slot.key) &&
            report.differing++ == 0) {
          report.first_differing = slot.key.hex() + " in " + path;
        }
        continue;
      }
      seen.emplace(slot.key, entries.size());
      const auto span = bytes->span();
      entries.emplace_back(slot.key, std::vector<std::uint8_t>(span.begin(), span.end()));
    }
  }
  const Fields metadata = package_metadata(db, compilers, features, env.now_unix());
  if (Status s = write_kdb(env, output, entries, metadata, *signer ? &**signer : nullptr);
      !s.is_ok()) {
    return s;
  }
  report.entries = entries.size();
  return report;
}

Result<std::uint64_t> merge_packages(const std::vector<std::string>& inputs,
                                     const std::string& output, const std::string& signing_key,
                                     std::uint64_t* left_out) {
  auto report = merge_packages_reporting(inputs, output, signing_key);
  if (!report) return report.status();
  if (left_out != nullptr) *left_out = report->left_out;
  return report->entries;
}

}  // namespace kcache
