// kcache run -- PROGRAM ARGS...: runs a program that never heard of kcache
// with the drop-in layers in place (docs/design.md §10): the OpenCL layer,
// the dlsym layer and the NVRTC shim preloaded, nothing else of its
// environment changed. They are found beside the libkcache this tool runs
// with (layers/layer_files.h), so an install works as a build tree does.
#include <kcache/cache.h>

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "commands/commands.h"
#include "layers/layer_files.h"
#include "layers/layer_switch.h"
#include "support/failure_report.h"

namespace kcache::tool {
namespace {

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

// LD_PRELOAD with `libraries` first, each once.
std::string preload_with(const std::vector<std::string>& libraries) {
  std::string out;
  auto add = [&out](const std::string& item) {
    if (item.empty() || (" " + out + " ").find(" " + item + " ") != std::string::npos) return;
    out += (out.empty() ? "" : " ") + item;
  };
  for (const auto& library : libraries) add(library);
  const char* current = std::getenv("LD_PRELOAD");
  if (current == nullptr) return out;
  std::string rest(current);
  std::size_t start = 0;
  while (start <= rest.size()) {
    std::size_t end = rest.find_first_of(" :", start);
    if (end == std::string::npos) end = rest.size();
    add(rest.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// Whether the program would find a real `soname`: the loader's own search,
// in a link namespace of its own (where no stand-in preloaded into this
// process answers for it). A stand-in for a library the program cannot
// load would make one that probes for it believe it is there.
bool real_library_found(const char* soname) {
  void* handle = ::dlmopen(LM_ID_NEWLM, soname, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

// The NVRTC stand-ins in `folder`/kcache/nvrtc whose real library is here
// (one the program opens by its path is served through the dlsym layer,
// which loads the stand-in then).
std::vector<std::string> nvrtc_stand_ins(const std::string& folder) {
  std::vector<std::string> found;
  for (const char* soname : layer::kNvrtcStandInSonames) {
    const std::string path = folder + "/" + layer::kNvrtcStandInFolder + "/" + soname;
    if (::access(path.c_str(), R_OK) == 0 && real_library_found(soname)) found.push_back(path);
  }
  return found;
}

int run_program(const RunArguments& args, std::vector<std::string> command) {
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  const std::string folder = library_folder();
  if (folder.empty()) return report_failure("run: cannot tell where libkcache is installed");
  std::vector<std::string> layers;
  const std::string opencl_layer = folder + "/" + layer::kOpenClLayerFile;
  if (::access(opencl_layer.c_str(), R_OK) == 0) layers.push_back(opencl_layer);
  // For programs that open NVRTC or the ICD loader themselves and look its
  // functions up on that handle, which no preload reaches.
  const std::string dlsym_layer = folder + "/" + layer::kDlsymLayerFile;
  if (::access(dlsym_layer.c_str(), R_OK) == 0) layers.push_back(dlsym_layer);
  const std::string nvrtc_folder = folder + "/" + layer::kNvrtcStandInFolder;
  const bool has_nvrtc_shim = ::access(nvrtc_folder.c_str(), R_OK) == 0;
  for (auto& stand_in : nvrtc_stand_ins(folder)) layers.push_back(std::move(stand_in));
  if (layers.empty() && !has_nvrtc_shim) {
    return report_failure("run: neither the OpenCL layer " + opencl_layer +
                          " nor the NVRTC shim (" + nvrtc_folder +
                          ") is there: this kcache was built without them");
  }
  // Off: the program runs as without kcache, nothing of it preloaded (a
  // preloaded stand-in is in the global scope even when it forwards
  // every call).
  if (layer::layer_disabled()) layers.clear();
  const std::string preload = preload_with(layers);
  if (args.print_env) {
    std::cout << "LD_PRELOAD=" << preload << "\n";
    return 0;
  }
  if (command.empty()) {
    std::cerr << "kcache: run: name the program to run: kcache run -- PROGRAM [ARGS...]\n";
    return 2;
  }
  if (!layers.empty()) ::setenv("LD_PRELOAD", preload.c_str(), 1);
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
      "Run a program with kcache underneath its OpenCL program builds and NVRTC compiles "
      "(kcache run -- PROGRAM ARGS...)");
  // After --, everything is the program's, its options too (without --, an
  // option of the program is taken for kcache's and refused).
  sub->add_option("command", args->command, "The program and its arguments, after --");
  sub->add_flag("--print-env", args->print_env,
                "Print the environment the program would get (LD_PRELOAD) and exit");
  sub->footer(
      "The program runs unchanged with libkcache_opencl_layer.so, libkcache_dlsym_layer.so and "
      "the NVRTC shim (kcache/nvrtc/libnvrtc.so.<N> beside libkcache, for each NVRTC the program "
      "would find) preloaded: each OpenCL program it builds from source and each NVRTC compile "
      "is served from the kcache cache, however the program loads OpenCL or NVRTC (linked, "
      "dlopen by soname or by path, dlsym on the handle); one that cannot be served is said "
      "once. KCACHE_LAYER_DISABLE=1 turns them off (nothing is preloaded). kcache exits with the "
      "program's status (127: not found, 126: not runnable).");
  return [args] { return run_program(*args, args->command); };
}

}  // namespace kcache::tool
