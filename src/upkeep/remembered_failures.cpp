#include "upkeep/remembered_failures.h"

#include <string>

#include "key/key_builder.h"

namespace kcache {
namespace {

constexpr std::string_view kPrefix = "kcache.failure ";

std::string failure_material(std::string_view material) {
  return std::string(kPrefix) + "1\n" + std::string(material);
}

}  // namespace

bool is_failure_entry(const Entry& entry) { return entry.material.starts_with(kPrefix); }

Entry failure_entry(std::string_view material, const Status& error, std::int64_t now_unix) {
  Entry entry;
  entry.material = failure_material(material);
  entry.key = key_of_material(entry.material.view());
  entry.created_unix = now_unix;
  entry.metadata = {{"message", error.message()}};
  entry.storage = ByteBuffer::copy_of(
      {reinterpret_cast<const std::uint8_t*>(error.details().data()), error.details().size()});
  entry.payload_size = error.details().size();
  return entry;
}

std::optional<Status> remembered_failure(Tier& user, const DbNames& names,
                                         std::string_view material, std::chrono::milliseconds ttl,
                                         std::int64_t now_unix) {
  const std::string failure = failure_material(material);
  const CacheKey key = key_of_material(failure);
  auto got = user.get(names, key);
  if (!got || !got->has_value() || (*got)->material != failure) return std::nullopt;
  const Entry& entry = **got;
  const std::int64_t age_ms = (now_unix - entry.created_unix) * 1000;
  if (age_ms < 0 || age_ms >= ttl.count()) {
    (void)user.remove(names.exact, key);  // expired: compile again
    return std::nullopt;
  }
  std::string message = "compile error";
  for (const auto& [field, value] : entry.metadata) {
    if (field == "message") message = value;
  }
  auto log = entry.payload();
  return Status::compile_error(
      message + " (remembered from " + std::to_string(age_ms / 1000) +
          " s ago; `kcache clear --failures` or KCACHE_FAILURE_TTL=0 retries it)",
      std::string(log.begin(), log.end()));
}

}  // namespace kcache
