// What the two demos' main programs (demo_main.cpp on OpenCL,
// cuda/cuda_demo_main.cpp on CUDA) share: the flags both take, the totals
// of a run and how they are printed, and the report file that --report
// writes and --baseline reads back.
//
// Every function that can fail prints why on stderr, prefixed with
// `program` (the demo's name), so the caller only picks the exit status.
#pragma once

#include <kcache/cache.h>
#include <kcache/options.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache_demo {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point from, Clock::time_point to);

// Sets the environment variable `name` to `value` unless it is set already:
// the user's choice wins. True when it was set here.
bool set_env_default(const char* name, const char* value);

// --- Command line.

// The options both demos take.
struct DemoOptions {
  bool quick = false;
  bool list = false;
  bool list_devices = false;
  bool help = false;
  std::optional<std::string> cache_dir;
  std::optional<std::string> report;
  std::optional<std::string> baseline;
  std::optional<std::string> print_source;
};

// One command-line flag: a switch sets `*on`, any other flag stores the
// argument after it in `*value`. Both point into the caller's options.
struct Flag {
  static Flag toggle(std::string_view name, bool& on) { return {name, &on, nullptr}; }
  static Flag with_value(std::string_view name, std::optional<std::string>& value) {
    return {name, nullptr, &value};
  }

  std::string_view name;
  bool* on = nullptr;
  std::optional<std::string>* value = nullptr;
};

// The flags of DemoOptions (--help also as -h), pointing into `options`; a
// demo appends its own.
std::vector<Flag> demo_flags(DemoOptions& options);

// Sets the options `flags` point to from argv. False, after printing why,
// on an unknown argument or a flag without its value.
bool parse_flags(const char* program, int argc, char** argv, const std::vector<Flag>& flags);

// Prints `usage` and returns main's exit status: on stdout and 0 when it was
// asked for (--help), else on stderr and 2, after a usage error.
int print_usage(std::string_view usage, bool asked);

// --- The kernel library.

// "conv 2, gemm 2, ...": the kernels of each family, by family name.
template <typename Spec>
std::string count_families(const std::vector<Spec>& library) {
  std::map<std::string, int> families;
  for (const auto& spec : library) ++families[spec.family];
  std::string text;
  for (const auto& [family, count] : families) {
    text += (text.empty() ? "" : ", ") + family + " " + std::to_string(count);
  }
  return text;
}

// The kernel named `name` (for --print-source); nullptr, after printing
// why, when there is none.
template <typename Spec>
const Spec* find_kernel(const char* program, const std::vector<Spec>& library,
                        const std::string& name) {
  for (const auto& spec : library) {
    if (spec.name == name) return &spec;
  }
  std::fprintf(stderr, "%s: no kernel named '%s' (see --list)\n", program, name.c_str());
  return nullptr;
}

// --- A run.

// The cache at `cache_dir` (nullopt: the user's default); nullptr, after
// printing why, when it cannot be opened.
std::unique_ptr<kcache::Cache> open_cache(const char* program,
                                          const std::optional<std::string>& cache_dir);

// The "  cache      ..." line of a demo's header: the folder, or why the
// cache is off.
void print_cache_line(const kcache::ResolvedConfig& config);

// Prints `text` indented under a table row, cut after 40 lines.
void print_indented(const std::string& text);

// The totals of a run over all kernels. How ready_ms divides into stages
// (fetch, load, first run) differs between the demos; each sums its own.
struct Totals {
  int kernels = 0;
  int ok = 0;
  std::map<std::string, int> tiers;  // tier name ("-": not fetched) -> kernels
  double ready_ms = 0;

  void add(const std::string& tier, bool result_ok, double kernel_ready_ms);
};

// Prints a blank line and "total: N kernels, N ok, N failed; tiers: ...".
void print_totals(const Totals& totals);

// Prints kcache's own counters of the run.
void print_cache_stats(const kcache::CacheStats& stats);

// --- Reports.

// A report's key=value lines, by key.
using Report = std::map<std::string, std::string>;

// Writes the report --report asks for: "# PROGRAM report", the lines of
// `run` (what kind of run it was), the counts of `totals`, then `times_ms`
// with three decimals. False, after printing why, when it cannot be written.
bool write_report(const char* program, const std::string& path,
                  const std::vector<std::pair<std::string_view, std::string>>& run,
                  const Totals& totals,
                  const std::vector<std::pair<std::string_view, double>>& times_ms);

// The report --baseline names; nullopt, after printing why, when it cannot
// be read.
std::optional<Report> read_baseline(const char* program, const std::string& path);

// Prints how much faster this run was ready than `baseline`, or why the two
// cannot be compared, with a note when the baseline was not fully cold or
// this run not fully warm.
void print_speed_up(const Report& baseline, const Totals& totals);

}  // namespace kcache_demo
