// kcache list, show, extract: the entries of the user cache, one table or
// one entry whole.
#include <kcache/cache.h>
#include <kcache/options.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "support/human_text.h"
#include "support/json_text.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

struct ListArguments {
  bool json = false;
  std::string db, target, backend, kernel, older_than, newer_than, sort = "db";
};

nlohmann::json entry_json(const EntryInfo& e) {
  return {{"db", e.db},
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
}

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
  auto entries = cache->list();
  if (!entries) return report_failure(entries.status().message());
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  std::vector<EntryInfo> shown;
  for (const auto& e : *entries) {
    if (!args.db.empty() && e.db != args.db) continue;
    if (!args.target.empty() && !matches_target(e, args.target)) continue;
    if (!args.backend.empty() && e.backend != args.backend) continue;
    if (!args.kernel.empty() && e.kernels.find(args.kernel) == std::string::npos) continue;
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
  for (const auto& e : shown) {
    rows.push_back({e.db, e.key.hex().substr(0, 16), e.backend, e.failure ? "error" : "binary",
                    human_bytes(e.bytes), human_age(now - e.created_unix),
                    e.last_used_unix == 0 ? "-" : human_age(now - e.last_used_unix),
                    e.kernels.empty() ? "-" : e.kernels});
    total += e.stored_bytes;
  }
  if (!shown.empty()) print_columns(rows, {false, false, false, false, true, true, true, false});
  std::cout << shown.size() << (shown.size() == 1 ? " entry, " : " entries, ") << human_bytes(total)
            << " on disk";
  if (shown.size() != entries->size()) std::cout << " (of " << entries->size() << ")";
  std::cout << "\n";
  return 0;
}

int run_show(const std::string& key, const std::string& db, bool json) {
  auto cache = open_cache();
  if (!cache) return 1;
  EntryInfo info;
  if (int status = find_entry(*cache, key, db, info); status != 0) return status;
  auto entry = cache->read_entry(info.db, info.key);
  if (!entry) return report_failure(entry.status().message());
  if (!*entry) return report_failure("entry " + info.key.hex() + " went while it was read");
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  if (json) {
    nlohmann::json out = entry_json(info);
    out["material"] = (*entry)->material;
    nlohmann::json metadata = nlohmann::json::array();
    for (const auto& [field, value] : (*entry)->metadata) metadata.push_back({field, value});
    out["metadata"] = metadata;
    std::cout << json_text(out, 2) << "\n";
    return 0;
  }
  const auto row = [](const std::string& label, const std::string& value) {
    std::cout << bold(label) << std::string(12 - label.size(), ' ') << value << "\n";
  };
  row("key", info.key.hex());
  row("database", info.db);
  row("backend", info.backend);
  row("kind", info.failure ? "a remembered compile error (its log is the payload)" : "binary");
  row("target", info.target.empty() ? "-" : info.target);
  row("kernels", info.kernels.empty() ? "-" : info.kernels);
  row("size", human_bytes(info.bytes) + " (" + human_bytes(info.stored_bytes) + " stored)");
  row("created", utc_time(info.created_unix) + " (" + human_age(now - info.created_unix) + " ago)");
  row("last used", info.last_used_unix == 0 ? "-"
                                            : utc_time(info.last_used_unix) + " (" +
                                                  human_age(now - info.last_used_unix) + " ago)");
  if (info.compile_micros > 0) {
    std::ostringstream ms;
    ms << std::fixed << std::setprecision(1) << info.compile_micros / 1000.0 << " ms";
    row("compiled in", ms.str());
  }
  for (const auto& [field, value] : (*entry)->metadata) row("metadata", field + " = " + value);
  std::cout << bold("key material") << "\n";
  std::istringstream material((*entry)->material);
  for (std::string line; std::getline(material, line);) {
    if (line.size() > 160) line = line.substr(0, 157) + "...";
    std::cout << "  " << dim(line) << "\n";
  }
  return 0;
}

int run_extract(const std::string& key, const std::string& db, const std::string& output,
                bool json) {
  auto cache = open_cache();
  if (!cache) return 1;
  EntryInfo info;
  if (int status = find_entry(*cache, key, db, info); status != 0) return status;
  if (Status s = check_output_path(output, "--output " + output); !s.is_ok()) {
    return report_failure(s.message());
  }
  auto entry = cache->read_entry(info.db, info.key);
  if (!entry) return report_failure(entry.status().message());
  if (!*entry) return report_failure("entry " + info.key.hex() + " went while it was read");
  if (Status s = write_output_file(output, "--output " + output, (*entry)->binary); !s.is_ok()) {
    return report_failure(s.message());
  }
  if (json) {
    std::cout << json_text(nlohmann::json{{"key", info.key.hex()},
                                          {"db", info.db},
                                          {"output", output},
                                          {"bytes", (*entry)->binary.size()},
                                          {"failure", info.failure}},
                           2)
              << "\n";
  } else {
    std::cout << "wrote " << human_bytes((*entry)->binary.size()) << " of "
              << (info.failure ? "compile log of " : "") << info.key.hex().substr(0, 16) << " ("
              << info.db << ") to " << output << "\n";
  }
  return 0;
}

}  // namespace

// The one entry whose key starts with `prefix`: 0 with it in `found`, or
// the exit status after saying why not.
int find_entry(Cache& cache, const std::string& prefix, const std::string& db, EntryInfo& found) {
  std::string lower;
  for (char c : prefix) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.size() < 4 || lower.size() > 32 ||
      lower.find_first_not_of("0123456789abcdef") != std::string::npos) {
    std::cerr << "kcache: '" << prefix
              << "' is not a key: 4 to 32 hex digits, as `kcache list` shows them\n";
    return 2;
  }
  auto entries = cache.list();
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

Runner add_show_command(CLI::App& app) {
  auto key = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("show", "Show one entry whole: what it is, its key material");
  cmd->add_option("key", *key, "The key, or its start (as `kcache list` shows it)")->required();
  cmd->add_option("--db", *db, "The database, when the key is in several (e.g. gfx906_60)");
  cmd->add_flag("--json", *json, "Print JSON");
  return [key, db, json] { return run_show(*key, *db, *json); };
}

Runner add_extract_command(CLI::App& app) {
  auto key = std::make_shared<std::string>();
  auto db = std::make_shared<std::string>();
  auto output = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("extract", "Write one entry's binary to a file");
  cmd->add_option("key", *key, "The key, or its start (as `kcache list` shows it)")->required();
  cmd->add_option("--db", *db, "The database, when the key is in several (e.g. gfx906_60)");
  cmd->add_option("--output,-o", *output, "The file to write")->required()->check(names_a_path());
  cmd->add_flag("--json", *json, "Print JSON");
  return [key, db, output, json] { return run_extract(*key, *db, *output, *json); };
}

}  // namespace kcache::tool
