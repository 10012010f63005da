#include "store/user/mapped_log.h"

namespace kcache::userlog {

std::optional<Entry> MappedLog::read(const File& log, const HintRecord& record,
                                     std::uint32_t& checked_epoch) {
  ByteBuffer view;
  const FileMapping* mapping = nullptr;  // kept alive by `view`
  bool checked = false;
  std::uint32_t epoch = 0;
  if (checked_epoch == 0) {
    // A record never checked, in the part of the log already mapped, needs
    // no look at the file: its full check holds whatever the log now holds
    // there. A record checked before is lent on its header and key alone,
    // and only while the stamp holds: the stamp is looked at first, below.
    // A mapping that lost a page is looked at again below (and dropped).
    MutexLock lock(mutex_);
    if (mapping_ != nullptr && stamp_ && record.offset + record.size <= mapping_->bytes().size() &&
        !mapping_->damaged()) {
      view = view_of(mapping_, record.offset, record.size);
      mapping = mapping_.get();
      epoch = epoch_;
    }
  }
  if (mapping == nullptr) {
    // Before any byte is read: a write from here on moves the stamp.
    auto now = log.stamp();
    if (!now) return std::nullopt;
    MutexLock lock(mutex_);
    if (!stamp_ || !(*stamp_ == *now)) {
      if (++epoch_ == 0) epoch_ = 1;
      stamp_ = *now;
      // Truncated below the mapping: its lost pages are not read again.
      if (mapping_ != nullptr && mapping_->bytes().size() > now->size) mapping_.reset();
    }
    if (record.offset + record.size > now->size) return std::nullopt;
    if (mapping_ == nullptr || record.offset + record.size > mapping_->bytes().size()) {
      if (unmappable_at_ == now->size) return std::nullopt;
      auto mapped = log.map(now->size);
      if (!mapped) {
        unmappable_at_ = now->size;
        return std::nullopt;
      }
      mapping_ = std::move(*mapped);
      unmappable_at_.reset();
    }
    view = view_of(mapping_, record.offset, record.size);
    mapping = mapping_.get();
    checked = checked_epoch == epoch_;
    epoch = epoch_;
  }
  auto entry =
      decode_entry(view, &record.key, checked ? EntryCheck::kChecksumPassed : EntryCheck::kFull);
  // A page lost to a truncation read as zeros: not served from here.
  if (!entry || mapping->damaged()) return std::nullopt;
  // Should the epoch have moved meanwhile, the next read checks it again.
  if (!checked) checked_epoch = epoch;
  return std::move(*entry);
}

}  // namespace kcache::userlog
