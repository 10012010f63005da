// Compile errors remembered in the user tier (KCACHE_FAILURE_TTL): each an
// entry of its own, keyed by the request's key material behind a prefix of
// its own (so it never matches a binary's), holding the error's message and
// the compiler's log.
#pragma once

#include <kcache/status.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>

#include "format/entry.h"
#include "store/tier.h"

namespace kcache {

// Whether `entry` is a remembered error (kcache clear --failures).
bool is_failure_entry(const Entry& entry);

// The entry that remembers `error` for the request of `material`.
Entry failure_entry(std::string_view material, const Status& error, std::int64_t now_unix);

// The error remembered in `user` for `material`, when younger than `ttl`
// (an older one is removed, so the request compiles again).
std::optional<Status> remembered_failure(Tier& user, const DbNames& names,
                                         std::string_view material, std::chrono::milliseconds ttl,
                                         std::int64_t now_unix);

}  // namespace kcache
