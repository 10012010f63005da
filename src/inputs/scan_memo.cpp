#include "inputs/scan_memo.h"

#include "base/hash.h"
#include "env/change_watch.h"
#include "env/coarse_clock.h"

namespace kcache {
namespace {

std::uint64_t hash_of(const ScanInputs& inputs) {
  std::uint64_t hash = xxh3_64(inputs.shape);
  for (std::string_view text : inputs.texts) {
    hash = (hash * 0x9E3779B97F4A7C15ULL) ^ xxh3_64(text);  // unseeded: no secret to derive
  }
  return hash;
}

bool any_relative(const IncludeScan& scan) {
  for (const ScanProbe& probe : scan.probes) {
    if (!probe.path.starts_with('/')) return true;
  }
  return false;
}

std::optional<FileId> working_folder(const Env& env) {
  auto here = env.stamp(".");
  if (!here) return std::nullopt;
  return here->id;
}

}  // namespace

bool probes_hold(const IncludeScan& scan, const Env& env) {
  for (const ScanProbe& probe : scan.probes) {
    auto now = env.stamp(probe.path);
    if (now.is_ok()) {
      if (!probe.stamp.has_value() || !(*now == *probe.stamp)) return false;
    } else if (probe.stamp.has_value() || now.status().code() != StatusCode::kNotFound) {
      return false;
    }
  }
  return true;
}

bool ScanMemo::watch_probes(const IncludeScan& scan, ChangeWatch& watch) {
  for (const ScanProbe& probe : scan.probes) {
    if (!watch.watch(probe.path)) return false;
  }
  return true;
}

bool ScanMemo::same_inputs(const Kept& kept, const ScanInputs& inputs) {
  if (kept.shape != inputs.shape || kept.texts.size() != inputs.texts.size()) return false;
  for (std::size_t i = 0; i < inputs.texts.size(); ++i) {
    if (kept.texts[i] != inputs.texts[i]) return false;
  }
  return true;
}

ScanMemo::Kept* ScanMemo::kept_for(std::uint64_t hash,
                                   const std::shared_ptr<const IncludeScan>& scan) {
  auto [first, last] = scans_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (it->second.scan == scan) return &it->second;
  }
  return nullptr;
}

ScanFound ScanMemo::find(const ScanInputs& inputs, const Env& env) {
  const std::uint64_t hash = hash_of(inputs);
  Kept seen;  // a copy of the entry's state, without its inputs
  {
    MutexLock lock(mutex_);
    auto [first, last] = scans_.equal_range(hash);
    for (auto it = first; it != last && !seen.scan; ++it) {
      if (same_inputs(it->second, inputs)) {
        seen.scan = it->second.scan;
        seen.note = it->second.note;
        seen.checks = it->second.checks;
        seen.quiet_at = it->second.quiet_at;
        seen.checked_ns = it->second.checked_ns;
        seen.relative = it->second.relative;
        seen.working_folder = it->second.working_folder;
        seen.unwatchable = it->second.unwatchable;
      }
    }
  }
  if (!seen.scan) return {};
  ScanFound found{seen.scan, seen.note};
  // Nothing on disk was looked at (every header in memory or the toolkit's).
  if (seen.scan->probes.empty()) return found;
  ChangeWatch* watch = env.change_watch();
  const std::int64_t now_ns = coarse_now_ns();
  constexpr std::int64_t kRecheckNs =
      std::chrono::duration_cast<std::chrono::nanoseconds>(kRecheckAfter).count();
  if (watch != nullptr && seen.quiet_at != 0 && now_ns - seen.checked_ns < kRecheckNs) {
    auto changes = watch->changes();
    if (changes && *changes == seen.quiet_at &&
        (!seen.relative || working_folder(env) == seen.working_folder)) {
      return found;
    }
  }

  // A scan reused once already is worth watching. The watches go on
  // before the check and the count is read before it too: a change after
  // the check moves the count, one before it fails the check.
  std::uint64_t quiet_at = 0;  // none
  const bool relative = any_relative(*seen.scan);
  FileId folder{};
  bool unwatchable = seen.unwatchable;
  if (watch != nullptr && seen.checks > 0 && !unwatchable) {
    auto here = relative ? working_folder(env) : std::optional<FileId>(FileId{});
    auto count = watch->changes();
    if (here && count) {
      folder = *here;
      quiet_at = *count;
      if (!watch_probes(*seen.scan, *watch)) {
        quiet_at = 0;
        unwatchable = true;
      }
    }
  }
  if (!probes_hold(*seen.scan, env)) return {};
  if (quiet_at != 0 && relative && working_folder(env) != folder) quiet_at = 0;

  MutexLock lock(mutex_);
  if (Kept* kept = kept_for(hash, seen.scan)) {
    ++kept->checks;
    kept->quiet_at = quiet_at;
    kept->checked_ns = now_ns;
    kept->relative = relative;
    kept->working_folder = folder;
    kept->unwatchable = unwatchable;
  }
  return found;
}

void ScanMemo::keep(const ScanInputs& inputs, IncludeScan scan) {
  if (!scan.reusable || !scan.unkeyable.empty()) return;
  keep(inputs, std::make_shared<const IncludeScan>(std::move(scan)));
}

void ScanMemo::keep(const ScanInputs& inputs, std::shared_ptr<const IncludeScan> kept,
                    std::shared_ptr<const ScanNote> note) {
  if (!kept || !kept->reusable || !kept->unkeyable.empty()) return;
  const std::uint64_t hash = hash_of(inputs);
  std::size_t size = inputs.shape.size() + (note && note->text ? note->text->size() : 0);
  for (std::string_view text : inputs.texts) size += text.size();
  MutexLock lock(mutex_);
  if (scans_.size() >= kMaxScans || bytes_ + size > kMaxBytes) {
    scans_.clear();
    bytes_ = 0;
  }
  auto [first, last] = scans_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    if (same_inputs(it->second, inputs)) {
      it->second.scan = std::move(kept);
      it->second.note = std::move(note);
      it->second.checks = 0;
      it->second.quiet_at = 0;
      it->second.unwatchable = false;
      return;
    }
  }
  bytes_ += size;
  Kept entry;
  entry.shape = inputs.shape;
  entry.texts.assign(inputs.texts.begin(), inputs.texts.end());
  entry.scan = std::move(kept);
  entry.note = std::move(note);
  scans_.emplace(hash, std::move(entry));
}

}  // namespace kcache
