#include "inputs/scan_memo.h"

#include "format/hash.h"

namespace kcache {
namespace {

std::uint64_t hash_of(const std::string& inputs) {
  const Checksum128 sum = xxh3_128(inputs);
  std::uint64_t hash = 0;
  for (int i = 0; i < 8; ++i) hash = (hash << 8) | sum[i];
  return hash;
}

}  // namespace

std::shared_ptr<const IncludeScan> ScanMemo::find(const std::string& inputs, const Env& env) {
  std::shared_ptr<const IncludeScan> scan;
  const std::uint64_t hash = hash_of(inputs);
  {
    std::lock_guard lock(mutex_);
    auto [first, last] = scans_.equal_range(hash);
    for (auto it = first; it != last && !scan; ++it) {
      if (it->second.inputs == inputs) scan = it->second.scan;
    }
  }
  if (!scan) return nullptr;
  for (const ScanProbe& probe : scan->probes) {
    auto now = env.stamp(probe.path);
    if (now.is_ok()) {
      if (!probe.stamp.has_value() || !(*now == *probe.stamp)) return nullptr;
    } else if (probe.stamp.has_value() || now.status().code() != StatusCode::kNotFound) {
      return nullptr;
    }
  }
  return scan;
}

void ScanMemo::keep(std::string inputs, IncludeScan scan) {
  if (!scan.reusable || !scan.unkeyable.empty()) return;
  const std::uint64_t hash = hash_of(inputs);
  auto kept = std::make_shared<const IncludeScan>(std::move(scan));
  std::lock_guard lock(mutex_);
  if (scans_.size() >= kMaxScans || bytes_ + inputs.size() > kMaxBytes) {
    scans_.clear();
    bytes_ = 0;
  }
  auto [first, last] = scans_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second.inputs == inputs) {
      it->second.scan = std::move(kept);
      return;
    }
  }
  bytes_ += inputs.size();
  scans_.emplace(hash, Kept{std::move(inputs), std::move(kept)});
}

}  // namespace kcache
