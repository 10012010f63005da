#include "package/package_metadata.h"

#include <kcache/key.h>
#include <kcache/version.h>

#include <cctype>

#include "format/entry.h"
#include "key/key_builder.h"

namespace kcache {

Fields package_metadata(const std::string& db, const std::set<std::string>& compilers,
                        const std::set<std::string>& features, std::int64_t created_unix) {
  Fields metadata{{"producer", std::string("kcache ") + KCACHE_VERSION_STRING},
                  {"db", db},
                  {"created", std::to_string(created_unix)},
                  {"key_format", std::to_string(kKeySchemaVersion)},
                  {"entry_format", std::to_string(kEntryFormatVersion)}};
  for (const auto& compiler : compilers) metadata.emplace_back("compiler", compiler);
  for (const auto& one : features) {
    if (!one.empty()) metadata.emplace_back("features", one);
  }
  return metadata;
}

bool valid_db_name(std::string_view name) {
  if (name.empty() || name.size() > 200 || name.front() == '.') return false;
  for (unsigned char c : name) {
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '.') return false;
  }
  return true;
}

std::string compiler_of_material(std::string_view material) {
  auto parsed = KeyMaterial::parse(std::string(material));
  if (!parsed) return {};
  std::string backend, id, version;
  for (const auto& field : parsed->fields()) {
    if (field.name == "backend") backend = field.value;
    if (field.name == "compiler.id") id = field.value;
    if (field.name == "compiler.version") version = field.value;
  }
  return backend + " | " + id + " | " + version;
}

std::string features_of_material(std::string_view material) {
  auto parsed = KeyMaterial::parse(std::string(material));
  if (!parsed) return {};
  for (const auto& field : parsed->fields()) {
    if (field.name == "target.features") return field.value;
  }
  return {};
}

}  // namespace kcache
