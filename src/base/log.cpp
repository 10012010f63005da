#include "base/log.h"

#include <cstdio>
#include <mutex>
#include <set>

namespace kcache {
namespace {

std::string_view level_word(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "Error";
    case LogLevel::kWarning:
      return "Warning";
    case LogLevel::kInfo:
      return "Info";
    case LogLevel::kDebug:
      return "Debug";
    case LogLevel::kQuiet:
      break;
  }
  return "";
}

std::mutex& once_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::set<std::string, std::less<>>& once_keys() {
  static std::set<std::string, std::less<>> keys;
  return keys;
}

}  // namespace

std::string_view log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kQuiet:
      return "quiet";
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "warning";
}

std::string Logger::format(LogLevel level, std::string_view area, std::string_view text) {
  std::string line = "kcache: ";
  line += level_word(level);
  line += " [";
  line += area;
  line += "] ";
  line += text;
  return line;
}

void Logger::log(LogLevel level, std::string_view area, std::string_view text) const {
  if (!enabled(level)) return;
  std::string line = format(level, area, text);
  if (sink_) {
    sink_(level, line);
    return;
  }
  line.push_back('\n');
  std::fputs(line.c_str(), stderr);
}

void Logger::warn_once(std::string_view dedupe_key, std::string_view area,
                       std::string_view text) const {
  {
    std::lock_guard lock(once_mutex());
    if (!once_keys().emplace(dedupe_key).second) return;
  }
  warn(area, text);
}

void Logger::info_once(std::string_view dedupe_key, std::string_view area,
                       std::string_view text) const {
  if (!enabled(LogLevel::kInfo)) return;
  {
    std::lock_guard lock(once_mutex());
    if (!once_keys().emplace(std::string("info:") + std::string(dedupe_key)).second) return;
  }
  info(area, text);
}

}  // namespace kcache
