// kcache run -- PROGRAM ARGS...: runs a program that never heard of kcache
// with the drop-in layers in place (docs/design.md §10): the OpenCL layer
// preloaded, nothing else of its environment changed. The layer is found
// beside the libkcache this tool runs with, so an install works as a build
// tree does.
#include <kcache/cache.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

namespace kcache::tool {
namespace {

constexpr const char* kOpenClLayer = "libkcache_opencl_layer.so";

struct RunArguments {
  bool print_env = false;
  std::vector<std::string> command;
};

// The folder of the libkcache this process loaded.
std::string library_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&kcache::tier_name), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code error;
  auto path = std::filesystem::canonical(info.dli_fname, error);
  return error ? std::string() : path.parent_path().string();
}

// LD_PRELOAD with `library` first, once.
std::string preload_with(const std::string& library) {
  const char* current = std::getenv("LD_PRELOAD");
  std::string out = library;
  if (current == nullptr) return out;
  std::string rest(current);
  std::size_t start = 0;
  while (start <= rest.size()) {
    std::size_t end = rest.find_first_of(" :", start);
    if (end == std::string::npos) end = rest.size();
    const std::string item = rest.substr(start, end - start);
    if (!item.empty() && item != library) out += " " + item;
    start = end + 1;
  }
  return out;
}

int run_program(const RunArguments& args, std::vector<std::string> command) {
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  const std::string folder = library_folder();
  if (folder.empty()) return report_failure("run: cannot tell where libkcache is installed");
  const std::string layer = folder + "/" + kOpenClLayer;
  if (::access(layer.c_str(), R_OK) != 0) {
    return report_failure("run: the OpenCL layer " + layer +
                          " is not there (this kcache was built without OpenCL?)");
  }
  const std::string preload = preload_with(layer);
  if (args.print_env) {
    std::cout << "LD_PRELOAD=" << preload << "\n";
    return 0;
  }
  if (command.empty()) {
    std::cerr << "kcache: run: name the program to run: kcache run -- PROGRAM [ARGS...]\n";
    return 2;
  }
  ::setenv("LD_PRELOAD", preload.c_str(), 1);
  std::vector<char*> argv;
  for (auto& word : command) argv.push_back(word.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int err = errno;
  std::cerr << "kcache: run: cannot run '" << command.front() << "': " << std::strerror(err)
            << "\n";
  return err == ENOENT ? 127 : 126;  // as a shell says
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArguments>();
  CLI::App* sub = app.add_subcommand(
      "run",
      "Run a program with kcache underneath its OpenCL program builds (kcache run -- PROGRAM "
      "ARGS...)");
  // After --, everything is the program's, its options too (without --, an
  // option of the program is taken for kcache's and refused).
  sub->add_option("command", args->command, "The program and its arguments, after --");
  sub->add_flag("--print-env", args->print_env,
                "Print the environment the program would get (LD_PRELOAD) and exit");
  sub->footer(
      "The program runs unchanged with libkcache_opencl_layer.so preloaded: each program it "
      "builds from source is served from the kcache cache. KCACHE_LAYER_DISABLE=1 turns the "
      "layer off. kcache exits with the program's status (127: not found, 126: not runnable).");
  return [args] { return run_program(*args, args->command); };
}

}  // namespace kcache::tool
