#include "store/user/user_db.h"

namespace kcache::userlog {

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
