#include "store/user/log_compaction.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <vector>

namespace kcache {

using userlog::HintRecord;

namespace {
constexpr std::string_view kTempInfix = ".tmp.compact.";
// The new log is written this much at a time (a larger record alone).
constexpr std::size_t kWriteSize = 4u << 20;

// <path>.tmp.compact.<pid>.<n>: two compactions of one log (a pass and a
// repair, in two processes) never meet at one name.
std::string temp_name(const std::string& path) {
  static std::atomic<std::uint64_t> counter{0};
  return path + std::string(kTempInfix) + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}
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

bool is_compaction_temp(std::string_view file_name) {
  return file_name.find(kTempInfix) != std::string_view::npos;
}

void remove_abandoned_compactions(Env& env, const std::string& path) {
  for (const std::string& left : abandoned_compactions(env, path)) {
    // Held: a compaction is writing it (CompactionWriter).
    auto lock = env.try_lock(left, 0, 0600);
    if (lock && *lock) (void)env.remove_file(left);
  }
}

Result<std::unique_ptr<CompactionWriter>> CompactionWriter::start(
    Env& env, const std::string& path, const CompactionOptions& options) {
  const std::string temp = temp_name(path);
  auto out = env.new_writable_file(temp, options.mode);
  if (!out) return out.status();
  auto lock = env.try_lock(temp, 0, options.mode);
  if (!lock || *lock == nullptr) {
    (void)env.remove_file(temp);
    return lock ? Status::unavailable("cannot lock " + temp) : lock.status();
  }
  std::unique_ptr<CompactionWriter> writer(
      new CompactionWriter(env, path, temp, options, std::move(*out), std::move(*lock)));
  writer->compacted_.generation = userlog::new_generation();
  const auto header =
      userlog::encode_header(userlog::FileKind::kLog, writer->compacted_.generation);
  writer->pending_.reserve(kWriteSize);
  writer->pending_.insert(writer->pending_.end(), header.begin(), header.end());
  return writer;
}

CompactionWriter::CompactionWriter(Env& env, std::string path, std::string temp,
                                   CompactionOptions options, std::unique_ptr<WritableFile> out,
                                   std::unique_ptr<FileLock> lock)
    : env_(env),
      path_(std::move(path)),
      temp_(std::move(temp)),
      options_(std::move(options)),
      out_(std::move(out)),
      lock_(std::move(lock)) {}

CompactionWriter::~CompactionWriter() {
  if (done_) return;
  out_.reset();
  (void)env_.remove_file(temp_);  // before the lock goes: no sweep meets it half-removed
}

Status CompactionWriter::flush(bool all) {
  if (pending_.empty() || (!all && pending_.size() < kWriteSize)) return Status::ok();
  Status s = out_->append(pending_);
  pending_.clear();
  return s;
}

Status CompactionWriter::copy(const File& log, std::vector<HintRecord> records) {
  std::sort(records.begin(), records.end(),
            [](const HintRecord& a, const HintRecord& b) { return a.offset < b.offset; });
  for (const HintRecord& record : records) {
    const std::size_t padded = userlog::padded(record.size);
    // Written in large pieces: a file written in large writes comes back
    // from the page cache in large folios, so that a hit costs as little
    // as a system-tier one (docs/design.md §3.10, "Buffers and the page cache").
    if (pending_.size() + padded > kWriteSize) {
      if (Status s = flush(/*all=*/true); !s.is_ok()) return s;
    }
    const std::size_t start = pending_.size();
    pending_.resize(start + padded, 0);  // the padding stays zero
    if (Status s = log.read_at(record.offset,
                               std::span<std::uint8_t>(pending_).subspan(start, record.size));
        !s.is_ok()) {
      return s;
    }
    compacted_.records.push_back(HintRecord{record.key, compacted_.end, record.size});
    compacted_.end += padded;
  }
  return flush(/*all=*/false);
}

Status CompactionWriter::remove(const CacheKey& key) {
  const auto removal = userlog::encode_removal(key);
  const std::size_t padded = userlog::padded(removal.size());
  pending_.resize(pending_.size() + padded, 0);
  std::copy(removal.begin(), removal.end(), pending_.end() - static_cast<std::ptrdiff_t>(padded));
  compacted_.records.push_back(HintRecord{key, compacted_.end, 0});
  compacted_.end += padded;
  return flush(/*all=*/false);
}

Status CompactionWriter::settle() {
  Status s = flush(/*all=*/true);
  if (s.is_ok() && options_.sync) s = out_->sync();
  return s;
}

Result<CompactedLog> CompactionWriter::commit() {
  Status s = flush(/*all=*/true);
  if (s.is_ok() && options_.sync) s = out_->sync();
  if (s.is_ok()) s = out_->close();
  out_.reset();
  if (s.is_ok()) s = env_.rename(temp_, path_);
  if (!s.is_ok()) return s;  // the destructor removes the temporary file
  done_ = true;
  if (options_.sync) (void)env_.sync_dir(options_.folder);
  return std::move(compacted_);
}

Result<CompactedLog> write_compacted_log(Env& env, const File& log, std::vector<HintRecord> records,
                                         const std::string& path,
                                         const CompactionOptions& options) {
  remove_abandoned_compactions(env, path);
  auto writer = CompactionWriter::start(env, path, options);
  if (!writer) return writer.status();
  if (Status s = (*writer)->copy(log, std::move(records)); !s.is_ok()) return s;
  return (*writer)->commit();
}

}  // namespace kcache
