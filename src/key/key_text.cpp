#include "key/key_text.h"

#include "base/hash.h"

namespace kcache {

CacheKey KeyText::key() const {
  if (key_) return *key_;
  Checksummer hash;
  hash.update({reinterpret_cast<const std::uint8_t*>(head_->data()), head_->size()});
  hash.update({reinterpret_cast<const std::uint8_t*>(source_.data()), source_.size()});
  return CacheKey(hash.finish());
}

std::string KeyText::joined() const {
  std::string text;
  text.reserve(head_->size() + source_.size());
  return text.append(*head_).append(source_);
}

}  // namespace kcache
