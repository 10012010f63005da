// The cache as the commands that look after it open it, and the user
// cache's entries as they find and show them (list, show, extract,
// explain).
#pragma once

#include <kcache/admin.h>
#include <kcache/cache.h>

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace kcache::tool {

// The cache as the settings say (Cache::open); nullptr after saying why.
std::unique_ptr<Cache> open_cache();

// The one user entry whose key starts with `prefix` (4 to 32 hex digits),
// in database `db` when it is not empty (one key can be in several: an
// arch's and a device's): 0 with it in `found`, or the exit status after
// saying why not (none, several, not a key).
int find_entry(Cache& cache, const std::string& prefix, const std::string& db, EntryInfo& found);

// An entry as `kcache list --json` and `show --json` print it.
nlohmann::json entry_json(const EntryInfo& entry);

}  // namespace kcache::tool
