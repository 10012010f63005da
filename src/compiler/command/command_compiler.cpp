// The "command" backend: any compiler run as an external program.
//
// The command line is a template: {in} is a file holding the source (named
// `input_name`, in a private temporary folder with the in-memory headers
// beside it), {out} the file to read back, {target} the target arch, and a
// token that is exactly {options} expands to the request's options and -I
// folders (appended at the end when the template has no {options}).
//
// Each run of the command may take CompilerConfig::timeout; then it and
// what it started are killed and the compile is kTimeout (process.h).
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "compiler/command/process.h"
#include "compiler/registry.h"
#include "core/options_normalizer.h"
#include "env/temp_dir.h"
#include "format/hash.h"

namespace kcache {
namespace {

std::string replace_all(std::string text, std::string_view from, const std::string& to) {
  for (std::size_t pos = text.find(from); pos != std::string::npos;
       pos = text.find(from, pos + to.size())) {
    text.replace(pos, from.size(), to);
  }
  return text;
}

Status write_text(const std::string& path, const std::string& text) {
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return Status::io_error("cannot write " + path);
  return Status::ok();
}

class CommandCompiler final : public Compiler {
 public:
  CommandCompiler(std::vector<std::string> argv, CompilerIdentity identity, std::string input_name,
                  std::chrono::milliseconds timeout)
      : argv_(std::move(argv)),
        identity_(std::move(identity)),
        input_name_(std::move(input_name)),
        timeout_(timeout) {}

  const CompilerIdentity& identity() const override { return identity_; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) return Target{"generic", "", 0};
    return requested;
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& target) override {
    auto options = split_options(request.options);
    if (!options) return options.status();
    for (const auto& dir : request.include_dirs) options->push_back("-I" + dir);

    auto temp = TempDir::create("kcache-compile-");
    if (!temp) return temp.status();
    const std::string input = temp->path() + "/" + input_name_;
    const std::string output = temp->path() + "/output.bin";
    if (Status s = write_text(input, request.source); !s.is_ok()) return s;
    for (const auto& header : request.headers) {
      if (header.name.find("..") != std::string::npos || header.name.starts_with("/")) {
        return Status::invalid_argument("in-memory header name '" + header.name +
                                        "' must be a relative path without '..'");
      }
      if (Status s = write_text(temp->path() + "/" + header.name, header.content); !s.is_ok()) {
        return s;
      }
    }

    std::vector<std::string> argv;
    bool placed_options = false;
    for (const auto& token : argv_) {
      if (token == "{options}") {
        argv.insert(argv.end(), options->begin(), options->end());
        placed_options = true;
        continue;
      }
      std::string arg = replace_all(token, "{in}", input);
      arg = replace_all(arg, "{out}", output);
      argv.push_back(replace_all(arg, "{target}", target.arch));
    }
    if (!placed_options) argv.insert(argv.end(), options->begin(), options->end());

    auto run = run_process(argv, temp->path() + "/log.txt", timeout_);
    if (!run) return run.status();
    if (run->signal != 0) {
      return Status::compile_error(argv[0] + " was killed by signal " + std::to_string(run->signal),
                                   run->output);
    }
    if (run->exit_code != 0) {
      return Status::compile_error(
          argv[0] + " failed with exit code " + std::to_string(run->exit_code), run->output);
    }
    std::ifstream in(output, std::ios::binary);
    if (!in) {
      return Status::compile_error(argv[0] + " exited 0 but wrote no output file ({out})",
                                   run->output);
    }
    CompileOutput result;
    result.binary.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    result.metadata.emplace_back("format", "command-output");
    result.log = std::move(run->output);
    return result;
  }

 private:
  const std::vector<std::string> argv_;
  const CompilerIdentity identity_;
  const std::string input_name_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace

Result<std::unique_ptr<Compiler>> make_command_compiler(const CompilerConfig& config) {
  auto argv = split_options(config.command);
  if (!argv) return Status::invalid_argument("--command: " + argv.status().message());
  if (argv->empty()) return Status::invalid_argument("the command backend needs a --command");
  bool has_in = false;
  bool has_out = false;
  for (const auto& token : *argv) {
    has_in = has_in || token.find("{in}") != std::string::npos;
    has_out = has_out || token.find("{out}") != std::string::npos;
  }
  if (!has_in || !has_out) {
    return Status::invalid_argument("the command must contain {in} and {out}: '" + config.command +
                                    "'");
  }
  const std::string input_name =
      config.command_input_name.empty() ? "kernel.src" : config.command_input_name;
  if (input_name.find('/') != std::string::npos) {
    return Status::invalid_argument("the input file name must not contain '/'");
  }

  CompilerIdentity identity;
  identity.backend = "command";
  // The template and the input file name can change the binary: both are
  // part of the identity.
  identity.id = (config.compiler_id.empty() ? (*argv)[0] : config.compiler_id) + " | " +
                config.command + " | " + input_name;
  if (!config.compiler_id.empty()) {
    identity.version = "id:" + config.compiler_id;
  } else {
    auto temp = TempDir::create("kcache-version-");
    if (!temp) return temp.status();
    // A compiler that hangs on --version must not hang make_compiler; 0
    // (no limit) stays no limit.
    const auto probe_timeout =
        config.timeout.count() > 0
            ? std::min<std::chrono::milliseconds>(config.timeout, std::chrono::seconds(60))
            : config.timeout;
    auto probe =
        run_process({(*argv)[0], "--version"}, temp->path() + "/version.txt", probe_timeout);
    if (!probe) return probe.status();
    identity.version = "version-output:" +
                       sha256_field(probe->output + "\nexit " + std::to_string(probe->exit_code));
  }
  return std::unique_ptr<Compiler>(std::make_unique<CommandCompiler>(
      std::move(*argv), std::move(identity), input_name, config.timeout));
}

}  // namespace kcache
