// The user tier's entries as the admin methods of Cache hand them out
// (kcache list, show, extract, explain, clear --failures).
#pragma once

#include <kcache/admin.h>

#include <optional>
#include <string_view>
#include <vector>

#include "store/tier.h"

namespace kcache {

// Every entry of every database.
Result<std::vector<EntryInfo>> list_user_entries(const Tier& user);
// The entry of `key` in `db`, whole, through a lookup (a use).
Result<std::optional<StoredEntry>> read_user_entry(Tier& user, std::string_view db,
                                                   const CacheKey& key);
// Every entry of `db`, binaries only when asked; no use.
Result<std::vector<StoredEntry>> read_user_entries(const Tier& user, std::string_view db,
                                                   bool with_binaries);
// Removes every remembered compile error; how many there were.
Result<std::uint64_t> clear_user_failures(Tier& user);

}  // namespace kcache
