#include "base/field_text.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace kcache {
namespace {

// Whether any byte of `word` is `byte` (the classic zero-byte test).
constexpr bool has_byte(std::uint64_t word, unsigned char byte) {
  const std::uint64_t x = word ^ (0x0101010101010101ull * byte);
  return ((x - 0x0101010101010101ull) & ~x & 0x8080808080808080ull) != 0;
}

// The first '\\', '\n' or '\r' (only '\\' and '\r' when `newline` is false).
// Eight bytes at a time: this runs over every key's text.
std::size_t find_special(std::string_view text, bool newline) {
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    if (has_byte(word, '\\') || has_byte(word, '\r') || (newline && has_byte(word, '\n'))) break;
  }
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' || c == '\r' || (newline && c == '\n')) return i;
  }
  return std::string_view::npos;
}

}  // namespace

bool is_valid_field_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\') return false;
  }
  return true;
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  // No reserve here: an exact reserve per field would copy the whole text
  // at every field; append grows it geometrically.
  out.append(name);
  out.push_back(' ');
  // Runs without a character to escape go in whole (most values are one
  // run): this builds every key.
  while (!value.empty()) {
    const std::size_t special = find_special(value, /*newline=*/true);
    out.append(value.substr(0, special));
    if (special == std::string_view::npos) break;
    const char c = value[special];
    out.append(c == '\\' ? "\\\\" : c == '\n' ? "\\n" : "\\r");
    value.remove_prefix(special + 1);
  }
  out.push_back('\n');
}

void append_raw_field(std::string& out, std::string_view name, std::string_view value) {
  out.reserve(out.size() + name.size() + value.size() + 24);
  append_raw_field_line(out, name, value.size());
  out.append(value);
}

void append_raw_field_line(std::string& out, std::string_view name, std::size_t size) {
  char digits[24];
  char* end = std::to_chars(digits, digits + sizeof digits, size).ptr;
  out.append(name).append(" ").append(digits, static_cast<std::size_t>(end - digits)).append("\n");
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string encode_fields(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) append_field(out, name, value);
  return out;
}

Result<Fields> decode_fields(std::string_view text) {
  Fields fields;
  std::size_t lines = 0;
  for (const char* at = text.data();
       (at = static_cast<const char*>(std::memchr(at, '\n', text.data() + text.size() - at))) !=
       nullptr;
       ++at) {
    ++lines;
  }
  fields.reserve(lines);
  // Most texts escape nothing (an entry's metadata on every first hit):
  // then each value is its raw text.
  const bool plain = find_special(text, /*newline=*/false) == std::string_view::npos;
  std::size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    std::size_t end = text.find('\n');
    if (end == std::string_view::npos) {
      return Status::corruption("field line " + std::to_string(line_number) + " is not terminated");
    }
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    std::size_t space = line.find(' ');
    if (space == std::string_view::npos || !is_valid_field_name(line.substr(0, space))) {
      return Status::corruption("field line " + std::to_string(line_number) + " has no valid name");
    }
    std::string_view raw = line.substr(space + 1);
    if (plain) {
      fields.emplace_back(line.substr(0, space), raw);
      continue;
    }
    std::string value;
    value.reserve(raw.size());
    while (!raw.empty()) {
      const std::size_t special = find_special(raw, /*newline=*/false);
      value.append(raw.substr(0, special));
      if (special == std::string_view::npos) break;
      if (raw[special] == '\r') return Status::corruption("raw carriage return in a field value");
      if (special + 1 == raw.size()) return Status::corruption("dangling escape in a field value");
      switch (raw[special + 1]) {
        case '\\':
          value.push_back('\\');
          break;
        case 'n':
          value.push_back('\n');
          break;
        case 'r':
          value.push_back('\r');
          break;
        default:
          return Status::corruption("unknown escape in a field value");
      }
      raw.remove_prefix(special + 2);
    }
    fields.emplace_back(std::string(line.substr(0, space)), std::move(value));
  }
  return fields;
}

}  // namespace kcache
