// ChangeWatch on Linux: one inotify instance and /proc/self/mountinfo.
//
// A lookup of /a/b/x.h depends on the name "a" in /, "b" in /a, "x.h" in
// /a/b and the content of x.h. Each folder is watched for the names that
// matter in it (the others' events are read and dropped) and for its own
// move or removal; the file is watched by inode, so a write through a hard
// link elsewhere or a bind mount is seen too. A mount or unmount anywhere
// counts as a change: it can put another tree under any path.
#include "env/change_watch.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include "base/mutex.h"

#include "env/unique_fd.h"

namespace kcache {
namespace {

// File systems whose every change is made by this kernel, so inotify sees
// it. Network and FUSE file systems are left out: a change made on
// another machine (or by a FUSE daemon's backing store) sends no event.
constexpr unsigned long kLocalFileSystems[] = {
    0xEF53,      // ext2, ext3, ext4
    0x58465342,  // xfs
    0x9123683E,  // btrfs
    0x01021994,  // tmpfs
    0x858458F6,  // ramfs
    0x794C7630,  // overlayfs
    0xF2F52010,  // f2fs
    0x2FC12FC1,  // zfs
};

constexpr std::uint32_t kFolderEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                        IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE | IN_DELETE_SELF |
                                        IN_MOVE_SELF | IN_ONLYDIR;
constexpr std::uint32_t kFileEvents =
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF;

// A process may hold this many watches at most, or a 32nd of the user's
// limit if that is less: the user's editor and build tools share it.
constexpr std::size_t kMaxWatches = 1024;

std::size_t watch_budget() {
  std::size_t user_limit = 8192;  // the kernel's old default
  if (FILE* f = std::fopen("/proc/sys/fs/inotify/max_user_watches", "re")) {
    unsigned long value = 0;
    if (std::fscanf(f, "%lu", &value) == 1) user_limit = value;
    std::fclose(f);
  }
  return std::min(kMaxWatches, user_limit / 32);
}

class InotifyWatch final : public ChangeWatch {
 public:
  explicit InotifyWatch(std::size_t budget) : budget_(budget) {}

  std::optional<std::uint64_t> changes() override {
    MutexLock lock(mutex_);
    if (broken_) return std::nullopt;
    if (inotify_.get() < 0) return changes_;  // nothing watched yet
    // One epoll_wait over both: as cheap as any system call (a poll of
    // the two costs twice that), since it only looks at its ready list.
    epoll_event events[2];
    int ready;
    do {
      ready = ::epoll_wait(epoll_.get(), events, 2, 0);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) return lose();
    for (int i = 0; i < ready; ++i) {
      if (events[i].data.fd == mounts_.get()) {
        // The mount table's "priority event" is a change since the last
        // look.
        if (events[i].events & (EPOLLPRI | EPOLLERR)) {
          ++changes_;
          local_devices_.clear();  // a device number may now be another file system
        }
        continue;
      }
      if (events[i].events & (EPOLLERR | EPOLLHUP)) return lose();
      if ((events[i].events & EPOLLIN) && !take_events()) return lose();
    }
    return changes_;
  }

  bool watch(const std::string& path) override {
    MutexLock lock(mutex_);
    if (broken_ || path.empty()) return false;
    std::string absolute = path;
    if (path[0] != '/') {
      char cwd[PATH_MAX];
      if (::getcwd(cwd, sizeof cwd) == nullptr) return false;
      absolute = std::string(cwd) + "/" + path;
    }
    if (watched_paths_.contains(absolute)) return true;
    if (!open()) return false;
    if (watched_paths_.size() >= 8 * budget_) return false;
    if (!watch_lookup(absolute)) return false;
    watched_paths_.insert(std::move(absolute));
    return true;
  }

  // pthread_atfork's handlers: the child must not read the parent's
  // events (they would be lost to the parent), so it closes the instance
  // and starts again; every count it held is then out of date.
  void before_fork() ACQUIRE(mutex_) { mutex_.lock(); }
  void after_fork_in_parent() RELEASE(mutex_) { mutex_.unlock(); }
  void after_fork_in_child() RELEASE(mutex_) {
    epoll_ = UniqueFd();
    inotify_ = UniqueFd();
    mounts_ = UniqueFd();
    watches_.clear();
    by_inode_.clear();
    watched_paths_.clear();
    local_devices_.clear();
    ++changes_;
    mutex_.unlock();
  }

