// A request's key text: what its lookup hashes and compares.
#pragma once

#include <kcache/key.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace kcache {

// Serialized key material (KeyMaterial::serialize()) in two parts, as a
// request's lookup uses it: the field lines, up to and including the
// source's size line, and the request's own source, not copied. On a hit
// nothing joins them: the key is hashed over both parts and a stored
// material is compared with each.
class KeyText {
 public:
  KeyText(std::string head, std::string_view source)
      : head_(std::make_shared<const std::string>(std::move(head))), source_(source) {}
  // A head shared with a memo, and its key when known (the digest of the
  // same head and source: a memo that compared the source in full may
  // keep it).
  KeyText(std::shared_ptr<const std::string> head, std::string_view source,
          std::optional<CacheKey> key = std::nullopt)
      : head_(std::move(head)), source_(source), key_(key) {}
  // The XXH3-128 of the whole text: KeyMaterial::digest() of the same.
  [[nodiscard]] CacheKey key() const;
  // Whether `material` is this text, byte for byte.
  [[nodiscard]] bool matches(std::string_view material) const {
    return material.size() == head_->size() + source_.size() && material.starts_with(*head_) &&
           material.substr(head_->size()) == source_;
  }
  // The whole text (what is stored with a compiled entry).
  [[nodiscard]] std::string joined() const;
  [[nodiscard]] const std::shared_ptr<const std::string>& head() const { return head_; }

 private:
  std::shared_ptr<const std::string> head_;  // never null
  std::string_view source_;                  // the request's: valid while it lives
  std::optional<CacheKey> key_;
};

}  // namespace kcache
