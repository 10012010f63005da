#include "compiler/command/process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace kcache {

Result<ProcessResult> run_process(const std::vector<std::string>& argv,
                                  const std::string& output_path) {
  if (argv.empty()) return Status::invalid_argument("empty command line");
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
  int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return Status::unavailable("cannot run '" + argv[0] + "': " + std::strerror(rc));
  }
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return Status::io_error(std::string("waitpid: ") + std::strerror(errno));
  }
  ProcessResult result;
  if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) result.signal = WTERMSIG(wstatus);
  std::ifstream in(output_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  result.output = text.str();
  return result;
}

}  // namespace kcache
