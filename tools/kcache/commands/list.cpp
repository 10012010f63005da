// kcache list: the entries of the user cache, one table (or JSON), with
// filters and an order.
#include <kcache/admin.h>
#include <kcache/cache.h>
#include <kcache/options.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/user_cache.h"

namespace kcache::tool {
namespace {

struct ListArguments {
  bool json = false;
  std::string db, target, backend, kernel, older_than, newer_than, sort = "db";
};

// A duration option (--older-than 7d) in seconds; nullopt after saying why.
std::optional<std::int64_t> seconds_option(const std::string& option, const std::string& value) {
  auto ms = parse_duration_ms(value);
  if (!ms) {
    std::cerr << "kcache: " << option << " '" << value
              << "' is not a duration such as 90m, 12h or 30d\n";
    return std::nullopt;
  }
  return static_cast<std::int64_t>(*ms / 1000);
}

bool matches_target(const EntryInfo& e, const std::string& target) {
  return e.db == target || e.target == target ||
         (e.db.size() > target.size() && e.db.starts_with(target) && e.db[target.size()] == '_');
}

// Prints `rows` (the first is the header) in aligned columns; the last
// column is not padded.
void print_columns(const std::vector<std::vector<std::string>>& rows,
                   const std::vector<bool>& right_aligned) {
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      const std::string& cell = rows[r][c];
      const std::string pad(width[c] - cell.size(), ' ');
      if (c + 1 == rows[r].size()) {
        line += cell;
      } else {
        line += (right_aligned[c] ? pad + cell : cell + pad) + "  ";
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << (r == 0 ? bold(line) : line) << "\n";
  }
}

int run_list(const ListArguments& args) {
  static const std::vector<std::string> kSorts = {"db", "age", "size", "used", "key"};
  if (std::find(kSorts.begin(), kSorts.end(), args.sort) == kSorts.end()) {
    std::cerr << "kcache: --sort '" << args.sort << "' is not one of db, age, size, used, key\n";
    return 2;
  }
  std::optional<std::int64_t> older, newer;
  if (!args.older_than.empty() && !(older = seconds_option("--older-than", args.older_than))) {
    return 2;
  }
  if (!args.newer_than.empty() && !(newer = seconds_option("--newer-than", args.newer_than))) {
    return 2;
  }
  auto cache = open_cache();
  if (!cache) return 1;
  auto entries = CacheAdmin(*cache).list();
  if (!entries) return report_failure(entries.status().message());
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  std::vector<EntryInfo> shown;
  for (const auto& e : *entries) {
    if (!args.db.empty() && e.db != args.db) continue;
    if (!args.target.empty() && !matches_target(e, args.target)) continue;
    if (!args.backend.empty() && e.backend != args.backend) continue;
    if (!args.kernel.empty() && e.kernels.find(args.kernel) == std::string::npos &&
        e.client_key.find(args.kernel) == std::string::npos) {
      continue;
    }
    if (older && now - e.created_unix < *older) continue;
    if (newer && now - e.created_unix > *newer) continue;
    shown.push_back(e);
  }
  std::stable_sort(shown.begin(), shown.end(), [&](const EntryInfo& a, const EntryInfo& b) {
    if (args.sort == "age") return a.created_unix < b.created_unix;  // oldest first
    if (args.sort == "size") return a.stored_bytes > b.stored_bytes;
    if (args.sort == "used") return a.last_used_unix < b.last_used_unix;  // least recent first
    if (args.sort == "key") return a.key.hex() < b.key.hex();
    return a.db != b.db ? a.db < b.db : a.created_unix < b.created_unix;
  });
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : shown) out.push_back(entry_json(e));
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  std::uint64_t total = 0;
  std::vector<std::vector<std::string>> rows = {
      {"DATABASE", "KEY", "BACKEND", "KIND", "SIZE", "AGE", "USED", "KERNELS"}};
  // A kernel's names; a client entry's key, escaped for the terminal.
  const auto what = [](const EntryInfo& e) -> std::string {
    if (!e.client_namespace.empty()) {
      const std::string key =
          e.client_key.size() > 64 ? e.client_key.substr(0, 61) + "..." : e.client_key;
      return tool::shown(key);
    }
    return e.kernels.empty() ? "-" : e.kernels;
  };
  for (const auto& e : shown) {
    rows.push_back({e.db, e.key.hex().substr(0, 16), e.backend, e.failure ? "error" : "binary",
                    human_bytes(e.bytes), human_age(now - e.created_unix),
                    e.last_used_unix == 0 ? "-" : human_age(now - e.last_used_unix), what(e)});
    total += e.stored_bytes;
  }
  if (!shown.empty()) print_columns(rows, {false, false, false, false, true, true, true, false});
  std::cout << shown.size() << (shown.size() == 1 ? " entry, " : " entries, ") << human_bytes(total)
            << " on disk";
  if (shown.size() != entries->size()) std::cout << " (of " << entries->size() << ")";
  std::cout << "\n";
  return 0;
}

}  // namespace

Runner add_list_command(CLI::App& app) {
  auto args = std::make_shared<ListArguments>();
  CLI::App* cmd = app.add_subcommand("list", "List the entries of the user cache");
  cmd->add_flag("--json", args->json, "Print JSON");
  cmd->add_option("--db", args->db, "Only this database (e.g. gfx906_60)");
  cmd->add_option("--target", args->target,
                  "Only this target: a database, or an architecture (sm_90, gfx90a)");
  cmd->add_option("--backend", args->backend, "Only this backend (opencl, nvrtc, hip, command)");
  cmd->add_option("--kernel", args->kernel, "Only entries with a kernel whose name holds this");
  cmd->add_option("--older-than", args->older_than, "Only entries made longer ago (e.g. 30d)");
  cmd->add_option("--newer-than", args->newer_than, "Only entries made more recently (e.g. 1h)");
  cmd->add_option("--sort", args->sort,
                  "db (then age, the default), age (oldest first), size (largest first), used "
                  "(least recently first) or key");
  return [args] { return run_list(*args); };
}

}  // namespace kcache::tool
