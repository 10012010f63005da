// kcache pack: compile every kernel of a manifest (KCACHE_RECORD's, docs/
// formats.md §4) for one target, in parallel, into a read-only package.
//
// It compiles through a cache of its own whose user tier, in the work
// folder (`--work`, default <output>.pack), is the resume store: a pack run
// again compiles only what it had not stored. The package is written from
// that tier whole, then renamed into place. A line that does not parse or
// a kernel that fails is reported and skipped; the package still holds the
// others and the exit status is 1.
#include <kcache/cache.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "commands.h"
#include "compiler_flags.h"
#include "manifest_lines.h"
#include "named_files.h"
#include "pack_progress.h"

namespace kcache::tool {
namespace {

struct PackArgs {
  std::string manifest;
  std::string target;
  std::string output;
  std::string work;
  std::string backend;
  std::string input_name;
  std::string sign;
  CompilerFlags compiler;
  unsigned jobs = 0;
  bool from_cache = false;
};

// --from-cache: the manifest's kernels the user cache already holds, for
// this target and toolchain, copied into the pack's cache (so they are not
// compiled again). Returns how many; a problem is a note, never a failure:
// what is not taken is compiled.
std::size_t take_from_user_cache(const std::vector<Line>& lines, const CompilerConfig& config,
                                 Cache& pack_cache, const std::string& work) {
  CacheOptions options;
  options.record_path = "";  // the pack's lookups are not a program's requests
  auto user = Cache::open(options);
  if (!user || !(*user)->config().enabled) {
    std::cerr << "kcache: note: --from-cache: the user cache is "
              << (user ? "disabled (" + (*user)->config().disabled_reason + ")"
                       : user.status().message())
              << "; every kernel is compiled\n";
    return 0;
  }
  std::map<std::string, std::unique_ptr<Compiler>> compilers;
  std::map<std::string, std::vector<CacheKey>> keys_by_db;
  for (const Line& line : lines) {
    const CompilerConfig mine = config_for(line, config);
    auto& compiler = compilers[config_name(mine)];
    if (!compiler) {
      auto made = make_compiler(mine);
      if (!made) continue;  // the pack says why when it gets to the line
      compiler = std::move(*made);
    }
    auto prepared = pack_cache.prepare(line.request, line.request.target, *compiler);
    if (prepared) keys_by_db[prepared->target().db_basename()].push_back(prepared->key());
  }
  std::size_t taken = 0;
  std::error_code error;
  std::filesystem::create_directories(work, error);
  for (const auto& [db, keys] : keys_by_db) {
    const std::string copy = work + "/from-user-cache.kdb";
    ExportOptions only;
    only.keys = keys;
    auto exported = (*user)->export_db(db, copy, only);
    if (exported) {
      auto imported = pack_cache.import_package(copy);
      if (imported) taken += *imported;
    } else if (exported.status().code() != StatusCode::kNotFound) {
      std::cerr << "kcache: note: --from-cache: " << exported.status().message() << "\n";
    }
    std::filesystem::remove(copy, error);
  }
  return taken;
}

int run_pack(const PackArgs& args) {
  std::ifstream in(args.manifest, std::ios::binary);
  if (!in) return report_failure("--manifest " + args.manifest + ": cannot be read");
  if (Status s = check_output_path(args.output, "--output " + args.output); !s.is_ok()) {
    return report_failure(s.message());
  }
  auto target = Target::parse(args.target);
  if (!target) {
    std::cerr << "kcache: --target: " << target.status().message() << "\n";
    return 2;
  }
  // A key that cannot sign is found before any compile, not after.
  if (!args.sign.empty()) {
    if (int bad = check_key_option("--sign", args.sign); bad != 0) return bad;
  }
  // The package's folder is made as the work folder is.
  if (const auto folder = std::filesystem::path(args.output).parent_path(); !folder.empty()) {
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error)
      return report_failure("--output: cannot create " + folder.string() + ": " + error.message());
  }

  std::vector<Line> lines;
  std::vector<std::string> problems;
  std::size_t number = 0;
  std::size_t other_backends = 0;
  for (std::string text; std::getline(in, text);) {
    ++number;
    if (text.empty()) continue;
    auto line = parse_line(text, number);
    if (!line) {
      problems.push_back(line.status().message());
      continue;
    }
    if (!args.backend.empty() && line->backend != args.backend) {
      ++other_backends;
      continue;
    }
    line->request.target = *target;
    lines.push_back(std::move(*line));
  }
  if (lines.empty()) {
    for (const auto& problem : problems) std::cerr << "kcache: " << problem << "\n";
    return report_failure("--manifest " + args.manifest + " holds no kernel to pack" +
                          (other_backends ? " for backend " + args.backend : ""));
  }

  // The pack's own cache: its user tier in the work folder, nothing else
  // (no package, no recording, failures not remembered).
  const std::string work = args.work.empty() ? args.output + ".pack" : args.work;
  CacheOptions options;
  options.cache_dir = work;
  options.system_db_path = "";
  options.disable_cache = false;
  options.record_path = "";
  options.failure_ttl = std::chrono::milliseconds(0);
  // A resume store need not flush each entry (500 flushes were a floor no
  // job count removed): a torn entry reads back as a miss and is compiled
  // again; the package itself is written whole and synced.
  options.sync = false;
  auto cache = Cache::open(options);
  if (!cache) return report_failure(cache.status().message());

  CompilerConfig config = config_of(args.compiler);
  config.command_input_name = args.input_name;
  const std::size_t from_user =
      args.from_cache ? take_from_user_cache(lines, config, **cache, work) : 0;

