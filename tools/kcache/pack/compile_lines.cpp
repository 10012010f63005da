#include "pack/compile_lines.h"

#include <kcache/admin.h>
#include <kcache/advanced.h>
#include <kcache/cache.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "pack/line_compilers.h"
#include "pack/line_report.h"
#include "pack/progress.h"
#include "pack/time_account.h"
#include "pack/workers.h"

namespace kcache::tool {
namespace {

// --from-cache: the manifest's kernels the user cache already holds, for
// this target and toolchain, copied into the pack's cache (so they are not
// compiled again). Returns how many; a problem is a note, never a failure:
// what is not taken is compiled.
std::size_t take_from_user_cache(const std::vector<Line>& lines, const CompilerConfig& config,
                                 LineCompilers& compilers, Cache& pack_cache,
                                 const std::string& work) {
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
  std::map<std::string, std::vector<CacheKey>> keys_by_db;
  for (const Line& line : lines) {
    auto compiler = compiler_for(line, config, compilers);
    if (!compiler) continue;  // the pack says why when it gets to the line
    auto prepared = from_folder(line.cwd, [&] {
      return AdvancedCache(pack_cache).prepare(line.request, line.request.target, **compiler);
    });
    if (prepared) keys_by_db[prepared->target().db_basename()].push_back(prepared->key());
  }
  std::size_t taken = 0;
  std::error_code error;
  std::filesystem::create_directories(work, error);
  for (const auto& [db, keys] : keys_by_db) {
    const std::string copy = work + "/from-user-cache.kdb";
    ExportOptions only;
    only.keys = keys;
    auto exported = CacheAdmin(**user).export_db(db, copy, only);
    if (exported) {
      auto imported = CacheAdmin(pack_cache).import_package(copy);
      if (imported) taken += *imported;
    } else if (exported.status().code() != StatusCode::kNotFound) {
      std::cerr << "kcache: note: --from-cache: " << exported.status().message() << "\n";
    }
    std::filesystem::remove(copy, error);
  }
  return taken;
}

// Compiles (or finds in the work folder) one line's kernel.
Outcome pack_one(const Line& line, Cache& cache, const CompilerConfig& config,
                 LineCompilers& compilers) {
  Outcome outcome;
  auto compiler = compiler_for(line, config, compilers);
  if (!compiler) {
    outcome.kind = Outcome::Kind::kNoCompiler;
    outcome.message = compiler.status().message();
    return outcome;
  }
  const std::uint64_t store_failures = cache.stats().store_failures;
  auto kernel =
      from_folder(line.cwd, [&] { return cache.get_or_compile(line.request, **compiler); });
  if (!kernel) {
    outcome.message = kernel.status().message();
    // The compiler's log: why, which the summary shows.
    if (const std::string& log = kernel.status().details(); !log.empty()) {
      outcome.message += "\n" + log;
    }
    return outcome;
  }
  // Not kept (too large to store, the disk full): not in the package.
  if (kernel->tier == TierKind::kCompiled && cache.stats().store_failures > store_failures) {
    outcome.message =
        "compiled, but the work folder could not keep it (the warning above says why)";
    return outcome;
  }
  outcome.kind =
      kernel->tier == TierKind::kCompiled ? Outcome::Kind::kCompiled : Outcome::Kind::kReused;
  outcome.db = kernel->db;
  outcome.key_hex = kernel->key.hex();
  const std::string target_now =
      kernel->target.to_string() + "_" + std::to_string(kernel->target.units);
  outcome.keyed_anew = !line.recorded_key.empty() && line.recorded_target == target_now &&
                       kernel->key.hex() != line.recorded_key;
  return outcome;
}

// What an interrupted pack says (written by the signal handler, so made
// beforehand): what it keeps, and how to go on.
char interrupted_text[1024];
std::size_t interrupted_size = 0;

void on_interrupt(int signal) {
  (void)!::write(STDERR_FILENO, interrupted_text, interrupted_size);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void say_how_to_resume(const std::string& work) {
  // On a terminal the progress line is ended first; piped, there is none.
  const std::string text = std::string(::isatty(STDERR_FILENO) ? "\n" : "") +
                           "kcache: interrupted; what was compiled is kept in " + work +
                           ": run the same pack again to go on from there\n";
  interrupted_size = std::min(text.size(), sizeof interrupted_text);
  std::memcpy(interrupted_text, text.data(), interrupted_size);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal, on_interrupt);
}

// A process that compiles kernel after kernel keeps the memory its
// compiler frees for the next compile, instead of handing it back to the
// system and faulting it in again: NVRTC frees its ~100 MB each kernel, and
// with glibc's defaults (chunks over 128 KiB mapped and unmapped each
// time, the heap's top trimmed) 80 kernels took 123,000 page faults and
// 1.0 s of system time, against 10,400 and 0.13 s kept, the peak memory
// the same (docs/benchmarks.md). Only the tool's own process and workers:
// the library never changes its host's allocator.
void keep_freed_memory() {
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  ::mallopt(M_TOP_PAD, 64 << 20);
}

// How many jobs run: --jobs, or one per core; at most 4 a core, and no
// more than there are lines.
unsigned job_count(unsigned asked_for, std::size_t lines) {
  // Each job is a process with a compiler in it (tens to hundreds of MB):
  // more than a few per core only costs memory.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned asked = asked_for > 0 ? asked_for : cores;
  if (asked > 4 * cores) {
    std::cerr << "kcache: note: --jobs " << asked << " is more than 4 a core; " << 4 * cores
              << " jobs run\n";
    asked = 4 * cores;
  }
  return static_cast<unsigned>(std::min<std::size_t>(asked, lines));
}

// The command line a job runs: this one, as a worker of this process,
// told which backends' lines are left out.
std::vector<std::string> worker_arguments(const PackOptions& options) {
  std::vector<std::string> arguments = options.command_line;
  arguments.push_back("--worker-of");
  arguments.push_back(std::to_string(::getpid()));
  for (const auto& backend : options.leave_out) {
    arguments.push_back("--leave-out-backend");
    arguments.push_back(backend);
  }
  return arguments;
}

}  // namespace

CompiledLines compile_lines(const PackOptions& options, PackPlan& plan) {
  keep_freed_memory();
  const std::vector<Line>& lines = plan.read.lines;
  say_how_to_resume(plan.work);
  note_folders_not_here(lines);
  // Repeats found when their outcomes come in (lines alike otherwise than
  // same_kernel finds, that came to one key) join those found in reading.
  CompiledLines compiled(plan.read.repeats);
  if (options.from_cache) {
    compiled.from_user_cache =
        take_from_user_cache(lines, plan.config, plan.compilers, *plan.cache, plan.work);
  }
  compiled.jobs = job_count(options.jobs, lines.size());
  Progress progress(lines.size());
  compiled.started = std::chrono::steady_clock::now();
  auto record = [&](const Outcome& outcome) {
    const Line& line = lines[outcome.index];
    std::string said = compiled.tally.record(outcome, line);
    if (compiled.first_done < 0 && outcome.kind == Outcome::Kind::kCompiled) {
      // A kernel taken from the work folder is not one.
      compiled.first_done = seconds_since(compiled.started);
    }
    progress.done(line, said, outcome.kind != Outcome::Kind::kReused);
  };
  // A compiler that crashed took its worker along: said, as its line is
  // tried again (a second loss fails it, named at the end).
  auto retry = [&](std::size_t index, const std::string& why) {
    const std::string number = std::to_string(lines[index].number);
    progress.say("kcache: note: the job compiling line " + number + " ended (" + why + "); line " +
                 number + " is compiled again");
  };
  // Jobs are processes (pack/workers.h): the same command, as workers; one
  // too for --jobs 1, so that its compiler ends with the pack however the
  // pack ends (in this process, a kill left it running). There is a line
  // to pack (an empty manifest was said in planning), so a job at least.
  run_workers(worker_arguments(options), compiled.jobs, lines.size(), record, retry);
  compiled.seconds = seconds_since(compiled.started);
  return compiled;
}

int serve_as_worker(PackPlan& plan) {
  keep_freed_memory();
  const std::vector<Line>& lines = plan.read.lines;
  for (std::string text; std::getline(std::cin, text);) {
    const std::size_t index = std::strtoull(text.c_str(), nullptr, 10);
    if (index >= lines.size()) continue;
    Outcome outcome = pack_one(lines[index], *plan.cache, plan.config, plan.compilers);
    outcome.index = index;
    std::cout << encode_outcome(outcome) << "\n" << std::flush;
  }
  return 0;
}

}  // namespace kcache::tool
