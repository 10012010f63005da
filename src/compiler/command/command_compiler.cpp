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
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "compiler/command/depfile.h"
#include "compiler/command/output_file.h"
#include "compiler/command/process.h"
#include "compiler/registry.h"
#include "env/temp_dir.h"
#include "inputs/options.h"

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

bool has_placeholder(std::string_view token) {
  return token.find("{in}") != std::string_view::npos ||
         token.find("{out}") != std::string_view::npos ||
         token.find("{target}") != std::string_view::npos ||
         token.find("{options}") != std::string_view::npos;
}

// Programs that run the compiler named after them.
bool is_wrapper(std::string_view name) {
  return name == "ccache" || name == "sccache" || name == "env" || name == "nice" ||
         name == "time" || name == "taskset" || name == "distcc" || name == "icecc";
}

// The compiler a command line runs: its first word, past wrappers such as
// ccache and env's VAR=value words.
std::size_t compiler_index(const std::vector<std::string>& argv) {
  std::size_t i = 0;
  while (i + 1 < argv.size() && is_wrapper(std::filesystem::path(argv[i]).filename().string())) {
    ++i;
    while (i + 1 < argv.size() &&
           (argv[i].find('=') != std::string::npos || argv[i].starts_with('-'))) {
      if (argv[i] == "-u" || argv[i] == "--unset") ++i;  // env -u NAME
      ++i;
    }
  }
  return i;
}

// The environment the compiler runs with: kcache's own, as `env` words on
// the command line change it (env -i, -u NAME, NAME=value).
class CompilerEnvironment {
 public:
  CompilerEnvironment(const std::vector<std::string>& argv, std::size_t compiler) {
    bool in_env = false;
    for (std::size_t i = 0; i < compiler; ++i) {
      const std::string& word = argv[i];
      if (std::filesystem::path(word).filename() == "env") {
        in_env = true;
        continue;
      }
      if (!in_env) continue;
      if (word == "-i" || word == "--ignore-environment" || word == "-") {
        cleared_ = true;
      } else if ((word == "-u" || word == "--unset") && i + 1 < compiler) {
        values_[argv[++i]] = std::nullopt;
      } else if (word.starts_with("--unset=")) {
        values_[word.substr(8)] = std::nullopt;
      } else if (const std::size_t eq = word.find('='); eq != std::string::npos && eq > 0) {
        values_[word.substr(0, eq)] = word.substr(eq + 1);
      }
    }
  }
  [[nodiscard]] std::optional<std::string> get(const std::string& name) const {
    if (auto it = values_.find(name); it != values_.end()) return it->second;
    if (cleared_) return std::nullopt;
    const char* value = std::getenv(name.c_str());
    return value ? std::optional<std::string>(value) : std::nullopt;
  }

 private:
  bool cleared_ = false;
  std::map<std::string, std::optional<std::string>> values_;
};

// The option syntax of the program a command runs, by its name: gcc,
// clang, hipcc and their cross and versioned names (x86_64-linux-gnu-gcc-12,
// clang-14) read gcc's options; nvcc its own; anything else is generic.
Dialect dialect_of(const std::string& program) {
  const std::string name = std::filesystem::path(program).filename().string();
  if (name.find("nvcc") != std::string::npos) return Dialect::kNvcc;
  for (std::string_view family : {"gcc", "g++", "clang", "hipcc", "icx", "icpx"}) {
    if (name.find(family) != std::string::npos) return Dialect::kGcc;
  }
  if (name == "cc" || name == "c++" || name == "cpp") return Dialect::kGcc;
  return Dialect::kGeneric;
}

// `name` as the shell finds it: itself when it holds a '/', else the first
// executable of that name in PATH; empty when none.
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const std::size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

// "<canonical path> <size> <mtime ns> <ctime ns> <inode>" of a regular
// file; empty when `path` names none.
std::string file_stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};  // most words are options
  std::error_code error;
  const auto canonical = std::filesystem::canonical(path, error);
  if (error) return {};
  return canonical.string() + " " + std::to_string(st.st_size) + " " +
         std::to_string(st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec) + " " +
         std::to_string(st.st_ctim.tv_sec * 1'000'000'000LL + st.st_ctim.tv_nsec) + " " +
         std::to_string(st.st_ino);
}

// The files a command line runs or reads by name, in its order: its
// program and the compiler a wrapper runs, as the shell finds them (an
// empty path for one not found), and every other word naming a regular
// file (a script given to `sh`, a config file).
struct NamedFile {
  std::string word;  // as the command line has it
  std::string path;  // where it is; empty for a program not found
  bool program = false;
};

