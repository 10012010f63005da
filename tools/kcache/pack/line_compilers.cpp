#include "pack/line_compilers.h"

#include <fcntl.h>
#include <kcache/trust.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "layers/logged_compiler.h"

namespace kcache::tool {

InFolder::InFolder(const std::string& folder) {
  if (folder.empty()) return;
  back_ = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (back_ >= 0 && ::chdir(folder.c_str()) != 0) {
    ::close(back_);
    back_ = -1;
  }
}

InFolder::~InFolder() {
  if (back_ < 0) return;
  (void)!::fchdir(back_);
  ::close(back_);
}

Result<Compiler*> compiler_for(const Line& line, const CompilerConfig& config,
                               LineCompilers& compilers) {
  const CompilerConfig mine = config_for(line, config);
  std::string name = config_name(mine);
  if (mine.backend == "command") name += "\nin " + line.cwd;
  auto& compiler = compilers[name];
  if (!compiler) {
    auto made = from_folder(line.cwd, [&] { return make_compiler(mine); });
    if (!made) return made.status();
    // The compile's log kept with the binary, as the drop-in layers keep
    // it: a program under a layer served from the package sees the log
    // (warnings) its own compile gave. Not part of the key.
    compiler = std::make_unique<layer::LoggedCompiler>(std::move(*made));
  }
  return compiler.get();
}

std::vector<std::string> untrusted_compilers(const std::vector<Line>& lines,
                                             const CompilerConfig& config) {
  std::vector<std::string> said;
  std::set<std::string> asked;  // config and folder
  std::set<std::string> files_seen;
  for (const Line& line : lines) {
    const CompilerConfig mine = config_for(line, config);
    if (!asked.insert(config_name(mine) + "\nin " + line.cwd).second) continue;
    const auto files = from_folder(line.cwd, [&] { return files_a_compiler_runs(mine); });
    for (const std::string& file : files) {
      if (!files_seen.insert(file).second) continue;
      if (auto why = untrusted_file_reason(file)) {
        said.push_back(file + " (line " + std::to_string(line.number) + "'s " + line.backend +
                       " compiler): " + *why);
      }
    }
  }
  return said;
}

std::optional<std::string> runtime_misfit(const Line& line, const CompilerConfig& config,
                                          LineCompilers& compilers) {
  const std::string& backend = line.backend;
  if (backend != "opencl" && backend != "nvrtc" && backend != "hip") return std::nullopt;
  auto compiler = compiler_for(line, config, compilers);
  if (!compiler) return std::nullopt;
  auto fits = (*compiler)->resolve_target(line.request.target);
  const StatusCode code = fits ? StatusCode::kOk : fits.status().code();
  if (code == StatusCode::kInvalidArgument ||
      (backend == "hip" && code == StatusCode::kUnavailable)) {
    return fits.status().message();
  }
  return std::nullopt;
}

std::string command_from_here(const std::string& command) {
  const std::size_t begin = command.find_first_not_of(" \t");
  if (begin == std::string::npos) return command;
  const std::size_t end = std::min(command.find_first_of(" \t", begin), command.size());
  const std::string program = command.substr(begin, end - begin);
  if (program.find('/') == std::string::npos || program[0] == '/' || program[0] == '"' ||
      program[0] == '\'' || program.find('{') != std::string::npos) {
    return command;
  }
  std::error_code error;
  const auto absolute = std::filesystem::absolute(program, error);
  if (error || !std::filesystem::exists(absolute, error)) return command;
  return command.substr(0, begin) + absolute.string() + command.substr(end);
}

}  // namespace kcache::tool
