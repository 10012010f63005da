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
    bool failure = false;
    for (const auto& field : material->fields()) {
      if (field.name == "kcache.failure") failure = true;
      if (field.name == "backend") info.backend = (failure ? "failure:" : "") + field.value;
      if (field.name == "kernel") info.kernels += (info.kernels.empty() ? "" : ",") + field.value;
    }
  }
  return info;
}

}  // namespace kcache
