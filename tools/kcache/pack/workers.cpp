#include "pack/workers.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>
#include <map>

extern char** environ;

namespace kcache::tool {
namespace {

constexpr std::string_view kKinds[] = {"compiled", "reused", "failed", "nocompiler"};

// A text as one field of a line: '\\', newline, tab and carriage return
// escaped, so a compiler's log crosses whole.
std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string unescaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char c = text[++i];
    out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
  }
  return out;
}

using Clock = std::chrono::steady_clock;

struct Worker {
  pid_t pid = -1;
  int to = -1;          // its stdin
  int from = -1;        // its stdout
  std::string pending;  // what was read, up to a newline
  // Indexes sent, not yet answered, each with when it was sent (it has one
  // in hand at a time: its first is sent as it starts).
  std::map<std::size_t, Clock::time_point> handed;
};

bool send_index(Worker& worker, std::size_t index) {
  const std::string text = std::to_string(index) + "\n";
  if (::write(worker.to, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    return false;
  }
  worker.handed.emplace(index, Clock::now());
  return true;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::string ending_of(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return "it could not be waited for";
  if (WIFSIGNALED(status)) return "it was killed by signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    return "it exited with status " + std::to_string(WEXITSTATUS(status));
  }
  return "it ended before answering";
}

// Starts `arguments` with pipes for stdin and stdout.
bool spawn(const std::vector<std::string>& arguments, Worker& worker, std::string& why) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) {
    why = std::strerror(errno);
    return false;
  }
  if (::pipe2(out, O_CLOEXEC) != 0) {
    why = std::strerror(errno);
    ::close(in[0]);
    ::close(in[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  // A process group of its own (workers.h).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<char*> argv;
  for (const auto& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int failed =
      ::posix_spawn(&worker.pid, "/proc/self/exe", &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  ::close(out[1]);
  if (failed != 0) {
    why = std::strerror(failed);
    ::close(in[1]);
    ::close(out[0]);
    return false;
  }
  worker.to = in[1];
  worker.from = out[0];
  return true;
}

// The worker's own process group, once end_with_parent found it one.
std::atomic<pid_t> own_group{0};
static_assert(std::atomic<pid_t>::is_always_lock_free, "read in a signal handler");

// The pack is gone: the worker's group goes (what it compiles with it).
void on_parent_gone(int signal) {
  if (const pid_t group = own_group.load(); group > 0) ::killpg(group, SIGKILL);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

}  // namespace

void end_with_parent(pid_t parent) {
  // Its group is its own when the pack started it (its leader), not a
  // shell's that ran it by hand.
  if (::getpgrp() == ::getpid()) own_group.store(::getpid());
  ::signal(SIGTERM, on_parent_gone);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The pack ended before the line above: nothing would say so later.
  if (::getppid() != parent) ::raise(SIGTERM);
}

std::string encode_outcome(const Outcome& o) {
  return std::to_string(o.index) + "\t" + std::string(kKinds[static_cast<int>(o.kind)]) + "\t" +
         escaped(o.db) + "\t" + o.key_hex + "\t" + (o.keyed_anew ? "1" : "0") + "\t" +
         escaped(o.message);
}

std::optional<Outcome> decode_outcome(std::string_view line) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0; parts.size() < 5;) {
    const auto tab = line.find('\t', start);
    if (tab == std::string_view::npos) return std::nullopt;
    parts.push_back(line.substr(start, tab - start));
    start = tab + 1;
    if (parts.size() == 5) parts.push_back(line.substr(start));
  }
  Outcome o;
  char* end = nullptr;
  const std::string index(parts[0]);
  o.index = std::strtoull(index.c_str(), &end, 10);
  if (index.empty() || *end != '\0') return std::nullopt;
  bool known = false;
  for (int k = 0; k < static_cast<int>(std::size(kKinds)); ++k) {
    if (parts[1] == kKinds[k]) {
      o.kind = static_cast<Outcome::Kind>(k);
      known = true;
    }
  }
  if (!known) return std::nullopt;
  o.db = unescaped(parts[2]);
  o.key_hex = parts[3];
  o.keyed_anew = parts[4] == "1";
  o.message = unescaped(parts[5]);
  return o;
}

void run_workers(const std::vector<std::string>& arguments, unsigned workers, std::size_t count,
                 const std::function<void(const Outcome&)>& on_outcome,
                 const std::function<void(std::size_t, const std::string&)>& on_retry) {
  // A worker that dies must not take the pack with it on the next write.
  struct sigaction ignore {
  }, before{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &before);

  // Lines to hand out; a line whose worker died goes back once (it may
  // not be the one that killed it), then fails.
  std::deque<std::size_t> queue;
  for (std::size_t i = 0; i < count; ++i) queue.push_back(i);
  std::map<std::size_t, int> losses;
  std::string spawn_problem;
  unsigned replacements = workers;  // workers started in place of dead ones, at most

  std::list<Worker> pool;
  auto feed = [&](Worker& worker) {
    // One in hand: a line never waits behind another in a busy worker
    // while a free one has nothing (a second in hand cost a 16-job pack
    // ~3 % of its wall time at the end; the round trip it saved is tens of
    // microseconds against a compile of milliseconds).
    while (worker.to >= 0 && worker.handed.empty() && !queue.empty()) {
      if (!send_index(worker, queue.front())) break;
      queue.pop_front();
    }
    if (queue.empty() && worker.to >= 0 && worker.handed.empty()) close_fd(worker.to);
  };
  auto start = [&] {
    Worker& worker = pool.emplace_back();
    if (!spawn(arguments, worker, spawn_problem)) {
      pool.pop_back();
      return false;
    }
    feed(worker);
    return true;
  };
  for (unsigned i = 0; i < workers; ++i) start();

  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Worker*> owners;
    for (auto& worker : pool) {
      if (worker.from < 0) continue;
      fds.push_back({worker.from, POLLIN, 0});
      owners.push_back(&worker);
    }
    if (fds.empty()) break;
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Worker& worker = *owners[i];
      char buffer[4096];
      const ssize_t got = ::read(worker.from, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {  // the worker is done, or gone
        close_fd(worker.from);
        close_fd(worker.to);
        const std::string why = ending_of(worker.pid);
        for (const auto& [index, since] : worker.handed) {
          if (++losses[index] < 2) {
            queue.push_front(index);
            if (on_retry) on_retry(index, why);
            continue;
          }
          Outcome lost;
          lost.index = index;
          lost.message = "the worker compiling it ended (" + why + "), twice";
          on_outcome(lost);
        }
        const bool died = !worker.handed.empty();
        worker.handed.clear();
        if (died && !queue.empty() && replacements > 0) {
          --replacements;
          start();
        }
        continue;
      }
      worker.pending.append(buffer, static_cast<std::size_t>(got));
      for (std::size_t newline; (newline = worker.pending.find('\n')) != std::string::npos;) {
        auto outcome = decode_outcome(std::string_view(worker.pending).substr(0, newline));
        worker.pending.erase(0, newline + 1);
        if (!outcome) continue;
        const auto handed = worker.handed.find(outcome->index);
        if (handed == worker.handed.end()) continue;
        outcome->seconds = std::chrono::duration<double>(Clock::now() - handed->second).count();
        worker.handed.erase(handed);
        on_outcome(*outcome);
        feed(worker);
      }
    }
    // Lines put back while every other worker had already been told to end.
    bool feeding = false;
    for (auto& worker : pool) feeding = feeding || worker.to >= 0;
    if (!queue.empty() && !feeding && replacements > 0) {
      --replacements;
      start();
    }
  }
  // Lines never answered: no worker could be started, or too many died.
  for (std::size_t index : queue) {
    Outcome lost;
    lost.index = index;
    lost.message = spawn_problem.empty() ? "no worker was left to compile it"
                                         : "no worker could be started: " + spawn_problem;
    on_outcome(lost);
  }
  ::sigaction(SIGPIPE, &before, nullptr);
}

}  // namespace kcache::tool
