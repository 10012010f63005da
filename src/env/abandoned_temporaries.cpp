#include "env/abandoned_temporaries.h"

#include <signal.h>

#include <cerrno>
#include <charconv>
#include <filesystem>

namespace kcache {
namespace {

// Whether a process `pid` exists (one of another user counts: EPERM).
bool process_exists(long pid) {
  if (pid <= 0 || pid > 0x3fffffff) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

}  // namespace

std::size_t remove_abandoned_temporaries(Env& env, const std::string& path) {
  const std::filesystem::path target(path);
  const std::string prefix = target.filename().string() + ".tmp.";
  if (prefix.size() == 5) return 0;  // no file name
  const std::string folder = target.has_parent_path() ? target.parent_path().string() : ".";
  auto entries = env.list_dir(folder);
  if (!entries) return 0;
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::size_t removed = 0;
  for (const auto& entry : *entries) {
    if (entry.is_dir || !entry.name.starts_with(prefix)) continue;
    // <prefix><pid>.<n>.<random>
    const char* first = entry.name.data() + prefix.size();
    const char* last = entry.name.data() + entry.name.size();
    long pid = 0;
    const auto [end, error] = std::from_chars(first, last, pid);
    if (error != std::errc() || end == first || end == last || *end != '.') continue;
    if (process_exists(pid)) continue;
    const std::string file = folder + "/" + entry.name;
    auto info = env.file_info(file);  // lstat: a link is not a regular file
    if (!info || info->type != FileType::kRegular || info->owner != env.user_id()) continue;
    if (now - info->modified_unix < kAbandonedTemporaryAge.count()) continue;
    if (env.remove_file(file).is_ok()) ++removed;
  }
  return removed;
}

}  // namespace kcache
