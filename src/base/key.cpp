// Targets, keys and key material: the value types of include/kcache/key.h.
#include <kcache/key.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>

#include "base/field_text.h"
#include "base/hash.h"
#include "base/key_digest.h"

namespace kcache {
namespace {

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

bool valid_arch(std::string_view arch) {
  // Not "." or "..", nor a hidden file's name: an arch names its database file.
  if (arch.empty() || arch.size() > 128 || arch.front() == '.') return false;
  return std::all_of(arch.begin(), arch.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-' || c == '.';
  });
}

// A trailing "_<digits>" is the unit count when the rest still names an
// arch with a number in it: "gfx906_60" -> (gfx906, 60), "sm_90" -> none.
std::optional<std::pair<std::string_view, std::string_view>> split_units(std::string_view head) {
  std::size_t underscore = head.rfind('_');
  if (underscore == std::string_view::npos || !all_digits(head.substr(underscore + 1))) {
    return std::nullopt;
  }
  std::string_view arch = head.substr(0, underscore);
  if (std::none_of(arch.begin(), arch.end(), [](unsigned char c) { return std::isdigit(c); })) {
    return std::nullopt;
  }
  return std::pair{arch, head.substr(underscore + 1)};
}

}  // namespace

std::string Target::db_basename() const {
  if (units <= 0) return arch;
  // Built in place: this runs on every request.
  char digits[16];
  const auto written = std::to_chars(std::begin(digits), std::end(digits), units).ptr;
  std::string name;
  name.reserve(arch.size() + 1 + static_cast<std::size_t>(written - digits));
  name.append(arch).push_back('_');
  name.append(digits, written);
  return name;
}

std::string Target::id() const { return features.empty() ? arch : arch + ":" + features; }

std::string Target::to_string() const {
  return features.empty() ? db_basename() : db_basename() + ":" + features;
}

Result<Target> Target::parse(std::string_view text) {
  Target target;
  std::string_view head = text.substr(0, text.find(':'));
  if (head.size() < text.size()) {
    std::vector<std::string> features;
    std::string_view rest = text.substr(head.size() + 1);
    while (true) {
      std::string_view feature = rest.substr(0, rest.find(':'));
      if (feature.size() < 2 || (feature.back() != '+' && feature.back() != '-')) {
        return Status::invalid_argument("target feature '" + std::string(feature) +
                                        "' must read like 'xnack+' or 'sramecc-'");
      }
      features.emplace_back(feature);
      if (feature.size() == rest.size()) break;
      rest.remove_prefix(feature.size() + 1);
    }
    std::sort(features.begin(), features.end());
    for (const auto& f : features) {
      if (!target.features.empty()) target.features += ':';
      target.features += f;
    }
  }
  if (auto split = split_units(head)) {
    if (split->second.size() > 6) return Status::invalid_argument("target unit count is too large");
    target.units = std::stoi(std::string(split->second));
    head = split->first;
    // to_string() leaves a zero count out, so "x1_5_0" would read back as
    // x1 with 5 units.
    if (target.units == 0 && split_units(head)) {
      return Status::invalid_argument("target '" + std::string(text) +
                                      "' is ambiguous: its arch ends in a unit count");
    }
  }
  if (!valid_arch(head)) {
    return Status::invalid_argument("target '" + std::string(text) +
                                    "' is not an arch name (letters, digits, '_', '-', '.', not "
                                    "starting with '.')");
  }
  target.arch = std::string(head);
  return target;
}

std::string CacheKey::hex() const { return to_hex(bytes_); }

std::optional<CacheKey> CacheKey::from_hex(std::string_view text) {
  Bytes bytes{};
  if (!read_hex(text, bytes)) return std::nullopt;
  return CacheKey(bytes);
}

std::string KeyMaterial::serialize() const {
  std::string out;
  for (const auto& field : fields_) {
    if (field.name == kSourceField) {
      append_raw_field(out, field.name, field.value);
    } else {
      append_field(out, field.name, field.value);
    }
  }
  return out;
}

Result<KeyMaterial> KeyMaterial::parse(std::string_view text) {
  // Field lines up to the source's, which is followed by the source itself.
  std::string_view lines = text;
  std::optional<std::string_view> source;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) break;  // decode_fields reports it
    std::string_view line = text.substr(pos, end - pos);
    if (line.starts_with(kSourceField) && line.size() > kSourceField.size() &&
        line[kSourceField.size()] == ' ') {
      auto size = parse_decimal(line.substr(kSourceField.size() + 1));
      std::string_view rest = text.substr(end + 1);
      if (!size || *size != rest.size()) {
        return Status::corruption("key material: the source is not the size its line says");
      }
      lines = text.substr(0, pos);
      source = rest;
      break;
    }
    pos = end + 1;
  }
  auto fields = decode_fields(lines);
  if (!fields) return fields.status();
  std::vector<KeyField> out;
  out.reserve(fields->size() + 1);
  for (auto& [name, value] : *fields) {
    if (name == kSourceField) return Status::corruption("key material: a second source field");
    out.push_back({std::move(name), std::move(value)});
  }
  if (source) out.push_back({std::string(kSourceField), std::string(*source)});
  return KeyMaterial(std::move(out));
}

CacheKey KeyMaterial::digest() const { return key_of_material(serialize()); }

CacheKey key_of_material(std::string_view material) { return CacheKey(xxh3_128(material)); }

}  // namespace kcache