  const unsigned jobs =
      args.jobs > 0 ? args.jobs : std::max(1u, std::thread::hardware_concurrency());
  Progress progress(lines.size());
  std::atomic<std::size_t> next{0};
  std::mutex results_mutex;
  std::mutex compilers_mutex;
  std::vector<std::string> failed;
  std::vector<CacheKey> packed;  // what the package holds: this manifest's kernels only
  std::set<std::string> dbs;
  std::size_t compiled = 0;
  std::size_t reused = 0;
  std::size_t keyed_anew = 0;  // recorded for this target, yet another key now
  auto worker = [&] {
    // One compiler per config and thread: no compiler is shared between
    // threads.
    std::map<std::string, std::unique_ptr<Compiler>> compilers;
    for (std::size_t i; (i = next.fetch_add(1)) < lines.size();) {
      const Line& line = lines[i];
      std::string outcome;
      const CompilerConfig mine = config_for(line, config);
      auto& compiler = compilers[config_name(mine)];
      Status problem;
      if (!compiler) {
        // One at a time: a runtime's first load (libOpenCL's platform
        // list, say) is not safe to race.
        std::lock_guard creating(compilers_mutex);
        auto made = make_compiler(mine);
        if (made) {
          compiler = std::move(*made);
        } else {
          problem = made.status();
        }
      }
      if (compiler) {
        auto kernel = (*cache)->get_or_compile(line.request, *compiler);
        if (kernel) {
          std::lock_guard lock(results_mutex);
          dbs.insert(kernel->db);
          packed.push_back(kernel->key);
          const std::string target_now =
              kernel->target.to_string() + "_" + std::to_string(kernel->target.units);
          if (!line.recorded_key.empty() && line.recorded_target == target_now &&
              kernel->key.hex() != line.recorded_key) {
            ++keyed_anew;
          }
          (kernel->tier == TierKind::kCompiled ? compiled : reused) += 1;
          outcome = kernel->tier == TierKind::kCompiled ? "compiled" : "already packed";
        } else {
          problem = kernel.status();
        }
      }
      if (!problem.is_ok()) {
        outcome = "failed: " + problem.message();
        std::lock_guard lock(results_mutex);
        failed.push_back("line " + std::to_string(line.number) + ": " + problem.message());
      }
      progress.done(line, outcome);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < std::min<std::size_t>(jobs, lines.size()); ++j)
    threads.emplace_back(worker);
  worker();
  for (auto& thread : threads) thread.join();

  int status = problems.empty() && failed.empty() ? 0 : 1;
  for (const auto& problem : problems) std::cerr << "kcache: skipped " << problem << "\n";
  for (const auto& failure : failed) std::cerr << "kcache: failed " << failure << "\n";
  if (dbs.empty()) return report_failure("no kernel could be packed; no package written");
  if (dbs.size() > 1) {
    return report_failure("the kernels went to " + std::to_string(dbs.size()) +
                          " databases (one target per package); nothing written");
  }
  const std::string db = *dbs.begin();
  ExportOptions export_options;
  export_options.signing_key = args.sign;
  export_options.keys = std::move(packed);
  auto count = (*cache)->export_db(db, args.output, export_options);
  if (!count) return report_failure("writing " + args.output + ": " + count.status().message());
  std::cout << "packed " << *count << " kernels for " << db << " into " << args.output << " ("
            << compiled << " compiled, " << reused - std::min(reused, from_user) << " already in "
            << work << ", "
            << (args.from_cache ? std::to_string(from_user) + " from the user cache, " : "")
            << failed.size() << " failed, " << problems.size() << " lines skipped"
            << (args.sign.empty() ? "" : "; signed") << ")\n";
  if (keyed_anew > 0) {
    std::cerr << "kcache: note: " << keyed_anew
              << " kernels recorded for this target have another key now (the compiler, a "
                 "header or a setting changed since they were recorded): the package serves "
                 "the requests of the toolchain it was packed with\n";
  }
  if (std::filesystem::path(args.output).filename() != db + ".kdb") {
    std::cerr << "kcache: note: the system tier looks for " << db << ".kdb; rename " << args.output
              << " when installing it\n";
  }
  return status;
}

}  // namespace

Runner add_pack_command(CLI::App& app) {
  auto args = std::make_shared<PackArgs>();
  CLI::App* cmd = app.add_subcommand(
      "pack", "Compile every kernel of a manifest (KCACHE_RECORD) for a target into a package");
  cmd->add_option("--manifest", args->manifest, "The manifest (JSON lines)")->required();
  cmd->add_option("--target", args->target, "Target, e.g. sm_90_132, gfx90a, or the OpenCL arch")
      ->required();
  cmd->add_option("--output", args->output, "The package to write, <db>.kdb")->required();
  cmd->add_option("--work", args->work,
                  "Folder of the pack's own cache, kept to resume (default: <output>.pack)");
  cmd->add_option("--jobs,-j", args->jobs, "Kernels compiled at once (default: one per core)");
  cmd->add_option("--backend", args->backend, "Only the manifest's kernels of this backend")
      ->check(CLI::IsMember(compiler_backends()));
  add_compiler_flags(cmd, args->compiler, " (default: the recorded one)");
  cmd->add_option("--input-name", args->input_name,
                  "command backend: file name {in} gets (default: the recorded one)");
  cmd->add_option("--sign", args->sign, "Sign the package with this private key (kcache keygen)");
  cmd->add_flag("--from-cache", args->from_cache,
                "Take the kernels the user cache already holds for this target instead of "
                "compiling them");
  return [args] { return run_pack(*args); };
}

}  // namespace kcache::tool
