// kcache pack: compile every kernel of a manifest (KCACHE_RECORD's, docs/
// formats.md §4) for one target, in parallel, into a read-only package.
//
// It compiles through a cache of its own whose user tier, in the work
// folder (`--work`, default <output>.pack), is the resume store: a pack run
// again compiles only what it had not stored. The package is written from
// that tier whole, then renamed into place. A line that does not parse or
// a kernel that fails is reported and skipped; the package still holds the
// others and the exit status is 1.
#include <fcntl.h>
#include <kcache/cache.h>
#include <kcache/trust.h>
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "commands.h"
#include "env/unique_fd.h"
#include "layers/logged_compiler.h"
#include "manifest_lines.h"
#include "pack_progress.h"
#include "pack_report.h"
#include "pack_tally.h"
#include "pack_without_driver.h"
#include "pack_workers.h"
#include "support/compiler_flags.h"
#include "support/human_text.h"
#include "support/user_paths.h"

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
  // The manifest, and the programs and libraries its lines run, used even
  // when another user could have written them (include/kcache/trust.h).
  bool trust_manifest = false;
  bool trust_compiler = false;
  int worker_of = 0;  // run as one of this pack process's jobs (pack_workers.h)
  // Backends whose runtime takes no such target: their lines are left out
  // (the pack finds them; its workers are told).
  std::vector<std::string> leave_out;
};