 private:
  struct InodeKey {
    dev_t device;
    ino_t inode;
    bool operator==(const InodeKey&) const = default;
  };
  struct InodeHash {
    std::size_t operator()(const InodeKey& key) const {
      return std::hash<std::uint64_t>()(key.inode * 0x9E3779B97F4A7C15ull ^ key.device);
    }
  };
  struct Watched {
    bool folder = false;
    InodeKey inode{};
    std::unordered_set<std::string> names;  // folder: the names that matter in it
  };

  // Opens the instance and the mount table on first use.
  bool open() REQUIRES(mutex_) {
    if (inotify_.get() >= 0) return true;
    UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    if (inotify.get() < 0) return false;
    UniqueFd mounts(::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
    if (mounts.get() < 0) return false;
    UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (epoll.get() < 0) return false;
    epoll_event on_events{};
    on_events.events = EPOLLIN;
    on_events.data.fd = inotify.get();
    epoll_event on_mounts{};
    on_mounts.events = EPOLLPRI;
    on_mounts.data.fd = mounts.get();
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, inotify.get(), &on_events) != 0 ||
        ::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, mounts.get(), &on_mounts) != 0) {
      return false;
    }
    inotify_ = std::move(inotify);
    mounts_ = std::move(mounts);
    epoll_ = std::move(epoll);
    return true;
  }

  std::optional<std::uint64_t> lose() REQUIRES(mutex_) {
    broken_ = true;
    return std::nullopt;
  }

  // Reads every queued event; a change is any event on a file, a folder's
  // own move or removal, or one naming a name that matters.
  bool take_events() REQUIRES(mutex_) {
    alignas(inotify_event) char buffer[16384];
    for (;;) {
      ssize_t n = ::read(inotify_.get(), buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return errno == EAGAIN;
      if (n == 0) return false;
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        take(*event);
      }
    }
  }

  void take(const inotify_event& event) REQUIRES(mutex_) {
    if (event.mask & IN_Q_OVERFLOW) {
      ++changes_;
      return;
    }
    if (event.mask & IN_IGNORED) {
      // The watch is gone (its inode was removed, its file system
      // unmounted): the paths that used it must be watched anew.
      if (auto gone = watches_.find(event.wd); gone != watches_.end()) {
        by_inode_.erase(gone->second.inode);
        watches_.erase(gone);
      }
      watched_paths_.clear();
      ++changes_;
      return;
    }
    auto it = watches_.find(event.wd);
    if (it == watches_.end()) return;
    if (!it->second.folder || event.len == 0) {
      ++changes_;
      return;
    }
    // The name is NUL-padded to `len`.
    const std::string_view name(event.name);
    if (it->second.names.contains(std::string(name))) ++changes_;
  }

  bool local(const std::string& path, dev_t device) REQUIRES(mutex_) {
    auto known = local_devices_.find(device);
    if (known != local_devices_.end()) return known->second;
    struct statfs fs;
    if (::statfs(path.c_str(), &fs) != 0) return false;
    const auto magic = static_cast<unsigned long>(fs.f_type) & 0xFFFFFFFFul;
    bool is_local = false;
    for (unsigned long known_magic : kLocalFileSystems) is_local |= known_magic == magic;
    local_devices_.emplace(device, is_local);
    return is_local;
  }

