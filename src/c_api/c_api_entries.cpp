// The C API of client-keyed entries (kcache_get, kcache_put, kcache_claim
// and the entries they give): Cache::get, put and claim, with keys as
// bytes and a length.
#include <kcache/c_api.h>
#include <kcache/cache.h>

#include "c_api/c_api_internal.h"

namespace kcache::c_api {

Result<EntryMetadata> metadata_of(const char* const* names, const char* const* values,
                                  std::size_t count) {
  auto name_texts = strings_of(names, count, "metadata_names");
  if (!name_texts) return name_texts.status();
  auto value_texts = strings_of(values, count, "metadata_values");
  if (!value_texts) return value_texts.status();
  EntryMetadata out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    out.emplace_back(std::move((*name_texts)[i]), std::move((*value_texts)[i]));
  }
  return out;
}

Result<std::string_view> client_key_of(const void* key, std::size_t size) {
  if (key == nullptr && size != 0) return Status::invalid_argument("key is NULL");
  if (size == 0) return std::string_view();  // the cache says why it is refused
  return std::string_view(static_cast<const char*>(key), size);
}

Result<std::span<const std::uint8_t>> bytes_of(const void* data, std::size_t size) {
  if (data == nullptr && size != 0) return Status::invalid_argument("data is NULL");
  if (size == 0) return std::span<const std::uint8_t>();  // the cache says why it is refused
  return std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(data), size);
}

}  // namespace kcache::c_api

using kcache::c_api::fail;
using kcache::c_api::guarded;
using kcache::c_api::invalid;
using kcache::c_api::succeed;

extern "C" {

int kcache_get(kcache_cache* cache, const char* name_space, const void* key, size_t key_size,
               kcache_entry** out, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || name_space == nullptr || out == nullptr) {
      return invalid("cache, name_space and out are required", error);
    }
    *out = nullptr;
    auto k = kcache::c_api::client_key_of(key, key_size);
    if (!k) return fail(k.status(), error);
    auto found = cache->cache->get(name_space, *k);
    if (!found) return fail(found.status(), error);
    if (*found) *out = new kcache_entry{std::move(**found)};
    return succeed(error);
  });
}

int kcache_put(kcache_cache* cache, const char* name_space, const void* key, size_t key_size,
               const void* data, size_t size, const char* const* metadata_names,
               const char* const* metadata_values, size_t metadata_count, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || name_space == nullptr) {
      return invalid("cache and name_space are required", error);
    }
    auto k = kcache::c_api::client_key_of(key, key_size);
    if (!k) return fail(k.status(), error);
    auto bytes = kcache::c_api::bytes_of(data, size);
    if (!bytes) return fail(bytes.status(), error);
    auto metadata = kcache::c_api::metadata_of(metadata_names, metadata_values, metadata_count);
    if (!metadata) return fail(metadata.status(), error);
    if (kcache::Status s = cache->cache->put(name_space, *k, *bytes, *metadata); !s.is_ok()) {
      return fail(s, error);
    }
    return succeed(error);
  });
}

int kcache_claim(kcache_cache* cache, const char* name_space, const void* key, size_t key_size,
                 kcache_client_claim** out, char** error) {
  return guarded(error, [&] {
    if (cache == nullptr || name_space == nullptr || out == nullptr) {
      return invalid("cache, name_space and out are required", error);
    }
    *out = nullptr;
    auto k = kcache::c_api::client_key_of(key, key_size);
    if (!k) return fail(k.status(), error);
    auto claim = cache->cache->claim(name_space, *k);
    if (!claim) return fail(claim.status(), error);
    std::optional<kcache_entry> found;
    if (claim->found()) found.emplace(kcache_entry{*claim->found()});
    *out = new kcache_client_claim{std::move(*claim), std::move(found)};
    return succeed(error);
  });
}

int kcache_claim_state(const kcache_client_claim* claim) {
  if (claim == nullptr) return 0;
  if (claim->found) return KCACHE_CLAIM_FOUND;
  return claim->claim.held() ? KCACHE_CLAIM_HELD : KCACHE_CLAIM_NOT_HELD;
}

const kcache_entry* kcache_claim_entry(const kcache_client_claim* claim) {
  return claim != nullptr && claim->found ? &*claim->found : nullptr;
}

int kcache_claim_finish(kcache_client_claim* claim, const void* data, size_t size,
                        const char* const* metadata_names, const char* const* metadata_values,
                        size_t metadata_count, char** error) {
  return guarded(error, [&] {
    if (claim == nullptr) return invalid("claim is NULL", error);
    if (!claim->claim.held()) return invalid("this claim does not hold its key", error);
    // Whatever is wrong with the arguments, the key is released: those
    // waiting for it must not wait for a finish that cannot come.
    auto bytes = kcache::c_api::bytes_of(data, size);
    auto metadata = kcache::c_api::metadata_of(metadata_names, metadata_values, metadata_count);
    if (!bytes || !metadata) {
      claim->claim.abandon();
      return fail(!bytes ? bytes.status() : metadata.status(), error);
    }
    if (kcache::Status s = claim->claim.finish(*bytes, *metadata); !s.is_ok()) {
      return fail(s, error);
    }
    return succeed(error);
  });
}

void kcache_claim_abandon(kcache_client_claim* claim) {
  if (claim != nullptr) claim->claim.abandon();
}

void kcache_claim_free(kcache_client_claim* claim) { delete claim; }

const uint8_t* kcache_entry_data(const kcache_entry* entry) {
  return entry != nullptr ? entry->entry.binary().data() : nullptr;
}

size_t kcache_entry_size(const kcache_entry* entry) {
  return entry != nullptr ? entry->entry.binary().size() : 0;
}

const char* kcache_entry_tier(const kcache_entry* entry) {
  return entry != nullptr ? kcache::tier_name(entry->entry.tier).data() : "";
}

const char* kcache_entry_metadata(const kcache_entry* entry, const char* name) {
  return entry != nullptr ? kcache::c_api::metadata_value(entry->entry, name) : nullptr;
}

size_t kcache_entry_metadata_count(const kcache_entry* entry) {
  return entry != nullptr ? entry->entry.metadata_fields.size() : 0;
}

const char* kcache_entry_metadata_name(const kcache_entry* entry, size_t index) {
  return entry != nullptr ? kcache::c_api::metadata_name_at(entry->entry, index) : nullptr;
}

const char* kcache_entry_metadata_value(const kcache_entry* entry, size_t index) {
  return entry != nullptr ? kcache::c_api::metadata_value_at(entry->entry, index) : nullptr;
}

void kcache_entry_free(kcache_entry* entry) { delete entry; }

}  // extern "C"
