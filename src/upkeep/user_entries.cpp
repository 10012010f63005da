#include "upkeep/user_entries.h"

#include <string>

#include "upkeep/remembered_failures.h"

namespace kcache {
namespace {

StoredEntry stored_entry(const std::string& db, const Entry& entry, bool with_binary) {
  StoredEntry out;
  out.info = summarize_entry(db, entry, 0);
  out.material = std::string(entry.material.view());
  out.metadata = entry.metadata;
  if (with_binary) {
    const auto payload = entry.payload();
    out.binary.assign(payload.begin(), payload.end());
  }
  return out;
}

}  // namespace

Result<std::vector<EntryInfo>> list_user_entries(const Tier& user) {
  auto names = user.databases();
  if (!names) return names.status();
  std::vector<EntryInfo> all;
  for (const auto& db : *names) {
    auto rows = user.list(db);
    if (!rows) return rows.status();
    all.insert(all.end(), rows->begin(), rows->end());
  }
  return all;
}

Result<std::optional<StoredEntry>> read_user_entry(Tier& user, std::string_view db,
                                                   const CacheKey& key) {
  const std::string name(db);
  auto got = user.get({name, name}, key);
  if (!got) return got.status();
  if (!got->has_value()) return std::optional<StoredEntry>();
  return std::optional<StoredEntry>(stored_entry(name, **got, /*with_binary=*/true));
}

Result<std::vector<StoredEntry>> read_user_entries(const Tier& user, std::string_view db,
                                                   bool with_binaries) {
  const std::string name(db);
  auto all = user.read_all(name);
  if (!all) return all.status();
  std::vector<StoredEntry> out;
  out.reserve(all->size());
  for (const Entry& entry : *all) out.push_back(stored_entry(name, entry, with_binaries));
  return out;
}

Result<std::uint64_t> clear_user_failures(Tier& user) {
  auto names = user.databases();
  if (!names) return names.status();
  std::uint64_t removed = 0;
  for (const auto& db : *names) {
    auto entries = user.read_all(db);
    if (!entries) return entries.status();
    for (const auto& entry : *entries) {
      if (!is_failure_entry(entry)) continue;
      if (Status s = user.remove(db, entry.key); !s.is_ok()) return s;
      ++removed;
    }
  }
  return removed;
}

}  // namespace kcache
