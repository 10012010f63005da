#include "store/tier.h"

namespace kcache {

EntryInfo summarize_entry(const std::string& db, const Entry& entry, std::uint64_t stored_bytes) {
  EntryInfo info;
  info.db = db;
  info.key = entry.key;
  info.bytes = entry.payload_size;
  info.stored_bytes = stored_bytes;
  info.created_unix = entry.created_unix;
  if (auto material = KeyMaterial::parse(entry.material)) {
    for (const auto& field : material->fields()) {
      if (field.name == "kcache.failure") info.failure = true;
      if (field.name == "kcache.client") info.backend = "client";
      if (field.name == "namespace") info.client_namespace = field.value;
      if (field.name == "key") info.client_key = field.value;
      if (field.name == "backend") info.backend = field.value;
      if (field.name == "target.arch") info.target = field.value;
      if (field.name == "kernel") info.kernels += (info.kernels.empty() ? "" : ",") + field.value;
    }
  }
  info.compile_micros = compile_micros_of(entry.metadata).value_or(0);
  return info;
}

}  // namespace kcache