std::vector<NamedFile> named_files(const std::vector<std::string>& argv) {
  std::vector<NamedFile> files;
  const std::size_t compiler = compiler_index(argv);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (has_placeholder(argv[i])) continue;
    const bool program = i == 0 || i == compiler;
    std::string path = program ? find_program(argv[i]) : argv[i];
    struct stat st {};
    if (!program && (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))) {
      continue;  // an option, not a file
    }
    files.push_back({argv[i], std::move(path), program});
  }
  return files;
}

// The build of a command's compiler, as ccache's compiler_check=mtime sees
// it: the size and mtime of the program it runs (and of the compiler a
// wrapper runs), and of every other file its command line names (a script
// given to `sh`, a config file). An edited script, a rebuilt or upgraded
// compiler: a new identity, whatever its --version says.
Result<std::string> files_identity(const std::vector<std::string>& argv) {
  std::string identity;
  for (const NamedFile& file : named_files(argv)) {
    if (file.path.empty()) {
      return Status::unavailable("cannot find the compiler '" + file.word + "' in PATH");
    }
    std::string stamp = file_stamp(file.path);
    if (stamp.empty()) {
      if (file.program) return Status::unavailable("cannot stat the compiler " + file.path);
      continue;  // gone since it was looked at
    }
    identity += (identity.empty() ? "" : "; ") + stamp;
  }
  return identity;
}

// The variables each dialect's compilers read that change their output:
// gcc's and clang's include paths and build date, hipcc's and nvcc's
// option and toolkit variables.
std::vector<std::string_view> output_variables(Dialect dialect) {
  if (dialect == Dialect::kGeneric) return {};
  std::vector<std::string_view> names = {"CPATH",
                                         "C_INCLUDE_PATH",
                                         "CPLUS_INCLUDE_PATH",
                                         "OBJC_INCLUDE_PATH",
                                         "GCC_EXEC_PREFIX",
                                         "COMPILER_PATH",
                                         "SOURCE_DATE_EPOCH",
                                         "CCC_OVERRIDE_OPTIONS",
                                         "HIP_PATH",
                                         "ROCM_PATH",
                                         "HIP_CLANG_PATH",
                                         "HIPCC_COMPILE_FLAGS_APPEND",
                                         "HIP_PLATFORM",
                                         "HIP_COMPILER",
                                         "HIP_RUNTIME",
                                         "DEVICE_LIB_PATH",
                                         "HIP_DEVICE_LIB_PATH"};
  if (dialect == Dialect::kNvcc) {
    // nvcc runs the host compiler it finds in PATH.
    for (std::string_view name :
         {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "PATH"}) {
      names.push_back(name);
    }
  }
  return names;
}

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> dirs;
  while (true) {
    const std::size_t colon = list.find(':');
    std::string dir(list.substr(0, colon));
    dirs.push_back(dir.empty() ? "." : dir);  // gcc: an empty element is the working folder
    if (colon == std::string_view::npos) return dirs;
    list.remove_prefix(colon + 1);
  }
}

// How the program a command runs reads files.
CompilerInputs inputs_for(const std::vector<std::string>& argv, const CompilerConfig& config) {
  CompilerInputs inputs;
  const std::size_t compiler = compiler_index(argv);
  const Dialect dialect = dialect_of(argv[compiler]);
  inputs.dialect = std::string(dialect_name(dialect));
  inputs.harmless_options = config.harmless_options;
  // A command running a program kcache does not know may read headers
  // from folders of its own.
  inputs.owns_unfound_headers = dialect != Dialect::kGeneric;
  for (std::size_t i = compiler + 1; i < argv.size(); ++i) {
    if (has_placeholder(argv[i])) continue;
    if (argv[i] == "-o" && i + 1 < argv.size() && has_placeholder(argv[i + 1])) {
      ++i;
      continue;
    }
    inputs.leading_options.push_back(argv[i]);
  }
  const CompilerEnvironment environment(argv, compiler);
  for (std::string_view name : output_variables(dialect)) {
    const std::optional<std::string> found = environment.get(std::string(name));
    if (!found) continue;
    const std::string& value = *found;
    inputs.environment.emplace_back(std::string(name), value);
    if (name == "CPATH") {
      for (const auto& dir : split_path_list(value)) inputs.trailing_options.push_back("-I" + dir);
    } else if (name.ends_with("_INCLUDE_PATH")) {
      for (const auto& dir : split_path_list(value)) inputs.system_dirs.push_back(dir);
    } else if (name == "NVCC_PREPEND_FLAGS" || name == "NVCC_APPEND_FLAGS") {
      if (auto flags = split_options(value)) {
        auto& into =
            name == "NVCC_PREPEND_FLAGS" ? inputs.leading_options : inputs.trailing_options;
        into.insert(into.end(), flags->begin(), flags->end());
      }
    }
  }
  return inputs;
}

