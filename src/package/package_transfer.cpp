#include "package/package_transfer.h"

#include <set>

#include "format/kdb_file.h"
#include "package/package_metadata.h"
#include "sign/package_signer.h"
#include "store/system/trusted_keys.h"

namespace kcache {

Result<std::uint64_t> export_user_db(const Tier& user, Env& env, std::string_view db,
                                     const std::string& output_path, const ExportOptions& options) {
  auto signer = optional_signer(options.signing_key, env);
  if (!signer) return signer.status();
  auto entries = user.read_all(std::string(db));
  if (!entries) return entries.status();
  if (options.keys) {
    const std::set<CacheKey> wanted(options.keys->begin(), options.keys->end());
    std::erase_if(*entries, [&](const Entry& entry) { return !wanted.contains(entry.key); });
  }
  if (entries->empty()) {
    return Status::not_found("the user cache has no entries for database '" + std::string(db) +
                             "'");
  }
  std::vector<std::pair<CacheKey, std::vector<std::uint8_t>>> encoded;
  // Each compiler the entries were compiled by, once, as its key fields say.
  std::set<std::string> compilers;
  std::set<std::string> features;
  for (const auto& entry : *entries) {
    auto bytes = encode_entry(entry, Compression::kNone);
    if (!bytes) return bytes.status();
    encoded.emplace_back(entry.key, std::move(*bytes));
    if (std::string compiler = compiler_of_material(entry.material); !compiler.empty()) {
      compilers.insert(std::move(compiler));
    }
    features.insert(features_of_material(entry.material));
  }
  const Fields metadata = package_metadata(std::string(db), compilers, features, env.now_unix());
  if (Status s = write_kdb(env, output_path, encoded, metadata, *signer ? &**signer : nullptr);
      !s.is_ok()) {
    return s;
  }
  return static_cast<std::uint64_t>(encoded.size());
}

Result<std::uint64_t> import_into_user(Tier& user, const Env& env, const std::string& path,
                                       const std::vector<std::string>& trusted_keys,
                                       Compression compression, std::uint64_t* left_out) {
  auto kdb = KdbReader::open(path, env);
  if (!kdb) return kdb.status();
  // What the user cache serves, it serves without a signature: a package
  // the system tier would refuse for its signature is not let in this way.
  if (!trusted_keys.empty()) {
    if (auto refusal = TrustedKeys::load(trusted_keys, env).refusal(**kdb)) {
      return Status::corruption(path + ": " + *refusal +
                                " (KCACHE_TRUSTED_KEYS is set); not imported");
    }
  } else if (auto broken = signature_failure(**kdb)) {
    // One that cannot be checked here (no libsodium) is not let in either,
    // as install refuses it: its entries' signed digests vouch for nothing.
    return Status::corruption(path + ": " + broken->why + "; not imported");
  }
  std::string db;
  for (const auto& [name, value] : (*kdb)->metadata()) {
    if (name == "db") db = value;
  }
  if (!valid_db_name(db)) {
    return Status::invalid_argument(path + " names no database it belongs to (metadata 'db')");
  }
  std::uint64_t imported = 0;
  std::uint64_t bad = 0;
  for (const auto& slot : (*kdb)->slots()) {
    auto bytes = (*kdb)->read(slot);
    if (!bytes) return bytes.status();
    auto entry = decode_package_entry(**kdb, slot, *bytes);
    if (!entry) {
      ++bad;
      continue;
    }
    // One the user cache holds already is not stored again (each import
    // of a package appended a second copy of every entry).
    if (auto held = user.get(DbNames{db, db}, slot.key); held && held->has_value()) continue;
    auto encoded = encode_entry(*entry, compression);
    if (!encoded) return encoded.status();
    if (Status s = user.put(db, *entry, *encoded); !s.is_ok()) return s;
    ++imported;
  }
  if (left_out != nullptr) *left_out = bad;
  if (imported == 0 && bad > 0) {
    return Status::corruption(path + ": none of its " + std::to_string(bad) +
                              " entries passes its checks");
  }
  return imported;
}

}  // namespace kcache