  // Adds a watch on what `path` is now (lstat'ed as `before`), and checks
  // that it is still that: a folder swapped for a link between the two
  // would leave the wrong inode watched.
  bool add(const std::string& path, const struct stat& before, bool folder, std::string_view name)
      REQUIRES(mutex_) {
    const InodeKey inode{before.st_dev, before.st_ino};
    auto known = by_inode_.find(inode);
    if (known == by_inode_.end()) {
      if (!local(path, before.st_dev) || watches_.size() >= budget_) return false;
      const std::uint32_t mask =
          (folder ? kFolderEvents : kFileEvents) | IN_DONT_FOLLOW | IN_MASK_ADD;
      const int wd = ::inotify_add_watch(inotify_.get(), path.c_str(), mask);
      if (wd < 0) return false;
      Watched& watched = watches_[wd];
      watched.folder = folder;
      watched.inode = inode;
      known = by_inode_.insert_or_assign(inode, wd).first;
      struct stat after;
      if (::lstat(path.c_str(), &after) != 0 || after.st_dev != before.st_dev ||
          after.st_ino != before.st_ino) {
        return false;
      }
    }
    Watched& watched = watches_[known->second];
    if (watched.folder != folder) return false;
    if (folder) watched.names.emplace(name);
    return true;
  }

  // Walks `absolute` from `/`, watching each folder for the next name and
  // the file at the end; stops where the lookup would stop (a name that
  // is not there, a step through a file), whose folder then watches for it.
  bool watch_lookup(const std::string& absolute) REQUIRES(mutex_) {
    std::vector<std::string_view> steps;
    for (std::size_t at = 0; at < absolute.size();) {
      std::size_t slash = absolute.find('/', at);
      if (slash == std::string::npos) slash = absolute.size();
      std::string_view step(absolute.data() + at, slash - at);
      at = slash + 1;
      if (step.empty() || step == ".") continue;
      if (step == "..") return false;  // physical, not lexical: a link would move it
      steps.push_back(step);
    }
    std::string folder = "/";
    struct stat st;
    if (::lstat(folder.c_str(), &st) != 0) return false;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (!add(folder, st, true, steps[i])) return false;
      std::string next = folder.size() == 1 ? folder : folder + "/";
      next.append(steps[i]);
      if (::lstat(next.c_str(), &st) != 0) {
        // Absent: the folder watches for the name to appear.
        return errno == ENOENT || errno == ENOTDIR;
      }
      if (S_ISLNK(st.st_mode)) return false;
      const bool last = i + 1 == steps.size();
      if (last) return add(next, st, S_ISDIR(st.st_mode), {});
      // A step through a file fails the lookup (ENOTDIR) whatever the
      // file holds; only its name matters, and that is watched.
      if (!S_ISDIR(st.st_mode)) return true;
      folder = std::move(next);
    }
    return true;  // the path was "/"
  }

  const std::size_t budget_;
  Mutex mutex_;
  UniqueFd inotify_ GUARDED_BY(mutex_);
  UniqueFd mounts_ GUARDED_BY(mutex_);
  UniqueFd epoll_ GUARDED_BY(mutex_);  // both of them
  std::uint64_t changes_ GUARDED_BY(mutex_) = 1;
  bool broken_ GUARDED_BY(mutex_) = false;
  std::unordered_map<int, Watched> watches_ GUARDED_BY(mutex_);  // by watch descriptor
  std::unordered_map<InodeKey, int, InodeHash> by_inode_ GUARDED_BY(mutex_);
  std::unordered_set<std::string> watched_paths_ GUARDED_BY(mutex_);
  std::unordered_map<dev_t, bool> local_devices_ GUARDED_BY(mutex_);
};

InotifyWatch* the_watch = nullptr;

// pthread_atfork's handlers: the lock the first takes is released by one of
// the others, in another call, which the analysis cannot follow.
void watch_before_fork() NO_THREAD_SAFETY_ANALYSIS { the_watch->before_fork(); }
void watch_after_fork_in_parent() NO_THREAD_SAFETY_ANALYSIS { the_watch->after_fork_in_parent(); }
void watch_after_fork_in_child() NO_THREAD_SAFETY_ANALYSIS { the_watch->after_fork_in_child(); }

}  // namespace

ChangeWatch* process_change_watch() {
  static InotifyWatch* watch = [] {
    the_watch = new InotifyWatch(watch_budget());  // never destroyed: used until exit
    ::pthread_atfork(watch_before_fork, watch_after_fork_in_parent, watch_after_fork_in_child);
    return the_watch;
  }();
  return watch;
}

std::unique_ptr<ChangeWatch> make_change_watch(std::size_t budget) {
  return std::make_unique<InotifyWatch>(budget);
}

}  // namespace kcache
