// kcache gc: removes what no one will use again (other versions' folders,
// entries of compilers not seen for a while, old quarantined files). On a
// terminal it only says what that is unless --yes; in a script (no
// terminal) it acts unless --dry-run.
#include <kcache/admin.h>
#include <kcache/cache.h>
#include <kcache/options.h>

#include <unistd.h>

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

struct GcArguments {
  bool yes = false;
  bool dry_run = false;
  bool json = false;
  std::string unused_for = "30d";
};

nlohmann::json items_json(const std::vector<GcReport::Item>& items) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& item : items) {
    out.push_back({{"what", item.what},
                   {"path", item.path},
                   {"bytes", item.bytes},
                   {"entries", item.entries},
                   {"last_used", item.last_used_unix}});
  }
  return out;
}

int run_gc(const GcArguments& args) {
  auto ms = parse_duration_ms(args.unused_for);
  if (!ms) {
    std::cerr << "kcache: --unused-for '" << args.unused_for
              << "' is not a duration such as 30d, 12h or 2w\n";
    return 2;
  }
  GcOptions options;
  options.unused_for = std::chrono::seconds(*ms / 1000);
  options.dry_run = args.dry_run || (!args.yes && ::isatty(STDOUT_FILENO) == 1);
  auto cache = open_cache();
  if (!cache) return 1;
  auto report = CacheAdmin(*cache).gc(options);
  if (!report) return report_failure(report.status().message());
  if (args.json) {
    std::cout << json_text(nlohmann::json{{"removed", report->removed},
                                          {"bytes", report->bytes},
                                          {"version_folders", items_json(report->version_folders)},
                                          {"compilers", items_json(report->compilers)},
                                          {"quarantined", items_json(report->quarantined)},
                                          {"kept", items_json(report->kept)}},
                           2)
              << "\n";
    return 0;
  }
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  const std::size_t count =
      report->version_folders.size() + report->compilers.size() + report->quarantined.size();
  if (count == 0) {
    std::cout << "nothing to collect in " << cache->config().user_dir << "\n";
  } else {
    std::cout << (report->removed ? "removed:" : bold("would remove (a dry run; --yes to act):"))
              << "\n";
  }
  for (const auto& item : report->version_folders) {
    std::cout << "  the folder of " << item.what << ", " << human_bytes(item.bytes) << ": "
              << item.path << "\n";
  }
  for (const auto& item : report->compilers) {
    std::cout << "  " << item.entries << (item.entries == 1 ? " entry" : " entries") << " ("
              << human_bytes(item.bytes) << ") in " << item.path << " of the compiler " << item.what
              << ", last used " << human_age(now - item.last_used_unix) << " ago\n";
  }
  std::uint64_t quarantined = 0;
  for (const auto& item : report->quarantined) quarantined += item.bytes;
  if (!report->quarantined.empty()) {
    std::cout << "  " << report->quarantined.size() << " quarantined files ("
              << human_bytes(quarantined) << ") older than " << args.unused_for << "\n";
  }
  for (const auto& item : report->kept) {
    std::cout << dim("  left alone: " + item.path + " (" + item.what + ")") << "\n";
  }
  if (count > 0) {
    std::cout << human_bytes(report->bytes) << (report->removed ? " freed" : " to free") << "\n";
  }
  return 0;
}

}  // namespace

Runner add_gc_command(CLI::App& app) {
  auto args = std::make_shared<GcArguments>();
  CLI::App* cmd = app.add_subcommand(
      "gc",
      "Remove other versions' folders, entries of compilers not used for a while, old "
      "quarantined files (on a terminal: a dry run unless --yes)");
  auto* yes = cmd->add_flag("--yes,-y", args->yes, "Remove them (needed on a terminal)");
  cmd->add_flag("--dry-run,-n", args->dry_run, "Only say what would be removed")->excludes(yes);
  cmd->add_option("--unused-for", args->unused_for,
                  "A compiler's entries go when none was used for this long (default 30d)");
  cmd->add_flag("--json", args->json, "Print JSON");
  return [args] { return run_gc(*args); };
}

}  // namespace kcache::tool
