// What the C API's files share: the handles behind the opaque types, and
// the way a C++ status or exception becomes a C status and message.
#pragma once

#include <kcache/c_api.h>
#include <kcache/cache.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct kcache_cache {
  std::unique_ptr<kcache::Cache> cache;
};
struct kcache_compiler {
  std::unique_ptr<kcache::Compiler> compiler;
};
struct kcache_kernel {
  kcache::CachedKernel kernel;
  std::string key_hex;
  std::string target;
  // Name expression -> the symbol it was lowered to, so that the answer
  // has storage while the kernel lives.
  std::map<std::string, std::string, std::less<>> lowered;
};
struct kcache_entry {
  kcache::CachedKernel entry;
};
struct kcache_client_claim {
  kcache::ClientClaim claim;
  std::optional<kcache_entry> found;
};

namespace kcache::c_api {

inline char* duplicate(std::string_view text) {
  char* copy = static_cast<char*>(std::malloc(text.size() + 1));
  if (copy != nullptr) {
    if (!text.empty()) std::memcpy(copy, text.data(), text.size());
    copy[text.size()] = '\0';
  }
  return copy;
}

inline int fail(const Status& status, char** error) {
  if (error != nullptr) {
    std::string text = status.message();
    if (!status.details().empty()) text += "\n" + status.details();
    *error = duplicate(text);
  }
  return static_cast<int>(status.code());
}

inline int succeed(char** error) {
  if (error != nullptr) *error = nullptr;
  return 0;
}

inline int invalid(const std::string& message, char** error) {
  return fail(Status::invalid_argument(message), error);
}

// Runs `body`, turning anything it throws (std::bad_alloc) into a status.
template <class Body>
int guarded(char** error, Body&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(Status::internal("out of memory"), error);
  } catch (...) {
    return fail(Status::internal("unexpected exception"), error);
  }
}

// `count` C strings, or kInvalidArgument naming `what` when the array is
// NULL with a count, or holds a NULL.
Result<std::vector<std::string>> strings_of(const char* const* array, std::size_t count,
                                            std::string_view what);

// Metadata from parallel name and value arrays.
Result<EntryMetadata> metadata_of(const char* const* names, const char* const* values,
                                  std::size_t count);

// A client key: `size` bytes at `key` (NULL only when size is 0, which
// the cache refuses with its own message).
Result<std::string_view> client_key_of(const void* key, std::size_t size);

// The bytes to store: `size` bytes at `data`.
Result<std::span<const std::uint8_t>> bytes_of(const void* data, std::size_t size);

// Metadata lookups shared by kernels and entries; NULL when absent.
const char* metadata_value(const CachedKernel& kernel, const char* name);
const char* metadata_name_at(const CachedKernel& kernel, std::size_t index);
const char* metadata_value_at(const CachedKernel& kernel, std::size_t index);

}  // namespace kcache::c_api
