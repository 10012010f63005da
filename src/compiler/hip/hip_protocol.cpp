#include "compiler/hip/hip_protocol.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace kcache::hip {

std::optional<std::string> Records::first(std::string_view name) const {
  for (const auto& [field, value] : fields_) {
    if (field == name) return value;
  }
  return std::nullopt;
}

std::vector<std::string> Records::all(std::string_view name) const {
  std::vector<std::string> values;
  for (const auto& [field, value] : fields_) {
    if (field == name) values.push_back(value);
  }
  return values;
}

std::string Records::encode() const {
  std::string out;
  for (const auto& [name, value] : fields_) {
    out += name;
    out += ' ';
    out += std::to_string(value.size());
    out += '\n';
    out += value;
    out += '\n';
  }
  return out;
}

std::optional<Records> Records::decode(std::string_view bytes) {
  Records records;
  while (!bytes.empty()) {
    const std::size_t space = bytes.find(' ');
    const std::size_t newline = bytes.find('\n');
    if (space == std::string_view::npos || newline == std::string_view::npos || space == 0 ||
        newline < space + 2 || newline - space > 19) {  // at most 18 digits
      return std::nullopt;
    }
    std::size_t size = 0;
    for (char c : bytes.substr(space + 1, newline - space - 1)) {
      if (c < '0' || c > '9') return std::nullopt;
      size = size * 10 + static_cast<std::size_t>(c - '0');
    }
    const std::size_t start = newline + 1;
    if (bytes.size() - start < size + 1 || bytes[start + size] != '\n') return std::nullopt;
    records.add(std::string(bytes.substr(0, space)), std::string(bytes.substr(start, size)));
    bytes.remove_prefix(start + size + 1);
  }
  return records;
}

bool write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string part = path + ".part";
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return false;
  }
  return std::rename(part.c_str(), path.c_str()) == 0;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

}  // namespace kcache::hip
