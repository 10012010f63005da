// kcache prune: brings the user cache within its limits now (what a
// background pass does after a put takes it past one), with the limits
// given in place of KCACHE_MAX_SIZE, KCACHE_MAX_ENTRIES, KCACHE_MAX_AGE.
#include <kcache/admin.h>
#include <kcache/cache.h>

#include <iostream>
#include <memory>
#include <string>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

struct PruneArguments {
  std::string max_size, max_entries, max_age;
  bool json = false;
};

std::string limit_text(std::uint64_t value, bool bytes) {
  if (value == 0) return "none";
  return bytes ? human_bytes(value) : std::to_string(value);
}

// "1 entry", "3 entries".
std::string count_of(std::uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "30d", "12h", "90m", "45s": the largest unit that divides it.
std::string age_text(std::int64_t seconds) {
  if (seconds == 0) return "none";
  for (auto [unit, size] : {std::pair{"w", 604800}, {"d", 86400}, {"h", 3600}, {"m", 60}}) {
    if (seconds % size == 0) return std::to_string(seconds / size) + unit;
  }
  return std::to_string(seconds) + "s";
}

// The limits given, checked: 2 (a usage error, said) when one does not parse.
int read_limits(const PruneArguments& args, PruneOptions& options) {
  const auto bad = [](const std::string& option, const std::string& value,
                      const std::string& expected) {
    std::cerr << "kcache: " << option << " '" << value << "' is not " << expected << "\n";
    return 2;
  };
  if (!args.max_size.empty()) {
    options.max_size = parse_size(args.max_size);
    if (!options.max_size) {
      return bad("--max-size", args.max_size, "a size such as 4G, 500M or 0 (no limit)");
    }
  }
  if (!args.max_entries.empty()) {
    options.max_entries = parse_count(args.max_entries);
    if (!options.max_entries) {
      return bad("--max-entries", args.max_entries, "a whole number such as 100000, or 0");
    }
  }
  if (!args.max_age.empty()) {
    auto ms = parse_duration_ms(args.max_age);
    if (!ms) return bad("--max-age", args.max_age, "a duration such as 30d, 12h or 0");
    options.max_age = std::chrono::seconds(*ms / 1000);
  }
  return 0;
}

int run_prune(const PruneArguments& args) {
  PruneOptions options;
  if (int usage = read_limits(args, options); usage != 0) return usage;
  auto cache = open_cache();
  if (!cache) return 1;
  auto report = CacheAdmin(*cache).prune(options);
  if (!report) return report_failure(report.status().message());
  const std::string& dir = cache->config().user_dir;
  if (!report->ran) {
    return report_failure("another process has been pruning " + dir +
                          " for a minute; nothing was done (try again later)");
  }
  if (args.json) {
    std::cout << json_text(nlohmann::json{{"user_dir", dir},
                                          {"max_size", report->max_size},
                                          {"max_entries", report->max_entries},
                                          {"max_age_seconds", report->max_age_seconds},
                                          {"bytes_before", report->bytes_before},
                                          {"entries_before", report->entries_before},
                                          {"bytes_after", report->bytes_after},
                                          {"entries_after", report->entries_after},
                                          {"evicted", report->evicted},
                                          {"expired", report->expired},
                                          {"databases_compacted", report->databases_compacted}},
                           2)
              << "\n";
    return 0;
  }
  std::cout << "pruned " << dir << ": " << count_of(report->evicted, "entry", "entries")
            << " evicted (least recently used), " << report->expired << " expired, "
            << count_of(report->databases_compacted, "database", "databases") << " compacted\n"
            << "now " << count_of(report->entries_after, "entry", "entries") << ", "
            << human_bytes(report->bytes_after) << " (was " << report->entries_before << ", "
            << human_bytes(report->bytes_before) << "); limits: size "
            << limit_text(report->max_size, true) << ", entries "
            << limit_text(report->max_entries, false) << ", age "
            << age_text(report->max_age_seconds) << "\n";
  return 0;
}

}  // namespace

Runner add_prune_command(CLI::App& app) {
  auto args = std::make_shared<PruneArguments>();
  CLI::App* cmd = app.add_subcommand(
      "prune", "Evict the entries used longest ago until the user cache is within its limits");
  cmd->add_option("--max-size", args->max_size,
                  "Size limit for this run (e.g. 500M, 4G; 0: none; default KCACHE_MAX_SIZE)");
  cmd->add_option("--max-entries", args->max_entries,
                  "Entry limit for this run (0: none; default KCACHE_MAX_ENTRIES)");
  cmd->add_option("--max-age", args->max_age,
                  "Evict entries unused for this long (e.g. 30d, 12h; default KCACHE_MAX_AGE)");
  cmd->add_flag("--json", args->json, "Print JSON");
  return [args] { return run_prune(*args); };
}

}  // namespace kcache::tool
