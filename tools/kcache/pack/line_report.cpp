#include "pack/line_report.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <system_error>

namespace kcache::tool {

void report_failed(const std::vector<std::size_t>& lines, std::string_view failure) {
  constexpr std::size_t kNamed = 10;
  constexpr std::size_t kLogLines = 30;
  std::string named = lines.size() == 1 ? "line " : "lines ";
  for (std::size_t i = 0; i < std::min(lines.size(), kNamed); ++i) {
    named += (i == 0 ? "" : ", ") + std::to_string(lines[i]);
  }
  if (lines.size() > kNamed) named += " and " + std::to_string(lines.size() - kNamed) + " more";
  const std::size_t end = failure.find('\n');
  std::cerr << "kcache: failed " << named << ": " << failure.substr(0, end) << "\n";
  if (end == std::string_view::npos) return;
  std::string_view log = failure.substr(end + 1);
  std::size_t shown = 0;
  while (!log.empty() && shown < kLogLines) {
    const std::size_t next = std::min(log.find('\n'), log.size());
    std::cerr << "    " << log.substr(0, next) << "\n";
    log.remove_prefix(std::min(next + 1, log.size()));
    ++shown;
  }
  if (!log.empty()) {
    const auto more = std::count(log.begin(), log.end(), '\n') + (log.back() != '\n' ? 1 : 0);
    std::cerr << "    ... (" << more << " more lines of the log)\n";
  }
}

void report_skipped(const std::vector<std::string>& problems) {
  constexpr std::size_t kShown = 20;
  for (std::size_t i = 0; i < std::min(problems.size(), kShown); ++i) {
    std::cerr << "kcache: skipped " << problems[i] << "\n";
  }
  if (problems.size() > kShown) {
    std::cerr << "kcache: skipped " << problems.size() - kShown << " more lines\n";
  }
}

void note_folders_not_here(const std::vector<Line>& lines) {
  constexpr std::size_t kNamed = 3;
  std::set<std::string> looked_at;
  std::vector<std::string> missing;
  for (const Line& line : lines) {
    if (line.cwd.empty() || !looked_at.insert(line.cwd).second) continue;
    std::error_code error;
    if (!std::filesystem::is_directory(line.cwd, error)) missing.push_back(line.cwd);
  }
  for (std::size_t i = 0; i < std::min(missing.size(), kNamed); ++i) {
    std::cerr << "kcache: note: kernels recorded in " << missing[i]
              << ", not a folder here, are compiled from this one (their relative include "
                 "folders are looked for here)\n";
  }
  if (missing.size() > kNamed) {
    std::cerr << "kcache: note: and kernels recorded in " << missing.size() - kNamed
              << " more folders not here\n";
  }
}

}  // namespace kcache::tool
