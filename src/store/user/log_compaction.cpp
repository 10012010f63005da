#include "store/user/log_compaction.h"

#include <algorithm>
#include <filesystem>
#include <vector>

namespace kcache {

using userlog::HintRecord;

namespace {
constexpr std::string_view kTempInfix = ".tmp.compact.";
// The new log is written this much at a time (a larger record alone).
constexpr std::size_t kWriteSize = 4u << 20;
}  // namespace

std::vector<std::string> abandoned_compactions(const Env& env, const std::string& path) {
  std::vector<std::string> found;
  const std::filesystem::path log(path);
  auto names = env.list_dir(log.parent_path().string());
  if (!names) return found;
  const std::string prefix = log.filename().string() + std::string(kTempInfix);
  for (const auto& entry : *names) {
    if (entry.is_dir || !entry.name.starts_with(prefix)) continue;
    const std::string temp = (log.parent_path() / entry.name).string();
    if (auto info = env.file_info(temp); info && info->type == FileType::kRegular) {
      found.push_back(temp);
    }
  }
  return found;
}

void remove_abandoned_compactions(Env& env, const std::string& path) {
  for (const std::string& left : abandoned_compactions(env, path)) (void)env.remove_file(left);
}

Result<CompactedLog> write_compacted_log(Env& env, const File& log, std::vector<HintRecord> records,
                                         const std::string& path,
                                         const CompactionOptions& options) {
  std::sort(records.begin(), records.end(),
            [](const HintRecord& a, const HintRecord& b) { return a.offset < b.offset; });
  CompactedLog compacted;
  compacted.generation = userlog::new_generation();
  remove_abandoned_compactions(env, path);
  const std::string temp = path + std::string(kTempInfix) + std::to_string(env.now_unix());
  auto out = env.new_writable_file(temp, options.mode);
  if (!out) return out.status();
  // Written in large pieces: a file written in large writes comes back
  // from the page cache in large folios, so that a hit costs as little as
  // a system-tier one (docs/design.md §3, "Page cache note").
  std::vector<std::uint8_t> pending;
  pending.reserve(kWriteSize);
  const auto header = userlog::encode_header(userlog::FileKind::kLog, compacted.generation);
  pending.insert(pending.end(), header.begin(), header.end());
  Status s;
  std::uint64_t at = userlog::kHeaderSize;
  for (const HintRecord& record : records) {
    const std::size_t padded = userlog::padded(record.size);
    if (pending.size() + padded > kWriteSize && !pending.empty()) {
      s = (*out)->append(pending);
      pending.clear();
      if (!s.is_ok()) break;
    }
    const std::size_t start = pending.size();
    pending.resize(start + padded, 0);  // the padding stays zero
    s = log.read_at(record.offset, std::span<std::uint8_t>(pending).subspan(start, record.size));
    if (!s.is_ok()) break;
    compacted.records.push_back(HintRecord{record.key, at, record.size});
    at += padded;
  }
  if (s.is_ok() && !pending.empty()) s = (*out)->append(pending);
  if (s.is_ok() && options.sync) s = (*out)->sync();
  if (s.is_ok()) s = (*out)->close();
  out->reset();
  if (s.is_ok()) s = env.rename(temp, path);
  if (!s.is_ok()) {
    (void)env.remove_file(temp);
    return s;
  }
  if (options.sync) (void)env.sync_dir(options.folder);
  compacted.end = at;
  return compacted;
}

}  // namespace kcache
