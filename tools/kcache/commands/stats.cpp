// kcache stats: what every process that used the cache folder counted
// since the counts were last zeroed, and what the user tier holds; as a
// table, JSON, or Prometheus text for node_exporter's textfile collector.
#include <kcache/admin.h>
#include <kcache/cache.h>

#include <iomanip>
#include <iostream>
#include <memory>
#include <span>
#include <sstream>
#include <string>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

struct StatsArguments {
  bool json = false;
  bool prometheus = false;
  bool zero = false;
};

// Each count: its name, what it is, and where it is in CacheStats.
struct Count {
  const char* name;
  const char* help;
  std::uint64_t CacheStats::*field;
};
constexpr Count kCounts[] = {
    {"requests", "Kernel requests.", &CacheStats::requests},
    {"memory_hits",
     "Requests answered from a process's memory (another thread's compile of the kernel "
     "included).",
     &CacheStats::memory_hits},
    {"system_hits", "Requests answered from installed packages.", &CacheStats::system_hits},
    {"user_hits", "Requests answered from the user cache.", &CacheStats::user_hits},
    {"compiles", "Kernels compiled (misses).", &CacheStats::compiles},
    {"compile_failures", "Compiles that failed.", &CacheStats::compile_failures},
    {"failure_hits", "Compile errors answered without compiling (remembered, or another thread's).",
     &CacheStats::failure_hits},
    {"compile_micros", "Microseconds spent compiling.", &CacheStats::compile_micros},
    {"compile_micros_saved", "Microseconds of compiling that hits saved.",
     &CacheStats::compile_micros_saved},
    {"bytes_served", "Bytes of binaries served from a tier.", &CacheStats::bytes_served},
    {"bytes_stored", "Bytes of entries written to the user cache.", &CacheStats::bytes_stored},
    {"evicted", "Entries evicted for size or count.", &CacheStats::evicted},
    {"expired", "Entries evicted for age.", &CacheStats::expired},
    {"corrupt_entries", "Damaged entries or files met (and set aside).",
     &CacheStats::corrupt_entries},
    {"store_failures", "Compiled binaries that could not be stored.", &CacheStats::store_failures},
    {"lock_waits", "Requests that waited for another process's compile.", &CacheStats::lock_waits},
    {"lock_wait_micros", "Microseconds spent waiting for other processes' compiles.",
     &CacheStats::lock_wait_micros},
    {"lock_timeouts", "Waits for another process that ran out.", &CacheStats::lock_timeouts},
    {"breaker_trips", "Times a failing tier was set aside for a while.",
     &CacheStats::breaker_trips},
    {"rejected", "Binaries the driver refused.", &CacheStats::rejected},
    {"uncacheable", "Requests compiled without the cache.", &CacheStats::uncacheable},
};

// Each count of a namespace of client-keyed entries (NamespaceCounts).
struct NamespaceCount {
  const char* name;
  const char* help;
  std::uint64_t NamespaceCounts::*field;
};
constexpr NamespaceCount kNamespaceCounts[] = {
    {"gets", "Client-keyed lookups (get and claim).", &NamespaceCounts::gets},
    {"hits", "Client-keyed lookups answered with an entry.", &NamespaceCounts::hits},
    {"puts", "Client-keyed entries stored.", &NamespaceCounts::puts},
    {"waits", "Claims that waited for another claimant.", &NamespaceCounts::waits},
    {"bytes_served", "Bytes of client-keyed entries served.", &NamespaceCounts::bytes_served},
    {"bytes_stored", "Bytes of client-keyed entries written to the user cache.",
     &NamespaceCounts::bytes_stored},
};

std::string seconds_text(std::uint64_t micros) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(micros < 10'000'000 ? 2 : 1) << micros / 1e6 << " s";
  return out.str();
}

std::string percent_of(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << 100.0 * static_cast<double>(part) / whole << "%";
  return out.str();
}

