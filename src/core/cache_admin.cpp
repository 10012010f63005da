// CacheAdmin (kcache/admin.h): the administration of an open cache, over
// the parts its facade lends (core/cache_parts.h).
#include <kcache/admin.h>
#include <kcache/cache.h>

#include "core/cache_parts.h"
#include "env/temp_dir.h"
#include "package/package_transfer.h"
#include "store/tier.h"
#include "upkeep/folder_stats.h"
#include "upkeep/garbage_collection.h"
#include "upkeep/namespace_stats.h"
#include "upkeep/stats_file.h"
#include "upkeep/user_entries.h"

namespace kcache {

namespace {

Status unavailable(const ResolvedConfig& config) {
  if (!config.enabled)
    return Status::unavailable("the cache is disabled (" + config.disabled_reason + ")");
  return Status::unavailable("the user cache directory is unknown (HOME is not set)");
}

}  // namespace

CacheAdmin::CacheAdmin(Cache& cache) : cache_(cache) {}

Result<FolderStats> CacheAdmin::folder_stats() const {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  // A bad stats file was set aside as this cache opened (p.sharing), where
  // it could be: one still there could not be (a folder this process
  // cannot write in).
  auto stats = read_folder_stats(*user, p.env, p.sharing.path());
  if (stats) {
    auto namespaces = read_namespace_stats(p.env, p.config.user_dir);
    if (!namespaces) return namespaces.status();
    stats->counts.namespaces = std::move(*namespaces);
  }
  if (stats && !stats->counts_problem.empty()) {
    p.log.warn_once("Integrity:" + p.sharing.path(), "Integrity",
                    "The counts cannot be shown: " + stats->counts_problem +
                        "; the next kcache that can write in " + p.config.user_dir +
                        " sets it aside in quarantine/ and counts anew");
  }
  return stats;
}

Status CacheAdmin::check_storable() {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return user->ready_to_store();
}

Status CacheAdmin::zero_stats() {
  const CacheParts p = parts_of(*cache_.impl_);
  if (p.tiers.home() == nullptr) return unavailable(p.config);
  Status zeroed =
      zero_folder_stats(p.env, p.sharing.path(), p.sharing.file_mode(), p.sharing.said_set_aside());
  if (!zeroed.is_ok()) return zeroed;
  return zero_namespace_stats(p.env, p.config.user_dir);
}

Result<std::vector<EntryInfo>> CacheAdmin::list() const {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return list_user_entries(*user);
}

Result<std::optional<StoredEntry>> CacheAdmin::read_entry(std::string_view db,
                                                          const CacheKey& key) const {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return read_user_entry(*user, db, key);
}

Result<std::vector<StoredEntry>> CacheAdmin::read_entries(std::string_view db,
                                                          bool with_binaries) const {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return read_user_entries(*user, db, with_binaries);
}

Result<std::uint64_t> CacheAdmin::clear() {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  if (Tier* copies = p.tiers.copy_tier()) (void)copies->clear();
  if (p.memo.records) p.memo.records->clear();
  return user->clear();
}

Result<std::uint64_t> CacheAdmin::clear_failures() {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return clear_user_failures(*user);
}

Result<VerifyReport> CacheAdmin::verify(const VerifyOptions& options) {
  const CacheParts p = parts_of(*cache_.impl_);
  if (!p.config.enabled) return unavailable(p.config);
  VerifyReport report;
  if (options.repair) {
    // The scratch folders of compiles killed before they could remove them.
    std::string base = p.env.get_env("TMPDIR").value_or("");
    if (base.empty()) base = "/tmp";
    if (const std::size_t removed = reclaim_abandoned_temp_dirs(base); removed > 0) {
      report.problems.push_back(
          {base, std::to_string(removed) + " scratch folders of killed compiles", true});
    }
  }
  Status failed;
  p.tiers.for_each_on_disk([&](Tier& tier) {
    if (!failed.is_ok()) return;
    failed = tier.verify(options.repair, report);
    if (failed.code() == StatusCode::kNotSupported) failed = Status::ok();
  });
  if (!failed.is_ok()) return failed;
  return report;
}

Result<GcReport> CacheAdmin::gc(const GcOptions& options) {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return collect_garbage(*user, p.env, p.config.user_dir, options);
}

Result<PruneReport> CacheAdmin::prune(const PruneOptions& options) {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return user->prune(options);
}

Result<std::uint64_t> CacheAdmin::import_package(const std::string& path, std::uint64_t* left_out) {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return import_into_user(*user, p.env, path, p.config.trusted_keys, p.compression, left_out);
}

Result<std::uint64_t> CacheAdmin::export_db(std::string_view db, const std::string& output_path,
                                            const ExportOptions& options) const {
  const CacheParts p = parts_of(*cache_.impl_);
  Tier* user = p.tiers.home();
  if (user == nullptr) return unavailable(p.config);
  return export_user_db(*user, p.env, db, output_path, options);
}

}  // namespace kcache
