#include "pack/plan.h"

#include <kcache/admin.h>
#include <kcache/trust.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <system_error>
#include <utility>

#include "pack/line_report.h"
#include "pack/nvrtc_without_driver.h"
#include "support/failure_report.h"
#include "support/human_text.h"
#include "support/option_checks.h"
#include "support/user_paths.h"

namespace kcache::tool {
namespace {

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

// The command line's checks that need no manifest line, and the manifest
// read (a regular file, bounded): 0 with its text in `manifest` and the
// target in `target`, or the exit status, said.
int read_manifest(const PackOptions& options, std::string& manifest, Target& target) {
  if (options.output.empty()) {
    std::cerr << "kcache: --output: the package's path is empty\n";
    return 2;
  }
  // Its lines become compiler commands, run as the user who packs: a
  // manifest another user could have written is theirs to command.
  if (!options.trust_manifest) {
    if (auto why = untrusted_file_reason(options.manifest)) {
      std::cerr << "kcache: --manifest " << options.manifest
                << ": another user could have written it (" << *why
                << "), and its lines are commands pack would run as you; --trust-manifest packs "
                   "it anyway\n";
      return 1;
    }
  }
  // A regular file, bounded: /dev/zero or a FIFO must not fill the memory
  // or hang the pack.
  auto text = read_input_file(options.manifest, "--manifest " + options.manifest, kMaxManifestBytes,
                              "a manifest");
  if (!text) return report_failure(text.status().message());
  if (same_file(options.output, options.manifest)) {
    std::cerr << "kcache: --output " << options.output
              << " is the manifest itself; name another file for the package\n";
    return 2;
  }
  auto parsed = Target::parse(options.target);
  if (!parsed) {
    std::cerr << "kcache: --target: " << parsed.status().message() << "\n";
    return 2;
  }
  // A key that cannot sign is found before any compile, not after.
  if (!options.sign.empty()) {
    if (int bad = check_key_option("--sign", options.sign); bad != 0) return bad;
  }
  manifest = std::move(*text);
  target = *parsed;
  return 0;
}

// The compilers of `lines` that another user could have replaced (their
// programs or libraries), said: 0 when there is none, else 1.
int refuse_untrusted_compilers(const std::vector<Line>& lines, const CompilerConfig& config) {
  const std::vector<std::string> untrusted = untrusted_compilers(lines, config);
  if (untrusted.empty()) return 0;
  for (const std::string& one : untrusted) {
    std::cerr << "kcache: pack will not run " << one << "\n";
  }
  std::cerr << "kcache: another user could have replaced "
            << (untrusted.size() == 1 ? "that program" : "those programs")
            << "; nothing was compiled (--trust-compiler runs them anyway)\n";
  return 1;
}

// Each backend's runtime asked once whether it takes the target: the
// lines of one that does not are left out (said, not failed: they are not
// for this package), and the workers told to leave them out too.
void find_misfit_backends(PackOptions& options, PackPlan& plan) {
  std::set<std::string> asked;
  for (const Line& line : plan.read.lines) {
    if (!asked.insert(line.backend).second) continue;
    if (auto misfit = runtime_misfit(line, plan.config, plan.compilers)) {
      options.leave_out.push_back(line.backend);
      plan.read.misfits[line.backend].second = *misfit;
    }
  }
}

// The lines of `manifest` to compile for `target`, and the compiler
// config they start from: 0, or the exit status, said.
int choose_lines(PackOptions& options, std::string manifest, const Target& target, PackPlan& plan) {
  plan.read = read_lines(manifest, options.backend, target);
  std::string().swap(manifest);  // the lines hold what is needed
  std::vector<Line>& lines = plan.read.lines;
  const std::vector<std::string>& problems = plan.read.problems;
  const bool worker = options.is_worker();
  keep_nvrtc_from_the_driver(lines);  // single-threaded still: nothing reads the environment
  plan.config = config_of(options.compiler);
  plan.config.command = command_from_here(plan.config.command);
  plan.config.command_input_name = options.input_name;
  if (!worker && !options.trust_compiler) {
    if (int status = refuse_untrusted_compilers(lines, plan.config); status != 0) return status;
  }
  if (!worker) find_misfit_backends(options, plan);
  std::erase_if(lines, [&](const Line& line) {
    const bool out = std::find(options.leave_out.begin(), options.leave_out.end(), line.backend) !=
                     options.leave_out.end();
    if (out && !worker) ++plan.read.misfits[line.backend].first;
    return out;
  });
  // A target none of the lines' backends takes, by its name (read_lines)
  // or its runtime (above): a usage error, before any folder is made or
  // worker started (as `kcache compile` has it).
  if (!worker && lines.empty() && !plan.read.misfits.empty() && problems.empty()) {
    std::cerr << "kcache: --target " << options.target << ": no line of --manifest "
              << options.manifest << " can be compiled for it ("
              << plan.read.misfits.begin()->second.second << ")\n";
    return 2;
  }
  // The package's path is the parent's to check (a worker writes none).
  if (int bad = worker ? 0 : check_package_path(options.output); bad != 0) return bad;
  if (lines.empty()) {
    report_skipped(problems);
    return report_failure("--manifest " + options.manifest + " holds no kernel to pack" +
                          (plan.read.other_backends ? " for backend " + options.backend : ""));
  }
  return 0;
}

// The options of the pack's own cache: its user tier in `folder`, nothing
// else (no package, no recording, failures not remembered).
CacheOptions work_cache_options(const std::string& folder) {
  CacheOptions options;
  options.cache_dir = folder;
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
  return options;
}

// The pack's own cache, over the work folder: 0, or the exit status, said.
int open_work_cache(const PackOptions& options, PackPlan& plan) {
  plan.work = options.work.empty() ? options.output + ".pack" : options.work;
  const std::string& work = plan.work;
  if (const bool inside = is_beneath(work, options.output);
      inside || is_same_path(work, options.output)) {
    std::cerr << "kcache: --work " << work
              << (inside ? " lies inside the package's path " + options.output
                         : std::string(" is the package's path"))
              << "; name another folder for the pack's work\n";
    return 2;
  }
  // Absolute: each line is compiled from its own folder (from_folder).
  std::error_code no_path;
  const std::string folder = std::filesystem::absolute(work, no_path).string();
  if (no_path) return report_failure("--work " + work + ": " + no_path.message());
  auto cache = Cache::open(work_cache_options(folder));
  if (!cache) return report_failure(cache.status().message());
  plan.cache = std::move(*cache);
  // The work folder keeps what is compiled: one that cannot (another user
  // could write it, not a writable folder) is found before any compile.
  if (!options.is_worker()) {
    if (Status s = CacheAdmin(*plan.cache).check_storable(); !s.is_ok()) {
      return report_failure("--work " + work + ": " + s.message());
    }
  }
  return 0;
}

}  // namespace

int plan_pack(PackOptions& options, PackPlan& plan) {
  plan.began = std::chrono::steady_clock::now();
  std::string manifest;
  Target target;
  if (int status = read_manifest(options, manifest, target); status != 0) return status;
  if (int status = choose_lines(options, std::move(manifest), target, plan); status != 0) {
    return status;
  }
  if (int status = open_work_cache(options, plan); status != 0) return status;
  if (!options.is_worker()) {
    for (const auto& [backend, misfit] : plan.read.misfits) {
      std::cerr << "kcache: note: " << counted(misfit.first, "line") << " of backend " << backend
                << " left out: " << misfit.second << "\n";
    }
  }
  return 0;
}

}  // namespace kcache::tool
