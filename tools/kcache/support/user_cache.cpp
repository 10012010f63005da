#include "support/user_cache.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <vector>

#include "support/failure_report.h"

namespace kcache::tool {

std::unique_ptr<Cache> open_cache() {
  auto cache = Cache::open();
  if (!cache) {
    report_failure(cache.status().message());
    return nullptr;
  }
  return std::move(*cache);
}

int find_entry(Cache& cache, const std::string& prefix, const std::string& db, EntryInfo& found) {
  std::string lower;
  for (char c : prefix) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.size() < 4 || lower.size() > 32 ||
      lower.find_first_not_of("0123456789abcdef") != std::string::npos) {
    std::cerr << "kcache: '" << prefix
              << "' is not a key: 4 to 32 hex digits, as `kcache list` shows them\n";
    return 2;
  }
  auto entries = CacheAdmin(cache).list();
  if (!entries) return report_failure(entries.status().message());
  std::vector<EntryInfo> matches;
  for (const auto& e : *entries) {
    if (e.key.hex().starts_with(lower) && (db.empty() || e.db == db)) matches.push_back(e);
  }
  if (matches.empty()) {
    return report_failure("no entry of key " + lower + (db.empty() ? "" : " in database " + db) +
                          " in " + cache.config().user_dir);
  }
  const bool one_key = std::all_of(matches.begin(), matches.end(),
                                   [&](const EntryInfo& e) { return e.key == matches[0].key; });
  if (matches.size() > 1 && one_key) {  // more digits cannot tell them apart
    std::string dbs;
    for (const auto& e : matches) dbs += (dbs.empty() ? "" : ", ") + e.db;
    return report_failure("key " + matches[0].key.hex() + " is in " +
                          std::to_string(matches.size()) + " databases (" + dbs +
                          "); name one with --db");
  }
  if (matches.size() > 1) {
    std::string which;
    for (const auto& e : matches) which += " " + e.key.hex().substr(0, 16) + " (" + e.db + ")";
    return report_failure("key " + lower + " is the start of " + std::to_string(matches.size()) +
                          " entries:" + which + "; give more of it");
  }
  found = matches.front();
  return 0;
}

nlohmann::json entry_json(const EntryInfo& e) {
  nlohmann::json out = {{"db", e.db},
                        {"key", e.key.hex()},
                        {"backend", e.backend},
                        {"failure", e.failure},
                        {"target", e.target},
                        {"kernels", e.kernels},
                        {"bytes", e.bytes},
                        {"stored_bytes", e.stored_bytes},
                        {"created", e.created_unix},
                        {"last_used", e.last_used_unix},
                        {"compile_micros", e.compile_micros}};
  if (!e.client_namespace.empty()) {
    out["namespace"] = e.client_namespace;
    out["client_key"] = e.client_key;  // bytes that are not UTF-8 print as U+FFFD
  }
  return out;
}

}  // namespace kcache::tool
