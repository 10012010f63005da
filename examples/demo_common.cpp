#include "demo_common.h"

#include <kcache/status.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kcache_demo {
namespace {

// The tiers in the order the totals and the report list them.
constexpr std::string_view kTierNames[] = {"compiled", "user", "system", "remote", "memory"};

double number(const Report& report, const std::string& key) {
  const auto found = report.find(key);
  return found == report.end() ? 0.0 : std::strtod(found->second.c_str(), nullptr);
}

}  // namespace

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

bool set_env_default(const char* name, const char* value) {
  if (std::getenv(name) != nullptr) return false;
  setenv(name, value, 1);
  return true;
}

std::vector<Flag> demo_flags(DemoOptions& options) {
  return {
      Flag::toggle("--quick", options.quick),
      Flag::toggle("--list", options.list),
      Flag::toggle("--list-devices", options.list_devices),
      Flag::toggle("--help", options.help),
      Flag::toggle("-h", options.help),
      Flag::with_value("--cache-dir", options.cache_dir),
      Flag::with_value("--report", options.report),
      Flag::with_value("--baseline", options.baseline),
      Flag::with_value("--print-source", options.print_source),
  };
}

bool parse_flags(const char* program, int argc, char** argv, const std::vector<Flag>& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const auto flag =
        std::find_if(flags.begin(), flags.end(), [&](const Flag& f) { return f.name == arg; });
    if (flag == flags.end()) {
      std::fprintf(stderr, "%s: unknown argument '%s'\n", program, argv[i]);
      return false;
    }
    if (flag->on != nullptr) {
      *flag->on = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: %s needs a value\n", program, argv[i]);
      return false;
    }
    *flag->value = argv[++i];
  }
  return true;
}

int print_usage(std::string_view usage, bool asked) {
  std::fprintf(asked ? stdout : stderr, "%.*s", static_cast<int>(usage.size()), usage.data());
  return asked ? 0 : 2;
}

std::unique_ptr<kcache::Cache> open_cache(const char* program,
                                          const std::optional<std::string>& cache_dir) {
  kcache::CacheOptions options;
  options.cache_dir = cache_dir;
  auto cache = kcache::Cache::open(options);
  if (!cache) {
    std::fprintf(stderr, "%s: cannot open the cache: %s\n", program,
                 cache.status().to_string().c_str());
    return nullptr;
  }
  return std::move(*cache);
}

void print_cache_line(const kcache::ResolvedConfig& config) {
  if (config.enabled) {
    std::printf("  cache      %s\n", config.user_dir.c_str());
  } else {
    std::printf("  cache      DISABLED (%s): every kernel is compiled\n",
                config.disabled_reason.c_str());
  }
}

void print_indented(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    // A compile log can run to hundreds of lines; the first ones say why.
    if (++count > 40) {
      std::printf("      ... (log cut)\n");
      break;
    }
    std::printf("      %s\n", line.c_str());
  }
}

void Totals::add(const std::string& tier, bool result_ok, double kernel_ready_ms) {
  ++kernels;
  ok += result_ok ? 1 : 0;
  ++tiers[tier];
  ready_ms += kernel_ready_ms;
}

void print_totals(const Totals& totals) {
  std::string tier_counts;
  for (std::string_view tier : kTierNames) {
    const auto found = totals.tiers.find(std::string(tier));
    if (found == totals.tiers.end()) continue;
    tier_counts +=
        (tier_counts.empty() ? "" : ", ") + std::string(tier) + " " + std::to_string(found->second);
  }
  if (const auto unfetched = totals.tiers.find("-"); unfetched != totals.tiers.end()) {
    tier_counts += (tier_counts.empty() ? "" : ", ") + std::string("not fetched ") +
                   std::to_string(unfetched->second);
  }
  std::printf("\ntotal: %d kernels, %d ok, %d failed; tiers: %s\n", totals.kernels, totals.ok,
              totals.kernels - totals.ok, tier_counts.c_str());
}

void print_cache_stats(const kcache::CacheStats& stats) {
  std::printf(
      "kcache stats: %llu requests, %llu user hits, %llu compiles, %llu compile failures, "
      "%llu store failures\n",
      static_cast<unsigned long long>(stats.requests),
      static_cast<unsigned long long>(stats.user_hits),
      static_cast<unsigned long long>(stats.compiles),
      static_cast<unsigned long long>(stats.compile_failures),
      static_cast<unsigned long long>(stats.store_failures));
}

bool write_report(const char* program, const std::string& path,
                  const std::vector<std::pair<std::string_view, std::string>>& run,
                  const Totals& totals,
                  const std::vector<std::pair<std::string_view, double>>& times_ms) {
  std::ofstream out(path, std::ios::trunc);
  out << "# " << program << " report\n";
  for (const auto& [key, value] : run) out << key << "=" << value << "\n";
  out << "kernels=" << totals.kernels << "\n"
      << "ok=" << totals.ok << "\n"
      << "failed=" << totals.kernels - totals.ok << "\n";
  for (std::string_view tier : kTierNames) {
    const auto found = totals.tiers.find(std::string(tier));
    out << "tier." << tier << "=" << (found == totals.tiers.end() ? 0 : found->second) << "\n";
  }
  for (const auto& [key, ms] : times_ms) {
    char value[64];
    std::snprintf(value, sizeof value, "%.3f", ms);
    out << key << "=" << value << "\n";
  }
  out.close();
  if (out.fail()) {
    std::fprintf(stderr, "%s: cannot write the report %s\n", program, path.c_str());
    return false;
  }
  return true;
}

std::optional<Report> read_baseline(const char* program, const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read the baseline report %s\n", program, path.c_str());
    return std::nullopt;
  }
  Report values;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

void print_speed_up(const Report& baseline, const Totals& totals) {
  const double cold_ms = number(baseline, "total_ready_ms");
  const int cold_kernels = static_cast<int>(number(baseline, "kernels"));
  const int cold_compiled = static_cast<int>(number(baseline, "tier.compiled"));
  if (cold_kernels != totals.kernels) {
    std::printf(
        "speed-up: not comparable: the baseline ran %d kernels, this run %d (use the same "
        "--quick setting)\n",
        cold_kernels, totals.kernels);
    return;
  }
  if (cold_ms <= 0 || totals.ready_ms <= 0) {
    std::printf("speed-up: the baseline report has no total_ready_ms\n");
    return;
  }
  std::printf("speed-up: cold %.1f ms -> warm %.1f ms = %.1f x\n", cold_ms, totals.ready_ms,
              cold_ms / totals.ready_ms);
  if (cold_compiled != cold_kernels) {
    std::printf("          note: the baseline was not fully cold: %d of %d kernels compiled\n",
                cold_compiled, cold_kernels);
  }
  const auto compiled = totals.tiers.find("compiled");
  if (compiled != totals.tiers.end() && compiled->second > 0) {
    std::printf("          note: this run was not fully warm: %d kernels compiled\n",
                compiled->second);
  }
}

}  // namespace kcache_demo
