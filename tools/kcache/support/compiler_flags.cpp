#include "support/compiler_flags.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

namespace kcache::tool {

void add_compiler_flags(CLI::App* cmd, CompilerFlags& flags, const std::string& command_default) {
  cmd->add_option("--command", flags.command,
                  "command backend: compiler command line with {in} and {out}" + command_default);
  cmd->add_option("--compiler-id", flags.compiler_id,
                  "command backend: identity of the compiler (default: " +
                      (command_default.empty()
                           ? std::string("its executable's and the command line's files, stamped")
                           : std::string("the recorded one")) +
                      ")");
  cmd->add_option("--nvrtc-library", flags.nvrtc_library,
                  "nvrtc: libnvrtc to load (default: search, see KCACHE_NVRTC_LIBRARY)");
  cmd->add_option("--harmless-option", flags.harmless_options,
                  "An option name that reads no file (e.g. --my-flag): an option kcache does not "
                  "know and that may name a file otherwise makes the request uncached; repeatable");
  cmd->add_option("--hip-library", flags.hip_library,
                  "hip: libamdhip64 (hipRTC) to load (default: search, see KCACHE_HIP_LIBRARY)");
  cmd->add_option("--platform", flags.platform,
                  "opencl: platform index (default: first with a device)");
  cmd->add_option("--device", flags.device, "opencl: device index on the platform");
  cmd->add_option("--timeout", flags.timeout_seconds,
                  "command and hip backends: stop a compile still running after this many "
                  "seconds (decimals allowed; 0: no limit); it fails and is not cached")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            double seconds = 0;
            if (CLI::detail::lexical_cast(text, seconds) && seconds >= 0 &&
                std::isfinite(seconds)) {
              return {};
            }
            return "wants a number of seconds (0: no limit), got '" + text + "'";
          },
          "SECONDS"));
}

CompilerConfig config_of(const CompilerFlags& flags) {
  CompilerConfig config;
  config.command = flags.command;
  config.compiler_id = flags.compiler_id;
  // A library named by a path (not a bare name the loader searches for)
  // is made absolute: kcache pack compiles each line from the folder it
  // was recorded in, and its workers load it there.
  auto absolute = [](const std::string& path) {
    std::error_code error;
    if (path.find('/') == std::string::npos) return path;
    auto made = std::filesystem::absolute(path, error);
    return error ? path : made.string();
  };
  config.nvrtc_library = absolute(flags.nvrtc_library);
  config.hip_library = absolute(flags.hip_library);
  config.harmless_options = flags.harmless_options;
  config.opencl_platform = flags.platform;
  config.opencl_device = flags.device;
  // 0: no limit; otherwise at least 1 ms (a tiny value must not round to
  // "no limit") and at most about 31 years.
  config.timeout = flags.timeout_seconds == 0
                       ? std::chrono::milliseconds(0)
                       : std::chrono::milliseconds(
                             std::llround(std::clamp(flags.timeout_seconds, 0.001, 1e9) * 1000));
  return config;
}

}  // namespace kcache::tool
