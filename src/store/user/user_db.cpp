#include "store/user/user_db.h"

namespace kcache::userlog {

bool hint_describes(const File& hint, const Generation& generation) {
  std::uint8_t header[kHeaderSize];
  if (!hint.read_at(0, header).is_ok()) return false;
  auto named = decode_header(FileKind::kHint, header);
  return named && *named == generation;
}

void Db::read_hint() {
  if (!hint) return;
  auto size = hint->size();
  if (!size || *size <= hint_read) return;
  const std::uint64_t n = (*size - hint_read) / kHintRecordSize * kHintRecordSize;
  if (n == 0) return;
  std::vector<std::uint8_t> bytes(n);
  if (!hint->read_at(hint_read, bytes).is_ok()) return;
  std::vector<HintRecord> records;
  records.reserve(n / kHintRecordSize);
  for (std::size_t at = 0; at < n; at += kHintRecordSize) {
    auto record = decode_hint({bytes.data() + at, kHintRecordSize});
    if (!record) break;
    records.push_back(*record);
  }
  apply_hinted(records);
  hint_read += records.size() * kHintRecordSize;
}

void Db::read_past_hint() {
  auto size = log->size();
  if (!size) return;
  for (std::uint64_t offset = read_end; offset < *size;) {
    auto step = scan_step(*log, offset, *size);
    if (!step || step->kind == ScanStep::Kind::kEnd || step->kind == ScanStep::Kind::kDamaged) {
      return;
    }
    apply(step->record);
    offset = step->next;
  }
}

Result<LogScan> scan_log(const File& log) {
  auto size = log.size();
  if (!size) return size.status();
  LogScan scan;
  scan.size = *size;
  for (std::uint64_t offset = userlog::kHeaderSize;;) {
    auto step = userlog::scan_step(log, offset, *size);
    if (!step) return step.status();
    switch (step->kind) {
      case ScanStep::Kind::kEnd:
        return scan;
      case ScanStep::Kind::kEntry:
        ++scan.entries;
        scan.live[step->record.key] = step->record;
        scan.end = step->next;
        break;
      case ScanStep::Kind::kRemoval:
        scan.live.erase(step->record.key);
        scan.end = step->next;
        break;
      case ScanStep::Kind::kDamaged:
        if (step->next >= *size) {
          scan.torn_tail = *step;
        } else {
          scan.damaged.push_back(*step);
        }
        break;
    }
    offset = step->next;
  }
}

}  // namespace kcache::userlog
