#include "inputs/file_digests.h"

#include "base/hash.h"

namespace kcache {

std::int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool changed_recently(const FileStamp& stamp, std::int64_t reference_ns) {
  constexpr std::int64_t kSecond = 1'000'000'000;
  const bool whole_seconds = stamp.modified_ns % kSecond == 0 && stamp.changed_ns % kSecond == 0;
  const std::int64_t tick_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          whole_seconds ? std::chrono::nanoseconds(kCoarseTimestampTick) : kFineTimestampTick)
          .count();
  if (reference_ns == 0) reference_ns = wall_clock_ns();
  return std::max(stamp.modified_ns, stamp.changed_ns) > reference_ns - tick_ns;
}

Result<FileContent> read_file_content(const std::string& path, const Env& env) {
  auto bytes = env.read_file(path);
  if (!bytes) return bytes.status();
  const auto span = bytes->span();
  const std::string_view text(reinterpret_cast<const char*>(span.data()), span.size());
  FileContent content;
  content.digest = sha256_field(text);
  content.size = span.size();
  content.directives = std::make_shared<const SourceDirectives>(find_directives(text));
  return content;
}

Result<FileContent> FileDigests::get(const std::string& path, const FileStamp& stamp,
                                     const Env& env) {
  {
    MutexLock lock(mutex_);
    if (auto it = known_.find(path); it != known_.end() && it->second.stamp == stamp) {
      return it->second.content;
    }
  }
  auto content = read_file_content(path, env);
  MutexLock lock(mutex_);
  ++reads_;
  if (!content) return content;
  // The stamp must still be the one the bytes were read under, and old
  // enough to tell the next edit.
  if (content->size == stamp.size && !changed_recently(stamp)) {
    if (known_.size() >= kMaxFiles) known_.clear();
    known_[path] = {stamp, *content};
  } else {
    known_.erase(path);
  }
  return content;
}

FileContent FileDigests::text(std::string_view text, bool directives) {
  const Checksum128 sum = xxh3_128(text);
  std::uint64_t hash = 0;
  for (int i = 0; i < 8; ++i) hash = (hash << 8) | sum[i];
  {
    MutexLock lock(mutex_);
    auto [first, last] = texts_.equal_range(hash);
    for (auto it = first; it != last; ++it) {
      if (it->second.text == text && (!directives || it->second.content.directives)) {
        return it->second.content;
      }
    }
  }
  FileContent content;
  content.digest = sha256_field(text);
  content.size = text.size();
  if (directives)
    content.directives = std::make_shared<const SourceDirectives>(find_directives(text));
  MutexLock lock(mutex_);
  if (text_bytes_ + text.size() > kMaxTextBytes) {
    texts_.clear();
    text_bytes_ = 0;
  }
  if (text.size() <= kMaxTextBytes / 16) {
    texts_.emplace(hash, KnownText{std::string(text), content});
    text_bytes_ += text.size();
  }
  return content;
}

std::uint64_t FileDigests::reads() const {
  MutexLock lock(mutex_);
  return reads_;
}

}  // namespace kcache