class CommandCompiler final : public Compiler {
 public:
  CommandCompiler(std::vector<std::string> argv, CompilerIdentity identity, CompilerInputs inputs,
                  std::string input_name, std::chrono::milliseconds timeout)
      : argv_(std::move(argv)),
        identity_(std::move(identity)),
        inputs_(std::move(inputs)),
        input_name_(std::move(input_name)),
        timeout_(timeout) {}

  const CompilerIdentity& identity() const override { return identity_; }

  const CompilerInputs& inputs() const override { return inputs_; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) return Target{"generic", "", 0};
    return requested;
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& target) override {
    const auto start = std::chrono::steady_clock::now();
    auto parsed = request_options(request, inputs_);  // the tokens the key holds
    if (!parsed) return parsed.status();
    std::vector<std::string>& options = parsed->tokens;
    for (const auto& dir : request.include_dirs) options.push_back("-I" + dir);
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
        argv.insert(argv.end(), options.begin(), options.end());
        placed_options = true;
        continue;
      }
      std::string arg = replace_all(token, "{in}", input);
      arg = replace_all(arg, "{out}", output);
      argv.push_back(replace_all(arg, "{target}", target.arch));
    }
    if (!placed_options) argv.insert(argv.end(), options.begin(), options.end());
    // Depend mode: the compiler lists what it read, system headers too.
    const std::string deps = temp->path() + "/kcache.deps";
    const bool depend_mode = inputs_.dialect == "gcc" || inputs_.dialect == "nvcc";
    if (depend_mode) argv.insert(argv.end(), {"-MD", "-MF", deps});

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
    // The deadline covers reading the output back too: a compiler may leave
    // a FIFO or a link to /dev/zero there.
    const auto deadline =
        timeout_.count() > 0 ? start + timeout_ : std::chrono::steady_clock::time_point::max();
    auto binary = read_compiler_output(output, kMaxCompilerOutputBytes, deadline);
    if (!binary) {
      const Status& s = binary.status();
      if (s.code() == StatusCode::kCompileError) {
        return Status::compile_error(argv[0] + " exited 0 but " + s.message(), run->output);
      }
      return Status(s.code(), argv[0] + ": " + s.message(), run->output);
    }
    CompileOutput result;
    result.binary = std::move(*binary);
    result.metadata.emplace_back(kFormatField, "command-output");
    if (depend_mode) {
      auto listed = read_compiler_output(deps, 64ull << 20, deadline);
      if (!listed) {
        result.not_cacheable = argv[0] + " did not list the files it read (-MD -MF " + deps + ")";
      } else {
        // The source and the in-memory headers are in the request: those
        // files alone are left out (temp/../x.h is a file of its own).
        std::set<std::string> written{std::filesystem::path(input).lexically_normal().string()};
        for (const auto& header : request.headers) {
          written.insert((std::filesystem::path(temp->path()) / header.name).lexically_normal());
        }
        for (auto& file : depfile_prerequisites(
                 {reinterpret_cast<const char*>(listed->data()), listed->size()})) {
          if (!written.contains(std::filesystem::path(file).lexically_normal().string())) {
            result.files_read.push_back(std::move(file));
          }
        }
      }
    }
    result.log = std::move(run->output);
    return result;
  }

 private:
  const std::vector<std::string> argv_;
  const CompilerIdentity identity_;
  const CompilerInputs inputs_;
  const std::string input_name_;
  const std::chrono::milliseconds timeout_;
};

}  // namespace

std::vector<std::string> command_files(const std::string& command) {
  std::vector<std::string> paths;
  auto argv = split_options(command);
  if (!argv) return paths;
  for (const NamedFile& file : named_files(*argv)) {
    if (!file.path.empty()) paths.push_back(file.path);
  }
  return paths;
}

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
    auto files = files_identity(*argv);
    if (!files) return files.status();
    identity.version = "files:" + *files;
  }
  CompilerInputs inputs = inputs_for(*argv, config);
  return std::unique_ptr<Compiler>(std::make_unique<CommandCompiler>(
      std::move(*argv), std::move(identity), std::move(inputs), input_name, config.timeout));
}

}  // namespace kcache
