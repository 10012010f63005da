// Messages to people. Every line starts with "kcache: "; warnings read
// "kcache: Warning [Area] text" (the command-line contract). `warn_once`
// prints a message at most once per process for a given dedupe key, e.g.
// the missing .kdb file name.
#pragma once

#include <kcache/options.h>

#include <string>
#include <string_view>

namespace kcache {

class Logger {
 public:
  Logger(LogLevel level, LogSink sink) : level_(level), sink_(std::move(sink)) {}

  [[nodiscard]] bool enabled(LogLevel level) const {
    return level != LogLevel::kQuiet && level <= level_;
  }
  [[nodiscard]] LogLevel level() const { return level_; }

  void log(LogLevel level, std::string_view area, std::string_view text) const;
  void error(std::string_view area, std::string_view text) const {
    log(LogLevel::kError, area, text);
  }
  void warn(std::string_view area, std::string_view text) const {
    log(LogLevel::kWarning, area, text);
  }
  void info(std::string_view area, std::string_view text) const {
    log(LogLevel::kInfo, area, text);
  }
  void debug(std::string_view area, std::string_view text) const {
    log(LogLevel::kDebug, area, text);
  }
  // Warns unless a warning with `dedupe_key` was already given in this
  // process (by any Logger).
  void warn_once(std::string_view dedupe_key, std::string_view area, std::string_view text) const;
  // The same at info level.
  void info_once(std::string_view dedupe_key, std::string_view area, std::string_view text) const;

  // "kcache: Warning [Area] text".
  static std::string format(LogLevel level, std::string_view area, std::string_view text);

 private:
  LogLevel level_;
  LogSink sink_;
};

}  // namespace kcache
