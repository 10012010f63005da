#include "support/human_text.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace kcache::tool {

std::string human_bytes(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::ostringstream out;
  out << std::fixed << std::setprecision(unit == 0 ? 0 : 1) << value << " " << units[unit];
  return out.str();
}

std::string counted(std::uint64_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::string counted(std::uint64_t n, std::string_view noun, std::string_view plural) {
  return std::to_string(n) + " " + std::string(n == 1 ? noun : plural);
}

std::string failing_entries(std::uint64_t bad, std::uint64_t total) {
  if (total == 1 && bad == 1) return "its one entry fails its checks";
  return std::to_string(bad) + " of its " + std::to_string(total) +
         (bad == 1 ? " entries fails its checks" : " entries fail their checks");
}

std::string not_as_signed_text(std::uint64_t bad, std::uint64_t total) {
  if (total == 1 && bad == 1) return "its one entry is not as signed";
  return std::to_string(bad) + " of its " + std::to_string(total) +
         (bad == 1 ? " entries is not as signed" : " entries are not as signed");
}

std::string shown(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      static constexpr char kDigits[] = "0123456789abcdef";
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 0xF];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string human_age(std::int64_t seconds) {
  if (seconds < 0) seconds = 0;
  struct Unit {
    const char* name;
    std::int64_t size;
  };
  for (const Unit& unit : {Unit{"w", 604800}, Unit{"d", 86400}, Unit{"h", 3600}, Unit{"m", 60}}) {
    if (seconds >= unit.size * (unit.size == 604800 ? 2 : 1)) {
      return std::to_string(seconds / unit.size) + unit.name;
    }
  }
  return std::to_string(seconds) + "s";
}

std::string utc_time(std::int64_t unix_seconds) {
  std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%Y-%m-%d %H:%M UTC");
  return out.str();
}

bool colour_on_stdout() {
  static const bool on = [] {
    const char* no_color = std::getenv("NO_COLOR");
    if (no_color != nullptr && *no_color != '\0') return false;
    const char* term = std::getenv("TERM");
    if (term == nullptr || std::strcmp(term, "dumb") == 0) return false;
    return ::isatty(STDOUT_FILENO) == 1;
  }();
  return on;
}

std::string bold(const std::string& text) {
  return colour_on_stdout() ? "\033[1m" + text + "\033[0m" : text;
}

std::string dim(const std::string& text) {
  return colour_on_stdout() ? "\033[2m" + text + "\033[0m" : text;
}

}  // namespace kcache::tool
