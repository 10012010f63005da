#include "pack/write_package.h"

#include <kcache/admin.h>
#include <kcache/cache.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <utility>

#include "pack/line_report.h"
#include "pack/time_account.h"
#include "support/failure_report.h"
#include "support/human_text.h"

namespace kcache::tool {
namespace {

// The lines that did not parse and those that failed, said: 0 when there
// are none, else 1.
int say_line_problems(const std::vector<std::string>& problems, PackTally& tally) {
  report_skipped(problems);
  for (auto& [message, numbers] : tally.failed) {
    std::sort(numbers.begin(), numbers.end());  // jobs finish out of order
    report_failed(numbers, message);
  }
  return problems.empty() && tally.failed.empty() ? 0 : 1;
}

// Why no package can be written: no kernel was packed, or the kernels
// went to several databases. Empty when one can.
std::string why_nothing_written(const PackOptions& options, const PackTally& tally) {
  if (tally.dbs.empty()) {
    // Said apart, for a build that may skip a package whose compiler is
    // not on this machine (KcacheRunPack.cmake's OPTIONAL), and only then.
    const bool no_compiler = tally.no_compiler > 0 && tally.no_compiler == tally.failures;
    std::error_code error;
    const bool earlier = std::filesystem::exists(options.output, error);
    return std::string("no kernel could be packed") +
           (no_compiler ? ": the compiler of its lines cannot start here" : "") +
           "; no package written" +
           (earlier ? " (" + options.output + " is an earlier pack's, left as it was)" : "");
  }
  if (tally.dbs.size() > 1) {
    return "the kernels went to " + std::to_string(tally.dbs.size()) +
           " databases (one target per package); nothing written";
  }
  return {};
}

// The summary: what the package holds and where it came from, then where
// the time went.
void say_summary(const PackOptions& options, const PackPlan& plan, const CompiledLines& compiled,
                 const std::string& db, std::uint64_t count, double write_seconds) {
  const PackTally& tally = compiled.tally;
  const std::size_t from_user = compiled.from_user_cache;
  std::cout << "packed " << counted(count, "kernel") << " for " << db << " into " << options.output
            << " (" << tally.compiled << " compiled, "
            << tally.reused - std::min(tally.reused, from_user) << " already in " << plan.work
            << ", "
            << (tally.repeats > 0 ? std::to_string(tally.repeats) + " repeating an earlier line, "
                                  : "")
            << (options.from_cache ? std::to_string(from_user) + " from the user cache, " : "")
            << tally.failures << " failed, " << counted(plan.read.problems.size(), "line")
            << " skipped" << (options.sign.empty() ? "" : "; signed") << ")\n";
  // Where the time went: what no job count shortens (reading the manifest,
  // the workers' start, writing the package) beside the jobs (time_account.h).
  std::cout << time_account(
                   {.total = seconds_since(plan.began),
                    .before = std::chrono::duration<double>(compiled.started - plan.began).count(),
                    .jobs = compiled.seconds,
                    .first_done = compiled.first_done,
                    .writing = write_seconds,
                    .job_count = compiled.jobs,
                    .compiling = tally.compiling_seconds,
                    .finding = tally.finding_seconds})
            << "\n";
}

}  // namespace

int write_package(const PackOptions& options, PackPlan& plan, CompiledLines& compiled) {
  PackTally& tally = compiled.tally;
  int status = say_line_problems(plan.read.problems, tally);
  if (std::string why = why_nothing_written(options, tally); !why.empty()) {
    return report_failure(why);
  }
  const std::string db = *tally.dbs.begin();
  ExportOptions export_options;
  export_options.signing_key = options.sign;
  export_options.keys = std::move(tally.packed);
  const auto writing = std::chrono::steady_clock::now();
  auto count = CacheAdmin(*plan.cache).export_db(db, options.output, export_options);
  if (!count) {
    return report_failure("writing " + options.output + ": " + count.status().message());
  }
  const double write_seconds = seconds_since(writing);
  // Each kernel packed is in the work folder, unless something removed it
  // meanwhile (another process's eviction, a hand): said, not a success.
  if (const std::size_t asked = export_options.keys->size(); *count < asked) {
    status = report_failure(counted(asked - *count, "kernel") + " compiled for the package " +
                            (asked - *count == 1 ? "was" : "were") + " no longer in " + plan.work +
                            " when it was written (removed meanwhile?); " + options.output +
                            " holds the other " + std::to_string(*count) + ": run the pack again");
  }
  say_summary(options, plan, compiled, db, *count, write_seconds);
  if (tally.keyed_anew > 0) {
    std::cerr << "kcache: note: " << counted(tally.keyed_anew, "kernel")
              << " recorded for this target " << (tally.keyed_anew == 1 ? "has" : "have")
              << " another key now (the compiler, a header or a setting changed since "
                 "recorded): the package serves the requests of the toolchain and headers it "
                 "was packed with\n";
  }
  if (std::filesystem::path(options.output).filename() != db + ".kdb") {
    std::cerr << "kcache: note: the system tier looks for " << db << ".kdb: 'kcache install "
              << options.output << "' installs it under that name\n";
  }
  return status;
}

}  // namespace kcache::tool