void print_table(const std::string& dir, const FolderStats& s, const ResolvedConfig& config) {
  const CacheStats& c = s.counts;
  const std::uint64_t hits = c.memory_hits + c.system_hits + c.user_hits;
  std::cout << "cache " << dir << "\n";
  if (!s.counts_problem.empty()) {
    std::cout << "no counts to show: the stats file cannot be used (the warning says why)\n";
  } else if (!s.counted) {
    std::cout << "no counts yet: nothing has been stored here\n";
  } else {
    std::cout << "counts of all processes since " << utc_time(s.since_unix) << "\n";
  }
  const auto row = [](const std::string& label, const std::string& value) {
    std::cout << "  " << std::left << std::setw(18) << label << value << "\n";
  };
  const std::string limit =
      config.max_size == 0 ? "no limit" : "limit " + human_bytes(config.max_size);
  const auto holds = [&] {
    row("holds", std::to_string(s.entries) + (s.entries == 1 ? " entry, " : " entries, ") +
                     human_bytes(s.bytes) + " in " + std::to_string(s.databases) +
                     (s.databases == 1 ? " database" : " databases") + " (" + limit + ")");
  };
  if (!s.counts_problem.empty()) {  // no counts, rather than counts of 0
    holds();
    return;
  }
  row("requests", std::to_string(c.requests));
  row("hits", std::to_string(hits) + " (" + percent_of(hits, c.requests) + "): memory " +
                  std::to_string(c.memory_hits) + ", system " + std::to_string(c.system_hits) +
                  ", user " + std::to_string(c.user_hits));
  row("compiles", std::to_string(c.compiles) + ", failed " + std::to_string(c.compile_failures) +
                      ", errors answered without compiling " + std::to_string(c.failure_hits));
  row("uncached", std::to_string(c.uncacheable) + " (" + percent_of(c.uncacheable, c.requests) +
                      "): compiled without the cache, what they read cannot be keyed");
  row("compile time", seconds_text(c.compile_micros) + " spent, " +
                          seconds_text(c.compile_micros_saved) + " saved by hits");
  row("served / stored", human_bytes(c.bytes_served) + " / " + human_bytes(c.bytes_stored));
  row("lock waits", std::to_string(c.lock_waits) + " (" + seconds_text(c.lock_wait_micros) +
                        "), timed out " + std::to_string(c.lock_timeouts));
  row("evicted",
      std::to_string(c.evicted) + " for size or count, " + std::to_string(c.expired) + " for age");
  row("problems", std::to_string(c.corrupt_entries) + " damaged, " +
                      std::to_string(c.store_failures) + " not stored, " +
                      std::to_string(c.breaker_trips) + " breaker trips, " +
                      std::to_string(c.rejected) + " rejected by the driver");
  holds();
  if (c.namespaces.empty()) return;
  std::cout << "client-keyed entries, by namespace\n";
  for (const NamespaceCounts& n : c.namespaces) {
    row(n.name, "gets " + std::to_string(n.gets) + ", hits " + std::to_string(n.hits) + " (" +
                    percent_of(n.hits, n.gets) + "), puts " + std::to_string(n.puts) + ", waits " +
                    std::to_string(n.waits) + "; served " + human_bytes(n.bytes_served) +
                    ", stored " + human_bytes(n.bytes_stored));
  }
}

// Prometheus text (format 0.0.4, as node_exporter's textfile collector
// reads it), ending with the "# EOF" OpenMetrics asks for (a comment here).
std::string label_value(const std::string& text) {
  std::string escaped;
  for (char ch : text) {
    if (ch == '\\' || ch == '"') escaped += '\\';
    if (ch == '\n') {
      escaped += "\\n";
      continue;
    }
    escaped += ch;
  }
  return escaped;
}

