// How the tool writes for people: sizes, ages, times, colour. Colour only
// on a terminal, never with NO_COLOR set (no-color.org) or TERM=dumb.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kcache::tool {

// "1 kernel", "3 kernels": `n` and the noun, "s" added unless n is 1.
std::string counted(std::uint64_t n, std::string_view noun);
// "1 entry", "3 entries": `n` and the noun, `plural` unless n is 1.
std::string counted(std::uint64_t n, std::string_view noun, std::string_view plural);
// How many of a package's `total` entries fail their checks: "its one
// entry fails its checks", "1 of its 4 entries fails its checks", "2 of
// its 4 entries fail their checks".
std::string failing_entries(std::uint64_t bad, std::uint64_t total);
// How many of them are not the entries it was signed with: "its one entry
// is not as signed", "19 of its 40 entries are not as signed".
std::string not_as_signed_text(std::uint64_t bad, std::uint64_t total);
// "812.0 MiB": bytes in binary units, one decimal.
std::string human_bytes(std::uint64_t bytes);
// "45s", "12m", "3h", "5d", "7w": the largest unit, whole.
std::string human_age(std::int64_t seconds);
// `text` for a terminal: its control characters written as \xNN, so a
// crafted name or field cannot clear the screen or forge a line.
std::string shown(std::string_view text);
// "2026-12-02 14:55 UTC".
std::string utc_time(std::int64_t unix_seconds);
// Whether standard output takes colour.
bool colour_on_stdout();
// `text` in bold, or as it is without colour.
std::string bold(const std::string& text);
// `text` dimmed, or as it is without colour.
std::string dim(const std::string& text);

}  // namespace kcache::tool
