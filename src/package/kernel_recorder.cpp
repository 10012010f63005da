#include "package/kernel_recorder.h"

#include <limits.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/hash.h"
#include "env/trusted_path.h"

namespace kcache {
namespace {

using json = nlohmann::json;

// How long a writer waits for another one holding the manifest.
constexpr std::chrono::seconds kLockWait{10};

// How much of what was last read is compared, before the next read, with
// what the file holds there now: a manifest rewritten to the same length
// or longer is told from one that others only appended to.
constexpr std::size_t kTailBytes = 64;

// How many times a manifest cut while it is read is read again before the
// append gives up.
constexpr int kMostRereads = 16;

// A text as JSON holds it: a string when it is UTF-8, else {"hex": its
// bytes in hex}.
json text_value(std::string_view text) {
  json value = std::string(text);
  try {
    (void)value.dump();  // throws on bytes that are not UTF-8
    return value;
  } catch (const json::type_error&) {
    return {{"hex", to_hex({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()})}};
  }
}

}  // namespace

KernelRecorder::KernelRecorder(std::string path, bool shared, Env& env, const Logger& log)
    : path_(std::move(path)), shared_(shared), env_(env), log_(log) {}

std::string KernelRecorder::line_of(const KernelRequest& request, const Compiler& compiler,
                                    const Target& target, const CacheKey& key,
                                    const KeyText& text) {
  const CompilerIdentity& identity = compiler.identity();
  json line;
  line["kcache_manifest"] = 1;
  line["key"] = key.hex();
  line["backend"] = text_value(identity.backend);
  line["compiler"] = {{"id", text_value(identity.id)}, {"version", text_value(identity.version)}};
  // The library the program compiled through, wherever it found it.
  if (const std::string library = compiler.library(); !library.empty()) {
    line["compiler"]["library"] = text_value(library);
  }
  line["target"] = {{"arch", text_value(target.arch)},
                    {"features", text_value(target.features)},
                    {"units", target.units}};
  line["options"] = text_value(request.options);
  line["kernel_names"] = json::array();
  for (const auto& name : request.kernel_names) line["kernel_names"].push_back(text_value(name));
  line["include_dirs"] = json::array();
  for (const auto& dir : request.include_dirs) line["include_dirs"].push_back(text_value(dir));
  line["headers"] = json::array();
  for (const auto& header : request.headers) {
    line["headers"].push_back(
        {{"name", text_value(header.name)}, {"content", text_value(header.content)}});
  }
  // The headers on disk as the key saw them: its "header" fields
  // ("<name> <where found> <digest>").
  line["key_headers"] = json::array();
  if (auto material = KeyMaterial::parse(text.joined())) {
    for (const auto& field : material->fields()) {
      if (field.name == "header" && field.value.find(" memory:") == std::string::npos) {
        line["key_headers"].push_back(text_value(field.value));
      }
    }
  }
  // The program's name is part of the key when given (the NVRTC shim gives
  // every request one).
  if (request.source_name) line["source_name"] = text_value(*request.source_name);
  // Where the program ran: a relative include folder, and the working
  // folder PoCL and NVRTC search, are found from there.
  if (char cwd[PATH_MAX]; ::getcwd(cwd, sizeof cwd) != nullptr) line["cwd"] = text_value(cwd);
  line["source"] = text_value(request.source);
  return line.dump();
}

void KernelRecorder::record(const KernelRequest& request, const Compiler& compiler,
                            const Target& target, const CacheKey& key, const KeyText& text) {
  {
    MutexLock lock(mutex_);
    if (stopped_ || (recorded_.contains(key) && !looks_rewritten())) return;
  }
  const std::string line = line_of(request, compiler, target, key, text);
  MutexLock lock(mutex_);
  // Another thread may have recorded it meanwhile.
  if (stopped_ || (recorded_.contains(key) && !looks_rewritten())) return;
  if (Status s = append_once(key, line); !s.is_ok()) {
    stopped_ = true;
    log_.warn_once("Record:" + path_, "Record",
                   "Cannot record kernels in " + path_ + " (KCACHE_RECORD): " + s.message() +
                       "; recording stops for this process");
  }
}

Result<std::unique_ptr<File>> KernelRecorder::open_manifest(std::string& real) const {
  if (shared_) {
    // A team's file, reached through whatever links they made.
    std::error_code error;
    real = std::filesystem::weakly_canonical(path_, error).string();
    if (error) real = path_;
    return env_.open_file(real, OpenMode::kAppend, 0666);
  }
  const auto refused = [&](const std::string& reason) {
    return Status::unavailable(refusal_words(reason) +
                               "; KCACHE_RECORD_SHARED=1 records there if it is shared on purpose");
  };
  if (auto reason = untrusted_appended_file_reason(path_, env_, real)) return refused(*reason);
  auto file = env_.open_file(real, OpenMode::kAppend, 0600);
  if (!file) return file.status();
  // Judged again as opened: a file someone made at the name meanwhile
  // (in a folder others write in) is theirs.
  if (auto reason = untrusted_open_file_reason(real, (*file)->id(), env_)) return refused(*reason);
  return file;
}

Status KernelRecorder::append_once(const CacheKey& key, const std::string& line) {
  std::string real;
  auto file = open_manifest(real);
  if (!file) return file.status();
  // The manifest's byte 0, held for this append alone. Locks are never
  // taken through a link: the manifest's own path.
  std::unique_ptr<FileLock> held;
  const auto deadline = std::chrono::steady_clock::now() + kLockWait;
  for (auto pause = std::chrono::milliseconds(1);;) {
    auto lock = env_.try_lock(real, 0, shared_ ? 0666 : 0600);
    if (!lock) return lock.status();
    if (*lock) {
      held = std::move(*lock);
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::unavailable("another process held it for " +
                                 std::to_string(kLockWait.count()) + " s");
    }
    std::this_thread::sleep_for(pause);  // another writer's append: short
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  auto size = catch_up(**file);
  if (!size) return size.status();
  if (recorded_.contains(key)) return Status::ok();  // in the file already
  std::string out;
  // A line a killed writer left unended is ended, not joined to ours.
  if (*size > read_up_to_) out.push_back('\n');
  out.append(line).push_back('\n');
  // At the end, wherever it is now: one who cut the file since its size
  // was read leaves no hole before the line (kAppend).
  if (Status s =
          (*file)->write_at(*size, {reinterpret_cast<const std::uint8_t*>(out.data()), out.size()});
      !s.is_ok()) {
    // Cut back what was written: a partial line must not stay behind. Only
    // from a file still longer than it was: one cut meanwhile would be
    // lengthened with zeros (its torn line is skipped by readers, and
    // ended by the next writer).
    if (auto now = (*file)->size(); now && *now > *size) (void)(*file)->truncate(*size);
    return s;
  }
  recorded_.insert(key);
  read_up_to_ = *size + out.size();
  tail_ = out.substr(out.size() - std::min(out.size(), kTailBytes));
  return Status::ok();
}

bool KernelRecorder::looks_rewritten() const {
  auto now = env_.stamp(path_);
  return !now || now->id != read_id_ || now->size < read_up_to_;
}

Result<bool> KernelRecorder::rewritten(const File& file, std::uint64_t size) const {
  if (file.id() != read_id_ || size < read_up_to_) return true;
  if (tail_.empty()) return false;
  std::string there(tail_.size(), '\0');
  if (Status s = file.read_at(read_up_to_ - tail_.size(),
                              {reinterpret_cast<std::uint8_t*>(there.data()), there.size()});
      !s.is_ok()) {
    return s;
  }
  return there != tail_;
}

Status KernelRecorder::remember_tail(const File& file) {
  tail_.assign(std::min<std::uint64_t>(read_up_to_, kTailBytes), '\0');
  return file.read_at(read_up_to_ - tail_.size(),
                      {reinterpret_cast<std::uint8_t*>(tail_.data()), tail_.size()});
}

Result<std::uint64_t> KernelRecorder::catch_up(const File& file) {
  for (int attempt = 0;; ++attempt) {
    auto size = file.size();
    if (!size) return size.status();
    Status s = read_new_lines(file, *size);
    if (s.is_ok()) return *size;
    // Cut while it was read (one who empties it takes no lock): read
    // again, whole. A file cut over and over past every try is the only
    // way this fails.
    if (s.code() != StatusCode::kCorruption || attempt + 1 == kMostRereads) return s;
    forget_what_was_read(file);
  }
}

void KernelRecorder::forget_what_was_read(const File& file) {
  read_up_to_ = 0;
  read_id_ = file.id();
  tail_.clear();
  recorded_.clear();
}

Status KernelRecorder::read_new_lines(const File& file, std::uint64_t size) {
  auto other = rewritten(file, size);
  if (!other) return other.status();
  if (*other) {
    // Emptied, cut, rewritten or replaced by someone: read again whole,
    // and what was recorded in the file read before is no longer there.
    forget_what_was_read(file);
  }
  if (size == read_up_to_) return Status::ok();
  std::string text(size - read_up_to_, '\0');
  if (Status s =
          file.read_at(read_up_to_, {reinterpret_cast<std::uint8_t*>(text.data()), text.size()});
      !s.is_ok()) {
    return s;
  }
  auto note_key = [this](std::string_view one) REQUIRES(mutex_) {
    json parsed = json::parse(one, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("key") && parsed["key"].is_string()) {
      if (auto known = CacheKey::from_hex(parsed["key"].get<std::string>())) {
        recorded_.insert(*known);
      }
    }
  };
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    note_key(std::string_view(text.data() + start, end - start));
  }
  // An unended last line stays unread, so the next append ends it first:
  // a writer killed midway left a torn line, which does not parse. One
  // that does is whole, its newline taken off (an editor's doing): its
  // kernel is recorded.
  if (start < text.size()) note_key(std::string_view(text.data() + start, text.size() - start));
  read_up_to_ += start;
  return remember_tail(file);
}

}  // namespace kcache
