// PoCL 3.1 with its kernel cache off (POCL_KERNEL_CACHE=0) unpacks a
// program made from a binary into <POCL_CACHE_DIR>/_UNCACHED_<name taken
// from the binary>, the same folder for every program of that binary in
// every process, and removes it when any of them is released: a second
// one alive at once aborts its process at a kernel launch ("Can't get
// stat() on ..."). Under the layer every program is made from a binary, so
// each process gets a private POCL_CACHE_DIR when PoCL's cache is off
// (nothing is cached there then, only PoCL's temporaries), removed at exit;
// programs of one process share their built program (opencl_layer.cpp).
// With PoCL's cache on, nothing is changed.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "layers/layer_switch.h"
#include "layers/opencl/pocl_private_folder.h"

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "pocl-uncached-";

std::string& folder() {
  static auto* path = new std::string;  // lives until the last atexit
  return *path;
}

void remove_folder() {
  std::error_code ignored;
  if (!folder().empty()) fs::remove_all(folder(), ignored);
}

// A folder of this user's only (0700, not a link), made if missing.
bool private_folder(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) return false;
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid() &&
         (st.st_mode & 077) == 0;
}

// Folders of processes that are gone (killed before their exit).
void remove_abandoned(const std::string& root) {
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kPrefix)) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + kPrefix.size(), &end, 10);
    if (end == nullptr || *end != '\0' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
}

__attribute__((constructor)) void use_private_pocl_folder() {
  if (kcache::layer::layer_disabled()) return;
  const char* cache = std::getenv("POCL_KERNEL_CACHE");
  if (cache == nullptr || std::strcmp(cache, "0") != 0) return;
  std::string base = "/tmp";
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && tmp[0] == '/') base = tmp;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string root = (base == "/" ? "" : base) + "/kcache-" + std::to_string(::getuid());
  if (!private_folder(root)) return;  // PoCL's own folder, as without the layer
  remove_abandoned(root);
  const std::string path = root + "/" + std::string(kPrefix) + std::to_string(::getpid());
  if (!private_folder(path)) return;
  folder() = path;
  ::setenv("POCL_CACHE_DIR", path.c_str(), 1);
  std::atexit(remove_folder);
}

}  // namespace

const std::string& kcache::layer::pocl_private_folder() { return folder(); }