void print_prometheus(const std::string& dir, const FolderStats& s, const ResolvedConfig& config) {
  const std::string label = "{cache_dir=\"" + label_value(dir) + "\"}";
  // Counts that cannot be read are left out, not said to be 0 (the
  // warning says why).
  for (const Count& count :
       s.counts_problem.empty() ? std::span<const Count>(kCounts) : std::span<const Count>()) {
    const std::string name = std::string("kcache_") + count.name + "_total";
    std::cout << "# HELP " << name << " " << count.help << "\n# TYPE " << name << " counter\n"
              << name << label << " " << s.counts.*count.field << "\n";
  }
  // A namespace's name is [A-Za-z0-9_.-] (client_key), so it needs no
  // escaping; label_value keeps that true if the rule ever grows.
  for (const NamespaceCount& count : s.counts.namespaces.empty()
                                         ? std::span<const NamespaceCount>()
                                         : std::span<const NamespaceCount>(kNamespaceCounts)) {
    const std::string name = std::string("kcache_client_") + count.name + "_total";
    std::cout << "# HELP " << name << " " << count.help << "\n# TYPE " << name << " counter\n";
    for (const NamespaceCounts& n : s.counts.namespaces) {
      std::cout << name << "{cache_dir=\"" << label_value(dir) << "\",namespace=\""
                << label_value(n.name) << "\"} " << n.*count.field << "\n";
    }
  }
  const auto gauge = [&](const std::string& name, const char* help, std::uint64_t value) {
    std::cout << "# HELP kcache_" << name << " " << help << "\n# TYPE kcache_" << name
              << " gauge\nkcache_" << name << label << " " << value << "\n";
  };
  gauge("entries", "Entries in the user cache.", s.entries);
  gauge("size_bytes", "Bytes of the user cache's files.", s.bytes);
  gauge("databases", "Databases (targets) in the user cache.", s.databases);
  gauge("max_size_bytes", "KCACHE_MAX_SIZE (0: no limit).", config.max_size);
  gauge("counted_since_seconds", "Unix time the counts were zeroed or began.",
        static_cast<std::uint64_t>(s.since_unix));
  std::cout << "# EOF\n";
}

int run_stats(const StatsArguments& args) {
  auto cache = open_cache();
  if (!cache) return 1;
  const ResolvedConfig& config = cache->config();
  if (args.zero) {
    if (Status s = CacheAdmin(*cache).zero_stats(); !s.is_ok()) return report_failure(s.message());
    if (!args.json && !args.prometheus) {
      std::cout << "zeroed the counts of " << config.user_dir << "\n";
      return 0;
    }
  }
  auto stats = CacheAdmin(*cache).folder_stats();
  if (!stats) return report_failure(stats.status().message());
  if (args.prometheus) {
    print_prometheus(config.user_dir, *stats, config);
  } else if (args.json) {
    nlohmann::json counts = nlohmann::json::object();
    for (const Count& count : kCounts) counts[count.name] = stats->counts.*count.field;
    nlohmann::json namespaces = nlohmann::json::array();
    for (const NamespaceCounts& n : stats->counts.namespaces) {
      nlohmann::json one{{"name", n.name}};
      for (const NamespaceCount& count : kNamespaceCounts) one[count.name] = n.*count.field;
      namespaces.push_back(std::move(one));
    }
    std::cout << json_text(nlohmann::json{{"user_dir", config.user_dir},
                                          {"counted", stats->counted},
                                          {"counts_problem", stats->counts_problem},
                                          {"since_unix", stats->since_unix},
                                          {"counts", counts},
                                          {"namespaces", namespaces},
                                          {"entries", stats->entries},
                                          {"bytes", stats->bytes},
                                          {"databases", stats->databases},
                                          {"max_size", config.max_size},
                                          {"max_entries", config.max_entries},
                                          {"max_age_seconds", config.max_age.count()}},
                           2)
              << "\n";
  } else {
    print_table(config.user_dir, *stats, config);
  }
  return 0;
}

}  // namespace

Runner add_stats_command(CLI::App& app) {
  auto args = std::make_shared<StatsArguments>();
  CLI::App* cmd = app.add_subcommand(
      "stats", "Show what every process counted (hits, compiles, time saved, evictions, ...)");
  auto* json = cmd->add_flag("--json", args->json, "Print JSON");
  cmd->add_flag("--prometheus", args->prometheus,
                "Print Prometheus text, for node_exporter's textfile collector")
      ->excludes(json);
  cmd->add_flag("--zero", args->zero, "Set every count to zero first");
  return [args] { return run_stats(*args); };
}

}  // namespace kcache::tool
