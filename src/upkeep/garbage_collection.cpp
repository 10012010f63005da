#include "upkeep/garbage_collection.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <system_error>

namespace kcache {
namespace {

// "0.3.0", "1.2.10-rc1": how kcache names its version folders.
bool looks_like_version(const std::string& name) {
  int dots = 0;
  std::size_t i = 0;
  for (; i < name.size() && (std::isdigit(static_cast<unsigned char>(name[i])) || name[i] == '.');
       ++i) {
    dots += name[i] == '.' ? 1 : 0;
  }
  return dots == 2 && i > 4 && std::isdigit(static_cast<unsigned char>(name[0])) &&
         (i == name.size() || name[i] == '-' || name[i] == '+');
}

// Whether `name`, in a version folder, is something kcache makes there
// (every version's layout: logs, hints, use tables, locks, stats,
// quarantine, compiler facts, key heads, temporary files, and 0.1-0.2's
// folders of two hex digits).
bool made_by_kcache(const std::string& name, bool is_dir) {
  if (is_dir) {
    return name == "quarantine" || name == "compilers" || name == "scans" ||
           (name.size() == 2 && std::isxdigit(static_cast<unsigned char>(name[0])) &&
            std::isxdigit(static_cast<unsigned char>(name[1])));
  }
  for (const char* suffix : {".ukdb", ".ukdx", ".ukdu", ".locks", ".kdb", ".db", ".idx"}) {
    if (name.ends_with(suffix)) return true;
  }
  return name.starts_with("kcache.stats") || name.find(".tmp.") != std::string::npos;
}

std::uint64_t bytes_under(const std::string& path) {
  std::uint64_t total = 0;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(path, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    if (it->is_regular_file(error)) total += it->file_size(error);
  }
  return total;
}

void other_versions(Env& env, const std::string& user_dir, GcReport& report) {
  const std::filesystem::path mine(user_dir);
  const std::string parent = mine.parent_path().string();
  auto names = env.list_dir(parent);
  if (!names) return;
  for (const DirEntry& entry : *names) {
    if (!entry.is_dir || entry.name == mine.filename().string() ||
        !looks_like_version(entry.name)) {
      continue;
    }
    const std::string path = parent + "/" + entry.name;
    GcReport::Item item{"kcache " + entry.name, path, 0, 0, 0};
    auto info = env.file_info(path);
    if (!info || info->type != FileType::kDirectory) continue;  // a link is never followed
    if (info->owner != env.user_id()) {
      item.what += ": another user's";
      report.kept.push_back(item);
      continue;
    }
    auto inside = env.list_dir(path);
    if (!inside) continue;
    auto foreign = std::find_if(inside->begin(), inside->end(), [](const DirEntry& e) {
      return !made_by_kcache(e.name, e.is_dir);
    });
    if (foreign != inside->end()) {
      item.what += ": holds " + foreign->name + ", which kcache did not make";
      report.kept.push_back(item);
      continue;
    }
    item.bytes = bytes_under(path);
    report.version_folders.push_back(item);
  }
}

Status old_compilers(Tier& user, const GcOptions& options, std::int64_t now, GcReport& report,
                     std::vector<std::pair<std::string, CacheKey>>& doomed) {
  auto dbs = user.databases();
  if (!dbs) return dbs.status();
  struct Group {
    std::vector<EntryInfo> entries;
    std::int64_t newest = 0;
  };
  std::map<std::string, Group> groups;  // by compiler identity
  for (const std::string& db : *dbs) {
    auto entries = user.read_all(db);
    if (!entries) return entries.status();
    auto infos = user.list(db);  // for the last uses
    if (!infos) return infos.status();
    std::map<CacheKey, std::int64_t> last_use;
    for (const EntryInfo& info : *infos) last_use[info.key] = info.last_used_unix;
    for (const Entry& entry : *entries) {
      auto material = KeyMaterial::parse(std::string(entry.material.view()));
      if (!material) continue;
      std::string backend, id, version;
      for (const KeyField& field : material->fields()) {
        if (field.name == "backend") backend = field.value;
        if (field.name == "compiler.id") id = field.value;
        if (field.name == "compiler.version") version = field.value;
      }
      Group& group = groups[backend + " " + id + " (" + version + ")"];
      EntryInfo info = summarize_entry(db, entry, entry.storage.size);
      const std::int64_t used = std::max(info.created_unix, last_use[entry.key]);
      group.newest = std::max(group.newest, used);
      group.entries.push_back(info);
    }
  }
  for (const auto& [compiler, group] : groups) {
    if (now - group.newest < options.unused_for.count()) continue;
    std::map<std::string, GcReport::Item> by_db;
    for (const EntryInfo& info : group.entries) {
      GcReport::Item& item = by_db[info.db];
      item.what = compiler;
      item.path = info.db;
      item.entries += 1;
      item.bytes += info.stored_bytes;
      item.last_used_unix = group.newest;
      doomed.emplace_back(info.db, info.key);
    }
    for (auto& [db, item] : by_db) report.compilers.push_back(item);
  }
  return Status::ok();
}

void old_quarantine(Env& env, const std::string& user_dir, const GcOptions& options,
                    std::int64_t now, GcReport& report) {
  const std::string folder = user_dir + "/quarantine";
  auto info = env.file_info(folder);
  if (!info || info->type != FileType::kDirectory) return;
  auto names = env.list_dir(folder);
  if (!names) return;
  for (const DirEntry& entry : *names) {
    const std::string path = folder + "/" + entry.name;
    auto file = env.file_info(path);
    if (!file || file->type != FileType::kRegular) continue;
    if (now - file->modified_unix < options.unused_for.count()) continue;
    report.quarantined.push_back({"quarantined file", path, file->size, 0, file->modified_unix});
  }
}

}  // namespace

Result<GcReport> collect_garbage(Tier& user, Env& env, const std::string& user_dir,
                                 const GcOptions& options) {
  GcReport report;
  const std::int64_t now = env.now_unix();
  other_versions(env, user_dir, report);
  std::vector<std::pair<std::string, CacheKey>> doomed;
  if (Status s = old_compilers(user, options, now, report, doomed); !s.is_ok()) return s;
  old_quarantine(env, user_dir, options, now, report);
  for (const auto* items : {&report.version_folders, &report.compilers, &report.quarantined}) {
    for (const auto& item : *items) report.bytes += item.bytes;
  }
  if (options.dry_run) return report;
  for (const auto& item : report.version_folders) {
    if (Status s = env.remove_all(item.path); !s.is_ok()) return s;
  }
  for (const auto& [db, key] : doomed) {
    if (Status s = user.remove(db, key); !s.is_ok()) return s;
  }
  for (const auto& item : report.quarantined) (void)env.remove_file(item.path);
  // The removed entries' space comes back with a compaction.
  if (!doomed.empty()) {
    if (auto pruned = user.prune({}); !pruned) return pruned.status();
  }
  report.removed = true;
  return report;
}

}  // namespace kcache
