#include "upkeep/namespace_stats.h"

#include <algorithm>
#include <utility>

namespace kcache {
namespace {

constexpr std::string_view kPrefix = "kcache.stats.client.";
constexpr std::string_view kSuffix = ".stats";

// The namespace whose stats file is called `file_name`, or empty. A lock
// file (`<file>.lock`) ends otherwise, whatever the namespace is called.
std::string_view namespace_of(std::string_view file_name) {
  if (!file_name.starts_with(kPrefix) || !file_name.ends_with(kSuffix)) return {};
  if (file_name.size() <= kPrefix.size() + kSuffix.size()) return {};
  return file_name.substr(kPrefix.size(), file_name.size() - kPrefix.size() - kSuffix.size());
}

// The stats files of namespaces in `user_dir`, by name: none when the
// folder does not exist.
Result<std::vector<std::pair<std::string, std::string>>> namespace_files(
    Env& env, const std::string& user_dir) {
  std::vector<std::pair<std::string, std::string>> files;
  auto listed = env.list_dir(user_dir);
  if (!listed) {
    if (listed.status().code() == StatusCode::kNotFound) return files;
    return listed.status();
  }
  for (const DirEntry& found : *listed) {
    const std::string_view name = namespace_of(found.name);
    if (!name.empty()) files.emplace_back(std::string(name), user_dir + "/" + found.name);
  }
  return files;
}

std::uint64_t at(const std::array<std::uint64_t, kStatCount>& totals, NamespaceStat stat) {
  return totals[static_cast<std::size_t>(stat)];
}

}  // namespace

static_assert(static_cast<std::size_t>(NamespaceStat::kCount) <= kStatCount);

std::string namespace_stats_path(const std::string& user_dir, std::string_view name_space) {
  return user_dir + "/" + std::string(kPrefix) + std::string(name_space) + std::string(kSuffix);
}

void add_namespace_counts(std::atomic<std::uint64_t>* shard, const NamespaceCounts& counts) {
  const auto add = [shard](NamespaceStat stat, std::uint64_t n) {
    if (n != 0) shard[static_cast<std::size_t>(stat)].fetch_add(n, std::memory_order_relaxed);
  };
  add(NamespaceStat::kGets, counts.gets);
  add(NamespaceStat::kHits, counts.hits);
  add(NamespaceStat::kPuts, counts.puts);
  add(NamespaceStat::kWaits, counts.waits);
  add(NamespaceStat::kBytesServed, counts.bytes_served);
  add(NamespaceStat::kBytesStored, counts.bytes_stored);
}

Result<std::vector<NamespaceCounts>> read_namespace_stats(Env& env, const std::string& user_dir) {
  auto files = namespace_files(env, user_dir);
  if (!files) return files.status();
  std::vector<NamespaceCounts> all;
  for (const auto& [name, path] : *files) {
    auto file = StatsFile::open(env, path, /*create=*/false);
    if (!file) continue;
    const auto totals = (*file)->totals();
    NamespaceCounts counts;
    counts.name = name;
    counts.gets = at(totals, NamespaceStat::kGets);
    counts.hits = at(totals, NamespaceStat::kHits);
    counts.puts = at(totals, NamespaceStat::kPuts);
    counts.waits = at(totals, NamespaceStat::kWaits);
    counts.bytes_served = at(totals, NamespaceStat::kBytesServed);
    counts.bytes_stored = at(totals, NamespaceStat::kBytesStored);
    all.push_back(std::move(counts));
  }
  std::sort(all.begin(), all.end(),
            [](const NamespaceCounts& a, const NamespaceCounts& b) { return a.name < b.name; });
  return all;
}

Status zero_namespace_stats(Env& env, const std::string& user_dir) {
  auto files = namespace_files(env, user_dir);
  if (!files) return files.status();
  for (const auto& [name, path] : *files) {
    auto file = StatsFile::open(env, path, /*create=*/false);
    if (file) (*file)->zero(env.now_unix());
  }
  return Status::ok();
}

}  // namespace kcache
