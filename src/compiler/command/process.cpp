#include "compiler/command/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "compiler/command/output_file.h"

extern char** environ;

namespace kcache {
namespace {

// What the program printed: never blocks (a program may have replaced the
// file with a FIFO), at most kMaxCompilerLogBytes.
std::string read_output(const std::string& path) { return read_compiler_log(path); }

// A descriptor that becomes readable when `pid` exits (pidfd_open, Linux
// 5.3); -1 where the kernel has none.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// Waits until `pid` exits or `deadline` passes; true when it exited (not
// yet reaped). Through a pidfd the wait ends the moment the program does;
// without one, by polling with a sleep that grows from 1 ms to 50 ms.
bool wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  const int pidfd = open_pidfd(pid);
  if (pidfd >= 0) {
    bool exited = false;
    while (true) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() < 0) break;
      pollfd watch{pidfd, POLLIN, 0};
      const int rc =
          ::poll(&watch, 1, static_cast<int>(std::min<long long>(left.count() + 1, 60'000)));
      if (rc > 0) {
        exited = true;
        break;
      }
      if (rc < 0 && errno != EINTR) break;
    }
    ::close(pidfd);
    if (exited) return true;
    siginfo_t info{};
    return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == pid;
  }
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    siginfo_t info{};
    const int rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if ((rc == 0 && info.si_pid == pid) || (rc < 0 && errno == ECHILD)) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

// "600 s", "0.3 s", "1.25 s".
std::string seconds_text(std::chrono::milliseconds limit) {
  std::string text = std::to_string(limit.count() / 1000);
  if (const auto rest = limit.count() % 1000; rest != 0) {
    std::string fraction = std::to_string(1000 + rest).substr(1);  // "050" for 50 ms
    while (fraction.back() == '0') fraction.pop_back();
    text += "." + fraction;
  }
  return text + " s";
}

// waitpid that retries on EINTR. Returns pid, 0 (WNOHANG, still running) or
// -1 with errno set.
pid_t wait_for(pid_t pid, int* wstatus, int flags) {
  pid_t rc;
  do {
    rc = ::waitpid(pid, wstatus, flags);
  } while (rc < 0 && errno == EINTR);
  return rc;
}

// The pids of `pid`'s children, from /proc/<pid>/task/<tid>/children
// (Linux); none when that cannot be read.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> children;
  std::error_code error;
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
    std::ifstream in(task.path() / "children");
    for (pid_t child = 0; in >> child;) children.push_back(child);
  }
  return children;
}

// SIGKILL to `pid` and every process below it. Each is stopped first, so
// that none starts another while the tree is walked. The tree is found
// through /proc rather than a process group of its own: a child in the
// caller's group still gets the terminal's Ctrl-C with the caller.
void kill_tree(pid_t pid) {
  std::vector<pid_t> tree{pid};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    ::kill(tree[i], SIGSTOP);
    for (pid_t child : children_of(tree[i])) tree.push_back(child);
  }
  for (pid_t member : tree) ::kill(member, SIGKILL);
}

}  // namespace

Result<ProcessResult> run_process(const std::vector<std::string>& argv,
                                  const std::string& output_path,
                                  std::chrono::milliseconds timeout) {
  if (argv.empty()) return Status::invalid_argument("empty command line");
  const bool bounded = timeout.count() > 0;
  std::vector<char*> args;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const auto start = std::chrono::steady_clock::now();
  int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return Status::unavailable("cannot run '" + argv[0] + "': " + std::strerror(rc));
  }

  int wstatus = 0;
  if (!bounded) {
    if (wait_for(pid, &wstatus, 0) < 0) {
      return Status::io_error(std::string("waitpid: ") + std::strerror(errno));
    }
  } else {
    // A century keeps the deadline inside steady_clock's range.
    const auto deadline =
        start + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365 * 100));
    if (!wait_until(pid, deadline)) {
      // Not reaped yet, so its pid cannot have been reused.
      kill_tree(pid);
      wait_for(pid, &wstatus, 0);
      return Status(StatusCode::kTimeout,
                    argv[0] + " did not finish within " + seconds_text(timeout) +
                        "; it was stopped (SIGKILL)",
                    read_output(output_path));
    }
    if (wait_for(pid, &wstatus, 0) < 0) {  // ECHILD: reaped elsewhere (SIGCHLD ignored)
      return Status::io_error(std::string("waitpid: ") + std::strerror(errno));
    }
  }
  ProcessResult result;
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.signal = WTERMSIG(wstatus);
  result.output = read_output(output_path);
  return result;
}

}  // namespace kcache
