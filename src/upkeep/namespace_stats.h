// What every process counted for one namespace of client-keyed entries
// (core/client_entries.h): a stats file of its own beside the folder's,
// `<user dir>/kcache.stats.client.<namespace>.stats`, in the stats file's
// format (upkeep/stats_file.h, docs/formats.md §6) with the six counts of
// NamespaceCounts in its first slots. A namespace's name is not bounded to
// a fixed set of slots, so each has its file, made by the first process
// that counts into it where counts are shared.
#pragma once

#include <kcache/stats.h>
#include <kcache/status.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "env/env.h"
#include "upkeep/stats_file.h"

namespace kcache {

// The slots of a namespace's stats file, in NamespaceCounts' order: new
// ones are added at the end, never renumbered.
enum class NamespaceStat : std::uint32_t {
  kGets,
  kHits,
  kPuts,
  kWaits,
  kBytesServed,
  kBytesStored,
  kCount
};

// `<user_dir>/kcache.stats.client.<name_space>.stats` (the name starts as
// the folder's stats file does, so `kcache gc` knows it as kcache's).
std::string namespace_stats_path(const std::string& user_dir, std::string_view name_space);

// Adds `counts` to a shard of a namespace's file.
void add_namespace_counts(std::atomic<std::uint64_t>* shard, const NamespaceCounts& counts);

// Every namespace counted in `user_dir`, sorted by name. A file that is not
// a stats file is left out (the folder's own stats file says so for its
// counts; these are the namespaces' share of them).
Result<std::vector<NamespaceCounts>> read_namespace_stats(Env& env, const std::string& user_dir);

// Sets every namespace's counts in `user_dir` to zero.
Status zero_namespace_stats(Env& env, const std::string& user_dir);

}  // namespace kcache
