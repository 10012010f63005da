// kcache: a binary as the cache hands it out, and the tier it came from.
#pragma once

#include <kcache/compiler.h>
#include <kcache/export.h>
#include <kcache/key.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

// Where a binary came from.
enum class TierKind { kMemory, kSystem, kUser, kRemote, kCompiled };

// "memory", "system", "user", "remote", "compiled".
KCACHE_EXPORT std::string_view tier_name(TierKind tier);

// A binary and what is known about it. Owns its bytes (shared with the
// memory tier, never copied on a memory hit); cheap to copy.
class KCACHE_EXPORT CachedKernel {
 public:
  CachedKernel() = default;
  // `binary` stays valid while `owner` lives.
  CachedKernel(std::shared_ptr<const void> owner, std::span<const std::uint8_t> binary)
      : owner_(std::move(owner)), binary_(binary) {}

  // The binary, valid as long as this object (or a copy) lives.
  [[nodiscard]] std::span<const std::uint8_t> binary() const { return binary_; }
  // The value of a metadata field stored with the binary, e.g. "format".
  [[nodiscard]] std::optional<std::string> metadata(std::string_view name) const;
  // The symbol to look up for kernel `name_expression` (NVRTC lowers
  // "sgemm<16>" to "_Z5sgemmILi16EEvPf"); the expression itself when the
  // backend did not lower it.
  [[nodiscard]] std::string lowered_name(std::string_view name_expression) const;

  TierKind tier = TierKind::kCompiled;
  CacheKey key;
  Target target;
  // The database that holds (or would hold) the entry: Target::db_basename().
  std::string db;
  std::vector<std::pair<std::string, std::string>> metadata_fields;
  // The compiler's messages when tier == kCompiled; empty otherwise.
  std::string compile_log;

 private:
  std::shared_ptr<const void> owner_;
  std::span<const std::uint8_t> binary_;
};

}  // namespace kcache
