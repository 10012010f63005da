#include "format/field_text.h"

namespace kcache {

bool is_valid_field_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\') return false;
  }
  return true;
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.push_back(' ');
  for (char c : value) {
    switch (c) {
      case '\\':
        out.append("\\\\");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      default:
        out.push_back(c);
    }
  }
  out.push_back('\n');
}

std::string encode_fields(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) append_field(out, name, value);
  return out;
}

Result<Fields> decode_fields(std::string_view text) {
  Fields fields;
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
    std::string value;
    std::string_view raw = line.substr(space + 1);
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        if (raw[i] == '\r') return Status::corruption("raw carriage return in a field value");
        value.push_back(raw[i]);
        continue;
      }
      if (++i == raw.size()) return Status::corruption("dangling escape in a field value");
      switch (raw[i]) {
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
    }
    fields.emplace_back(std::string(line.substr(0, space)), std::move(value));
  }
  return fields;
}

}  // namespace kcache