// Runs `work` from `folder` when one is given and is here, then goes back
// to the folder the pack runs in: a manifest line is keyed and compiled
// from where its program ran, so that its relative include folders, and
// the working folder PoCL and NVRTC search, are found as the program found
// them. Jobs are processes, each on one line at a time: the working folder
// is the line's alone.
template <typename Work>
auto from_folder(const std::string& folder, Work&& work) {
  UniqueFd here(folder.empty() ? -1 : ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const bool moved = here.get() >= 0 && ::chdir(folder.c_str()) == 0;
  auto result = work();
  if (moved) (void)!::fchdir(here.get());
  return result;
}

// The compilers of a process, one per config (config_name), and for the
// command backend one per folder.
using Compilers = std::map<std::string, std::unique_ptr<Compiler>>;

// The compiler `line` is compiled with, made on first use, from the line's
// folder as its compiles are: a command's program and the files its
// command line names, when relative (`./cc.sh {in} {out}`), are the ones
// where the program ran, so a command's compiler is kept per folder.
Result<Compiler*> compiler_for(const Line& line, const CompilerConfig& config,
                               Compilers& compilers) {
  const CompilerConfig mine = config_for(line, config);
  std::string name = config_name(mine);
  if (mine.backend == "command") name += "\nin " + line.cwd;
  auto& compiler = compilers[name];
  if (!compiler) {
    auto made = from_folder(line.cwd, [&] { return make_compiler(mine); });
    if (!made) return made.status();
    // The compile's log kept with the binary, as the drop-in layers keep
    // it: a program under a layer served from the package sees the log
    // (warnings) its own compile gave. Not part of the key.
    compiler = std::make_unique<layer::LoggedCompiler>(std::move(*made));
  }
  return compiler.get();
}

// The programs and libraries the compilers of `lines` run or load (each
// found from its line's folder, as its compiles are) that another user
// could have written or replaced, each once with the first line that
// runs it and why: a manifest's lines are commands, run as the user who
// packs. Asked before any compiler is made (making one may load a library
// or stat a program).
std::vector<std::string> untrusted_compilers(const std::vector<Line>& lines,
                                             const CompilerConfig& config) {
  std::vector<std::string> said;
  std::set<std::string> asked;  // config and folder
  std::set<std::string> files_seen;
  for (const Line& line : lines) {
    const CompilerConfig mine = config_for(line, config);
    if (!asked.insert(config_name(mine) + "\nin " + line.cwd).second) continue;
    const auto files = from_folder(line.cwd, [&] { return files_a_compiler_runs(mine); });
    for (const std::string& file : files) {
      if (!files_seen.insert(file).second) continue;
      if (auto why = untrusted_file_reason(file)) {
        said.push_back(file + " (line " + std::to_string(line.number) + "'s " + line.backend +
                       " compiler): " + *why);
      }
    }
  }
  return said;
}

// Why the runtime of `line`'s backend cannot take its target: OpenCL
// compiles for this machine's device alone, which only its runtime names,
// and an NVRTC knows the archs it supports (sm_9000 is named like one;
// target_misfit tells an AMD arch for NVRTC and such by the name, loading
// nothing). Asked once a backend, before any folder is made or worker
// started: that backend's lines are then left out (and when no line is
// left, the target is a usage error). nullopt when it fits or when the
// runtime cannot say (the workers then say why). For HIP, comgr's list of
// the archs it knows is asked (kUnavailable when the target is not on
// it), never hipRTC, which may abort its process on some archs: its
// workers compile.
std::optional<std::string> runtime_misfit(const Line& line, const CompilerConfig& config,
                                          Compilers& compilers) {
  const std::string& backend = line.backend;
  if (backend != "opencl" && backend != "nvrtc" && backend != "hip") return std::nullopt;
  auto compiler = compiler_for(line, config, compilers);
  if (!compiler) return std::nullopt;
  auto fits = (*compiler)->resolve_target(line.request.target);
  const StatusCode code = fits ? StatusCode::kOk : fits.status().code();
  if (code == StatusCode::kInvalidArgument ||
      (backend == "hip" && code == StatusCode::kUnavailable)) {
    return fits.status().message();
  }
  return std::nullopt;
}

// --from-cache: the manifest's kernels the user cache already holds, for
// this target and toolchain, copied into the pack's cache (so they are not
// compiled again). Returns how many; a problem is a note, never a failure:
// what is not taken is compiled.
std::size_t take_from_user_cache(const std::vector<Line>& lines, const CompilerConfig& config,
                                 Compilers& compilers, Cache& pack_cache, const std::string& work) {
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
      return pack_cache.prepare(line.request, line.request.target, **compiler);
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

// Compiles (or finds in the work folder) one line's kernel.
Outcome pack_one(const Line& line, Cache& cache, const CompilerConfig& config,
                 Compilers& compilers) {
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

// Whether the package can be written at `output`, found before any
// compile: not a link or other non-file, its folder made (as the work
// folder is) and taking a new file. 0, or the exit status, said.
int check_package_path(const std::string& output) {
  if (Status s = check_package_output(output, "--output " + output); !s.is_ok()) {
    return report_failure(s.message());
  }
  // Made 0755 whatever the umask: the work folder goes beside the package
  // by default, and the cache refuses one inside a folder others can write.
  if (const auto folder = std::filesystem::path(output).parent_path(); !folder.empty()) {
    if (Status s = make_folders(folder.string(), 0755); !s.is_ok()) {
      return report_failure("--output: " + s.message());
    }
  }
  if (Status s = check_can_create(output, "--output " + output); !s.is_ok()) {
    return report_failure(s.message());
  }
  return 0;
}

// Whether `a` and `b` name one path, whether or not it exists yet.
bool is_same_path(const std::string& a, const std::string& b) {
  if (same_file(a, b)) return true;
  auto normal = [](const std::string& path, std::error_code& error) {
    auto made = std::filesystem::absolute(path, error).lexically_normal();
    return made.has_filename() ? made : made.parent_path();  // "x/" names x
  };
  std::error_code error_a, error_b;
  const auto normal_a = normal(a, error_a);
  const auto normal_b = normal(b, error_b);
  return !error_a && !error_b && normal_a == normal_b;
}

// Whether `inner` lies beneath `outer` (a folder inside a path meant for
// a file), compared as written, made absolute.
bool is_beneath(const std::string& inner, const std::string& outer) {
  std::error_code error_a, error_b;
  const auto a = std::filesystem::absolute(inner, error_a).lexically_normal();
  const auto b = std::filesystem::absolute(outer, error_b).lexically_normal();
  if (error_a || error_b) return false;
  const auto rest = a.lexically_relative(b);
  return !rest.empty() && *rest.begin() != ".." && rest != ".";
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

// A --command given to pack whose program is a relative path (`./cc.sh
// {in} {out}`) names the file where pack runs, not one in each line's
// recorded folder: made absolute (a recorded command is left as it was
// recorded, and found from its line's folder: compiler_for).
std::string command_from_here(const std::string& command) {
  const std::size_t begin = command.find_first_not_of(" \t");
  if (begin == std::string::npos) return command;
  const std::size_t end = std::min(command.find_first_of(" \t", begin), command.size());
  const std::string program = command.substr(begin, end - begin);
  if (program.find('/') == std::string::npos || program[0] == '/' || program[0] == '"' ||
      program[0] == '\'' || program.find('{') != std::string::npos) {
    return command;
  }
  std::error_code error;
  const auto absolute = std::filesystem::absolute(program, error);
  if (error || !std::filesystem::exists(absolute, error)) return command;
  return command.substr(0, begin) + absolute.string() + command.substr(end);
}

// Seconds since `from`.
double seconds_since(std::chrono::steady_clock::time_point from) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
}

int run_pack(PackArgs args) {
  const auto began = std::chrono::steady_clock::now();
  if (args.worker_of > 0) end_with_parent(args.worker_of);
  if (args.output.empty()) {
    std::cerr << "kcache: --output: the package's path is empty\n";
    return 2;
  }
  // Its lines become compiler commands, run as the user who packs: a
  // manifest another user could have written is theirs to command.
  if (!args.trust_manifest) {
    if (auto why = untrusted_file_reason(args.manifest)) {
      std::cerr << "kcache: --manifest " << args.manifest << ": another user could have written "
                << "it (" << *why << "), and its lines are commands pack would run as you; "
                << "--trust-manifest packs it anyway\n";
      return 1;
    }
  }
  // A regular file, bounded: /dev/zero or a FIFO must not fill the memory
  // or hang the pack.
  auto manifest = read_input_file(args.manifest, "--manifest " + args.manifest, kMaxManifestBytes,
                                  "a manifest");
  if (!manifest) return report_failure(manifest.status().message());
  if (same_file(args.output, args.manifest)) {
    std::cerr << "kcache: --output " << args.output
              << " is the manifest itself; name another file for the package\n";
    return 2;
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

  ManifestLines read = read_lines(*manifest, args.backend, *target);
  std::string().swap(*manifest);  // the lines hold what is needed
  std::vector<Line>& lines = read.lines;
  const std::vector<std::string>& problems = read.problems;
  const bool worker = args.worker_of > 0;
  keep_nvrtc_from_the_driver(lines);  // single-threaded still: nothing reads the environment
  CompilerConfig config = config_of(args.compiler);
  config.command = command_from_here(config.command);
  config.command_input_name = args.input_name;
  if (!worker && !args.trust_compiler) {
    if (auto untrusted = untrusted_compilers(lines, config); !untrusted.empty()) {
      for (const std::string& one : untrusted) {
        std::cerr << "kcache: pack will not run " << one << "\n";
      }
      std::cerr << "kcache: another user could have replaced "
                << (untrusted.size() == 1 ? "that program" : "those programs")
                << "; nothing was compiled (--trust-compiler runs them anyway)\n";
      return 1;
    }
  }
  // This process's compilers, each made once: the target's check, the
  // user cache's keys (--from-cache) and the compiles reuse them.
  Compilers compilers;
  // Each backend's runtime asked once whether it takes the target: the
  // lines of one that does not are left out (said, not failed: they are
  // not for this package), and the workers told to leave them out too.
  if (!worker) {
    std::set<std::string> asked;
    for (const Line& line : lines) {
      if (!asked.insert(line.backend).second) continue;
      if (auto misfit = runtime_misfit(line, config, compilers)) {
        args.leave_out.push_back(line.backend);
        read.misfits[line.backend].second = *misfit;
      }
    }
  }
  std::erase_if(lines, [&](const Line& line) {
    const bool out = std::find(args.leave_out.begin(), args.leave_out.end(), line.backend) !=
                     args.leave_out.end();
    if (out && !worker) ++read.misfits[line.backend].first;
    return out;
  });
  // A target none of the lines' backends takes, by its name (read_lines)
  // or its runtime (above): a usage error, before any folder is made or
  // worker started (as `kcache compile` has it).
  if (!worker && lines.empty() && !read.misfits.empty() && problems.empty()) {
    std::cerr << "kcache: --target " << args.target << ": no line of --manifest " << args.manifest
              << " can be compiled for it (" << read.misfits.begin()->second.second << ")\n";
    return 2;
  }
  // The package's path is the parent's to check (a worker writes none).
  if (int bad = worker ? 0 : check_package_path(args.output); bad != 0) return bad;
  if (lines.empty()) {
    report_skipped(problems);
    return report_failure("--manifest " + args.manifest + " holds no kernel to pack" +
                          (read.other_backends ? " for backend " + args.backend : ""));
  }

  // The pack's own cache: its user tier in the work folder, nothing else
  // (no package, no recording, failures not remembered).
  const std::string work = args.work.empty() ? args.output + ".pack" : args.work;
  if (const bool inside = is_beneath(work, args.output);
      inside || is_same_path(work, args.output)) {
    std::cerr << "kcache: --work " << work
              << (inside ? " lies inside the package's path " + args.output
                         : std::string(" is the package's path"))
              << "; name another folder for the pack's work\n";
    return 2;
  }
  CacheOptions options;
  // Absolute: each line is compiled from its own folder (from_folder).
  std::error_code no_path;
  options.cache_dir = std::filesystem::absolute(work, no_path).string();
  if (no_path) return report_failure("--work " + work + ": " + no_path.message());
  options.system_db_path = "";
  options.disable_cache = false;
  options.record_path = "";
  options.failure_ttl = std::chrono::milliseconds(0);
  // Its imports are the user cache's own entries (--from-cache), unsigned
  // copies: never held to KCACHE_TRUSTED_KEYS, which is for packages.
  options.trusted_keys = "";
  // A resume store need not flush each entry (500 flushes were a floor no
  // job count removed): a torn entry reads back as a miss and is compiled
  // again; the package itself is written whole and synced.
  options.sync = false;
  // Every kernel compiled stays until the package is written: the user's
  // limits (KCACHE_MAX_SIZE, _ENTRIES, _AGE) are for the user cache, and
  // would evict what this pack just compiled.
  options.max_size = 0;
  options.max_entries = 0;
  options.max_age = std::chrono::seconds(0);
  auto cache = Cache::open(options);
  if (!cache) return report_failure(cache.status().message());
  // The work folder keeps what is compiled: one that cannot (another user
  // could write it, not a writable folder) is found before any compile.
  if (!worker) {
    if (Status s = (*cache)->check_storable(); !s.is_ok()) {
      return report_failure("--work " + work + ": " + s.message());
    }
  }

  keep_freed_memory();
  // A worker compiles the lines it is handed and says what became of each.
  if (worker) {
    for (std::string text; std::getline(std::cin, text);) {
      const std::size_t index = std::strtoull(text.c_str(), nullptr, 10);
      if (index >= lines.size()) continue;
      Outcome outcome = pack_one(lines[index], **cache, config, compilers);
      outcome.index = index;
      std::cout << encode_outcome(outcome) << "\n" << std::flush;
    }
    return 0;
  }

  for (const auto& [backend, misfit] : read.misfits) {
    std::cerr << "kcache: note: " << counted(misfit.first, "line") << " of backend " << backend
              << " left out: " << misfit.second << "\n";
  }
  say_how_to_resume(work);
  note_folders_not_here(lines);
  const std::size_t from_user =
      args.from_cache ? take_from_user_cache(lines, config, compilers, **cache, work) : 0;

  // Each job is a process with a compiler in it (tens to hundreds of MB):
  // more than a few per core only costs memory.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  unsigned asked = args.jobs > 0 ? args.jobs : cores;
  if (asked > 4 * cores) {
    std::cerr << "kcache: note: --jobs " << asked << " is more than 4 a core; " << 4 * cores
              << " jobs run\n";
    asked = 4 * cores;
  }
  const unsigned jobs = static_cast<unsigned>(std::min<std::size_t>(asked, lines.size()));
  Progress progress(lines.size());
  const auto compiling = std::chrono::steady_clock::now();
  double first_done = -1;  // seconds from the compiles' start to the first one's end
  // Repeats found when their outcomes come in (lines alike otherwise than
  // same_kernel finds, that came to one key) join those found in reading.
  PackTally tally(read.repeats);
  auto record = [&](const Outcome& outcome) {
    const Line& line = lines[outcome.index];
    std::string said = tally.record(outcome, line);
    if (first_done < 0 && outcome.kind == Outcome::Kind::kCompiled) {
      first_done = seconds_since(compiling);  // a kernel taken from the work folder is not one
    }
    progress.done(line, said, outcome.kind != Outcome::Kind::kReused);
  };
  // Jobs are processes (pack_workers.h): the same command, as workers; one
  // too for --jobs 1, so that its compiler ends with the pack however the
  // pack ends (in this process, a kill left it running). There is a line
  // to pack (an empty manifest was said above), so a job at least.
  std::vector<std::string> arguments = tool_arguments();
  arguments.push_back("--worker-of");
  arguments.push_back(std::to_string(::getpid()));
  for (const auto& backend : args.leave_out) {
    arguments.push_back("--leave-out-backend");
    arguments.push_back(backend);
  }
  // A compiler that crashed took its worker along: said, as its line is
  // tried again (a second loss fails it, named at the end).
  auto retry = [&](std::size_t index, const std::string& why) {
    const std::string number = std::to_string(lines[index].number);
    progress.say("kcache: note: the job compiling line " + number + " ended (" + why + "); line " +
                 number + " is compiled again");
  };
  run_workers(arguments, jobs, lines.size(), record, retry);

  const double compile_seconds = seconds_since(compiling);
  int status = problems.empty() && tally.failed.empty() ? 0 : 1;
  report_skipped(problems);
  for (auto& [message, numbers] : tally.failed) {
    std::sort(numbers.begin(), numbers.end());  // jobs finish out of order
    report_failed(numbers, message);
  }
  if (tally.dbs.empty()) {
    // Said apart, for a build that may skip a package whose compiler is
    // not on this machine (KcacheRunPack.cmake's OPTIONAL), and only then.
    const bool no_compiler = tally.no_compiler > 0 && tally.no_compiler == tally.failures;
    std::error_code error;
    const bool earlier = std::filesystem::exists(args.output, error);
    return report_failure(
        std::string("no kernel could be packed") +
        (no_compiler ? ": the compiler of its lines cannot start here" : "") +
        "; no package written" +
        (earlier ? " (" + args.output + " is an earlier pack's, left as it was)" : ""));
  }
  if (tally.dbs.size() > 1) {
    return report_failure("the kernels went to " + std::to_string(tally.dbs.size()) +
                          " databases (one target per package); nothing written");
  }
  const std::string db = *tally.dbs.begin();
  ExportOptions export_options;
  export_options.signing_key = args.sign;
  export_options.keys = std::move(tally.packed);
  const auto writing = std::chrono::steady_clock::now();
  auto count = (*cache)->export_db(db, args.output, export_options);
  if (!count) return report_failure("writing " + args.output + ": " + count.status().message());
  const double write_seconds = seconds_since(writing);
  // Each kernel packed is in the work folder, unless something removed it
  // meanwhile (another process's eviction, a hand): said, not a success.
  if (export_options.keys && *count < export_options.keys->size()) {
    status = report_failure(
        counted(export_options.keys->size() - *count, "kernel") + " compiled for the package " +
        (export_options.keys->size() - *count == 1 ? "was" : "were") + " no longer in " + work +
        " when it was written (removed meanwhile?); " + args.output + " holds the other " +
        std::to_string(*count) + ": run the pack again");
  }
  std::cout << "packed " << counted(*count, "kernel") << " for " << db << " into " << args.output
            << " (" << tally.compiled << " compiled, "
            << tally.reused - std::min(tally.reused, from_user) << " already in " << work << ", "
            << (tally.repeats > 0 ? std::to_string(tally.repeats) + " repeating an earlier line, "
                                  : "")
            << (args.from_cache ? std::to_string(from_user) + " from the user cache, " : "")
            << tally.failures << " failed, " << counted(problems.size(), "line") << " skipped"
            << (args.sign.empty() ? "" : "; signed") << ")\n";
  // Where the time went: what no job count shortens (reading the manifest,
  // the workers' start, writing the package) beside the jobs (pack_report.h).
  std::cout << time_account({.total = seconds_since(began),
                             .before = std::chrono::duration<double>(compiling - began).count(),
                             .jobs = compile_seconds,
                             .first_done = first_done,
                             .writing = write_seconds,
                             .job_count = jobs,
                             .compiling = tally.compiling_seconds,
                             .finding = tally.finding_seconds})
            << "\n";
  if (tally.keyed_anew > 0) {
    std::cerr << "kcache: note: " << counted(tally.keyed_anew, "kernel")
              << " recorded for this target " << (tally.keyed_anew == 1 ? "has" : "have")
              << " another key now (the compiler, a header or a setting changed since "
                 "recorded): the package serves the requests of the toolchain and headers it "
                 "was packed with\n";
  }
  if (std::filesystem::path(args.output).filename() != db + ".kdb") {
    std::cerr << "kcache: note: the system tier looks for " << db << ".kdb: 'kcache install "
              << args.output << "' installs it under that name\n";
  }
  return status;
}

}  // namespace

Runner add_pack_command(CLI::App& app) {
  auto args = std::make_shared<PackArgs>();
  CLI::App* cmd = app.add_subcommand(
      "pack", "Compile every kernel of a manifest (KCACHE_RECORD) for a target into a package");
  cmd->add_option("--manifest", args->manifest, "The manifest (JSON lines)")
      ->required()
      ->check(names_a_path());
  cmd->add_option("--target", args->target, "Target, e.g. sm_90_132, gfx90a, or the OpenCL arch")
      ->required();
  cmd->add_option("--output", args->output, "The package to write, <db>.kdb")->required();
  cmd->add_option("--work", args->work,
                  "Folder of the pack's own cache, kept to resume (default: <output>.pack)")
      ->check(names_a_path());
  cmd->add_option("--jobs,-j", args->jobs,
                  "Kernels compiled at once (default, or 0: one per core; at most 4 a core)");
  cmd->add_option("--backend", args->backend, "Only the manifest's kernels of this backend")
      ->check(CLI::IsMember(compiler_backends()));
  add_compiler_flags(cmd, args->compiler, " (default: the recorded one)");
  cmd->add_option("--input-name", args->input_name,
                  "command backend: file name {in} gets (default: the recorded one)");
  cmd->add_option("--sign", args->sign, "Sign the package with this private key (kcache keygen)")
      ->check(names_a_path());
  cmd->add_flag("--trust-manifest", args->trust_manifest,
                "Pack the manifest even when another user could have written it (its lines are "
                "commands pack runs as you)");
  cmd->add_flag("--trust-compiler", args->trust_compiler,
                "Run the compilers the manifest names even when another user could have "
                "replaced their programs or libraries");
  cmd->add_flag("--from-cache", args->from_cache,
                "Take the kernels the user cache already holds for this target instead of "
                "compiling them");
  // Hidden: how a pack runs its jobs (pack_workers.h).
  cmd->add_option("--worker-of", args->worker_of)->group("");
  cmd->add_option("--leave-out-backend", args->leave_out)->group("");
  return [args] { return run_pack(*args); };
}

}  // namespace kcache::tool
