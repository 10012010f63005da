// What a request gives back: CachedKernel's lookups of its metadata, and
// the names of the tiers it can come from.
#include <kcache/kernel.h>

namespace kcache {

std::string_view tier_name(TierKind tier) {
  switch (tier) {
    case TierKind::kMemory:
      return "memory";
    case TierKind::kSystem:
      return "system";
    case TierKind::kUser:
      return "user";
    case TierKind::kRemote:
      return "remote";
    case TierKind::kCompiled:
      return "compiled";
  }
  return "compiled";
}

std::optional<std::string> CachedKernel::metadata(std::string_view name) const {
  for (const auto& [field, value] : metadata_fields) {
    if (field == name) return value;
  }
  return std::nullopt;
}

std::string CachedKernel::lowered_name(std::string_view name_expression) const {
  for (const auto& [field, value] : metadata_fields) {
    std::size_t space = value.find(' ');
    if (field == kLoweredField && space != std::string::npos &&
        std::string_view(value).substr(space + 1) == name_expression) {
      return value.substr(0, space);
    }
  }
  return std::string(name_expression);
}

}  // namespace kcache
