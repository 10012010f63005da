// The "nvrtc" backend: CUDA C++ through NVRTC, loaded at run time.
//
// Output: CUBIN for a real arch (target sm_90, sm_90a, sm_100f, ...), PTX
// for a virtual one (compute_90). Name expressions (request.kernel_names)
// are lowered by NVRTC and stored as metadata, one "lowered" field per
// kernel: "<lowered name> <name expression>".
//
// The toolkit's include folder (beside the loaded libnvrtc, or
// $CUDA_HOME/include) is put on the include path, so <cuda_fp16.h> and
// <cuda/std/...> work out of the box; headers found there belong to the
// toolkit and are covered by the NVRTC version in the key.
//
// NVRTC's C API and where libnvrtc may be: nvrtc_api.h, shared with the
// NVRTC shim.
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "base/hash.h"
#include "base/mutex.h"
#include "base/setting_variables.h"
#include "compiler/compiler_facts.h"
#include "compiler/nvrtc/nvrtc_api.h"
#include "compiler/registry.h"
#include "env/dynamic_library.h"
#include "inputs/options.h"

namespace kcache {
namespace {

// A loaded libnvrtc: its functions, and the library they live in.
struct NvrtcApi : NvrtcFunctions {
  std::shared_ptr<DynamicLibrary> library;

  std::string error(nvrtcResult rc) const {
    const char* text = GetErrorString ? GetErrorString(rc) : nullptr;
    return text ? text : "NVRTC error " + std::to_string(rc);
  }
};

// The libnvrtc to load: the one the program names, else the one the
// nvrtc_library setting names; empty: searched (vendor_library.h).
std::string named_library(const CompilerConfig& config, const BackendSettings& settings) {
  return config.nvrtc_library.empty() ? settings.nvrtc_library : config.nvrtc_library;
}

Result<std::shared_ptr<const NvrtcApi>> load_nvrtc(const std::string& named) {
  auto library = DynamicLibrary::open(vendor_library_candidates(named, kCudaToolkit));
  if (!library) {
    return Status::unavailable(
        std::string(
            "the nvrtc backend needs libnvrtc (the CUDA toolkit's runtime compiler); set ") +
        kNvrtcLibraryVariable + " or CUDA_HOME: " + library.status().message());
  }
  auto api = std::make_shared<NvrtcApi>();
  api->library = *library;
  const DynamicLibrary& lib = **library;
  // The functions every libnvrtc has must be there; the others the
  // backend does not call.
  if (const char* missing =
          bind_nvrtc_functions(*api, [&](const char* symbol) { return lib.find(symbol); })) {
    return Status::unavailable(lib.name() + " has no symbol " + missing);
  }
  return std::shared_ptr<const NvrtcApi>(api);
}

// One load per library asked for (`named`, or empty for the search), shared
// by every compiler of the process; a failed search is tried again next time.
Result<std::shared_ptr<const NvrtcApi>> shared_nvrtc(const std::string& named) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const NvrtcApi>> loaded;
  std::lock_guard lock(mutex);
  auto& slot = loaded[named];
  if (!slot) {
    auto fresh = load_nvrtc(named);
    if (!fresh) return fresh.status();
    slot = *fresh;
  }
  return slot;
}

// "sm_90a" -> {90, true (real)}; "compute_90" -> {90, false}.
struct CudaArch {
  int number = 0;
  bool real = true;
};

std::optional<CudaArch> parse_cuda_arch(std::string_view arch) {
  CudaArch parsed;
  if (arch.starts_with("sm_")) {
    arch.remove_prefix(3);
  } else if (arch.starts_with("compute_")) {
    arch.remove_prefix(8);
    parsed.real = false;
  } else {
    return std::nullopt;
  }
  std::size_t digits = 0;
  while (digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[digits]))) ++digits;
  if (digits == 0 || digits > 4) return std::nullopt;
  std::string_view suffix = arch.substr(digits);
  if (!suffix.empty() && suffix != "a" && suffix != "f") return std::nullopt;
  std::from_chars(arch.data(), arch.data() + digits, parsed.number);
  return parsed;
}

// What a compiler needs to know of its libnvrtc before the first compile:
// from the library itself, or from a record of it (compiler_facts.h).
struct NvrtcFacts {
  std::string library_path;  // canonical
  std::vector<int> archs;
  CompilerIdentity identity;
  std::vector<std::string> toolkit_dirs;
};

class NvrtcCompiler final : public Compiler {
 public:
  // `api` may be null: the library is then loaded by the first compile.
  // `named`: the library asked for (named_library), or empty.
  NvrtcCompiler(std::shared_ptr<const NvrtcApi> api, std::string named, NvrtcFacts facts,
                CompilerInputs inputs, std::string record_path)
      : api_(std::move(api)),
        named_(std::move(named)),
        record_path_(std::move(record_path)),
        identity_(std::move(facts.identity)),
        archs_(std::move(facts.archs)),
        library_path_(std::move(facts.library_path)),
        inputs_(std::move(inputs)) {}

  const CompilerIdentity& identity() const override { return identity_; }
  std::string library() const override { return library_path_; }

  const CompilerInputs& inputs() const override { return inputs_; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) {
      return Status::invalid_argument(
          "the nvrtc backend needs a target such as sm_90 (cubin) or "
          "compute_90 (ptx); it supports " +
          supported());
    }
    // Parsed once (every request resolves its target); the misfit's words
    // only when it is one.
    auto arch = parse_cuda_arch(requested.arch);
    if (!arch || !requested.features.empty()) {
      return Status::invalid_argument(*nvrtc_target_misfit(requested));
    }
    if (std::find(archs_.begin(), archs_.end(), arch->number) == archs_.end()) {
      return Status::invalid_argument("this NVRTC cannot compile for " + requested.arch +
                                      "; it supports " + supported());
    }
    return requested;
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& target) override {
    auto loaded = api();
    if (!loaded) return loaded.status();
    const NvrtcApi& nvrtc = **loaded;
    auto parsed = request_options(request, inputs_);  // the tokens the key holds
    if (!parsed) return parsed.status();
    for (const auto& token : parsed->tokens) {
      if (token == "-arch" || token.starts_with("-arch=") ||
          token.starts_with("--gpu-architecture")) {
        return Status::invalid_argument("set the CUDA arch with the target, not with '" + token +
                                        "' in the options");
      }
    }
    std::vector<std::string> options = std::move(parsed->tokens);
    options.push_back("--gpu-architecture=" + target.arch);
    for (const auto& dir : request.include_dirs) options.push_back("--include-path=" + dir);
    for (const auto& dir : inputs_.toolkit_dirs) options.push_back("--include-path=" + dir);

    std::vector<const char*> header_text;
    std::vector<const char*> header_names;
    for (const auto& header : request.headers) {
      header_text.push_back(header.content.c_str());
      header_names.push_back(header.name.c_str());
    }
    nvrtcProgram program = nullptr;
    const char* program_name =
        request.source_name ? request.source_name->c_str() : "kcache_kernel.cu";
    nvrtcResult rc = nvrtc.CreateProgram(&program, request.source.c_str(), program_name,
                                         static_cast<int>(header_text.size()), header_text.data(),
                                         header_names.data());
    if (rc != NVRTC_SUCCESS) return Status::internal("nvrtcCreateProgram: " + nvrtc.error(rc));
    struct Destroyer {
      const NvrtcApi& nvrtc;
      nvrtcProgram program;
      ~Destroyer() { nvrtc.DestroyProgram(&program); }
    } destroy{nvrtc, program};

    for (const auto& name : request.kernel_names) {
      rc = nvrtc.AddNameExpression(program, name.c_str());
      if (rc != NVRTC_SUCCESS) {
        return Status::invalid_argument("kernel name expression '" + name +
                                        "': " + nvrtc.error(rc));
      }
    }
    std::vector<const char*> argv;
    for (const auto& option : options) argv.push_back(option.c_str());
    rc = nvrtc.CompileProgram(program, static_cast<int>(argv.size()), argv.data());
    std::string log = program_log(nvrtc, program);
    if (rc == NVRTC_ERROR_COMPILATION)
      return Status::compile_error("the NVRTC compile failed", log);
    if (rc == NVRTC_ERROR_INVALID_OPTION) {
      return Status::compile_error("NVRTC rejected an option: " + request.options, log);
    }
    if (rc != NVRTC_SUCCESS)
      return Status::compile_error("nvrtcCompileProgram: " + nvrtc.error(rc), log);

    CompileOutput output;
    const bool cubin = parse_cuda_arch(target.arch)->real;
    std::size_t size = 0;
    rc = cubin ? nvrtc.GetCUBINSize(program, &size) : nvrtc.GetPTXSize(program, &size);
    if (rc != NVRTC_SUCCESS || size == 0) {
      return Status::internal("NVRTC returned no " + std::string(cubin ? "cubin" : "ptx") + ": " +
                              nvrtc.error(rc));
    }
    output.binary.resize(size);
    char* data = reinterpret_cast<char*>(output.binary.data());
    rc = cubin ? nvrtc.GetCUBIN(program, data) : nvrtc.GetPTX(program, data);
    if (rc != NVRTC_SUCCESS)
      return Status::internal("reading the NVRTC output: " + nvrtc.error(rc));
    output.metadata.emplace_back(kFormatField, cubin ? "cubin" : "ptx");
    for (const auto& name : request.kernel_names) {
      const char* lowered = nullptr;
      if (nvrtc.GetLoweredName(program, name.c_str(), &lowered) == NVRTC_SUCCESS && lowered) {
        output.metadata.emplace_back(kLoweredField, std::string(lowered) + " " + name);
      }
    }
    output.log = std::move(log);
    return output;
  }

 private:
  std::string program_log(const NvrtcApi& nvrtc, nvrtcProgram program) const {
    std::size_t size = 0;
    if (nvrtc.GetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
    std::string log(size, '\0');
    if (nvrtc.GetProgramLog(program, log.data()) != NVRTC_SUCCESS) return {};
    log.resize(size - 1);  // the terminating NUL
    return log;
  }

  std::string supported() const {
    std::string list;
    for (int arch : archs_) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(arch);
    return list.empty() ? "no arch" : list;
  }

  // The library, loaded now if the compiler was made from a record. It must
  // be the one the record describes: the identity in every key says so.
  Result<std::shared_ptr<const NvrtcApi>> api() const {
    MutexLock lock(mutex_);
    if (api_) return api_;
    auto loaded = shared_nvrtc(named_);
    if (!loaded) return loaded.status();
    std::error_code error;
    const std::string path =
        std::filesystem::weakly_canonical((*loaded)->library->path(), error).string();
    if (path != library_path_) {
      // The keys of this compiler name the other build: compiling with this
      // one under them would store its binaries as the other's. The record
      // goes; the next process learns the library anew.
      if (!record_path_.empty()) (void)Env::posix().remove_file(record_path_);
      return Status::unavailable("libnvrtc resolves to " + path + " now, not to " + library_path_ +
                                 " as when this compiler was made; make the compiler again");
    }
    api_ = *loaded;
    return api_;
  }

  mutable Mutex mutex_;
  mutable std::shared_ptr<const NvrtcApi> api_ GUARDED_BY(mutex_);
  const std::string named_;
  const std::string record_path_;  // the facts record it was made from, or empty
  CompilerIdentity identity_;
  std::vector<int> archs_;
  const std::string library_path_;
  CompilerInputs inputs_;
};

// The include folder(s) of the toolkit libnvrtc came from: <root>/include
// for a library in <root>/lib64 or <root>/targets/<triple>/lib, and
// /usr/include for Debian's /usr/lib/<triple>. $CUDA_HOME and $CUDA_PATH
// count only when the library is theirs: another toolkit's headers are
// not this NVRTC's (and not covered by its identity).
std::vector<std::string> toolkit_include_dirs_for(const std::string& library_path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path library = fs::weakly_canonical(library_path, error);
  if (error) return {};
  std::vector<fs::path> roots{library.parent_path().parent_path()};
  if (library.parent_path().parent_path() == "/usr/lib") roots.emplace_back("/usr");
  for (const char* var : kCudaRootVariables) {
    const char* root = std::getenv(var);
    if (root == nullptr || *root == '\0') continue;
    const fs::path home = fs::weakly_canonical(root, error);
    if (error) continue;
    const auto [end, rest] =
        std::mismatch(home.begin(), home.end(), library.begin(), library.end());
    if (end == home.end()) roots.push_back(home);
  }
  std::vector<std::string> dirs;
  for (const auto& root : roots) {
    const std::string include = (root / "include").string();
    if (!fs::exists(include + "/cuda_fp16.h", error)) continue;
    dirs.push_back(include);
    // CUDA 13 moved CCCL (<cuda/std/...>, <cub/...>) into include/cccl.
    if (fs::is_directory(include + "/cccl", error)) dirs.push_back(include + "/cccl");
    break;
  }
  return dirs;
}

// The files of a libnvrtc's build: itself, its builtins library (loaded by
// the first compile) beside it, and the toolkit's version file.
std::vector<std::string> build_files(const std::string& library_path) {
  std::vector<std::string> files{library_path};
  std::error_code error;
  const std::filesystem::path folder = std::filesystem::path(library_path).parent_path();
  std::vector<std::string> builtins;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    // The shared builtins it may load; not the static archives.
    if (name.starts_with("libnvrtc-builtins") && name.find(".so") != std::string::npos &&
        entry.is_regular_file(error)) {
      builtins.push_back(entry.path().string());
    }
  }
  std::sort(builtins.begin(), builtins.end());
  files.insert(files.end(), builtins.begin(), builtins.end());
  const std::string version = folder.parent_path().string() + "/version.json";
  if (std::filesystem::exists(version, error)) files.push_back(version);
  return files;
}

// Learns the facts from the loaded library.
Result<NvrtcFacts> facts_of(const NvrtcApi& api, std::vector<std::string>& files) {
  int major = 0;
  int minor = 0;
  if (api.Version(&major, &minor) != NVRTC_SUCCESS)
    return Status::unavailable("nvrtcVersion failed");
  NvrtcFacts facts;
  int count = 0;
  if (api.GetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    facts.archs.resize(static_cast<std::size_t>(count));
    api.GetSupportedArchs(facts.archs.data());
  }
  std::error_code error;
  facts.library_path = std::filesystem::weakly_canonical(api.library->path(), error).string();
  facts.toolkit_dirs = toolkit_include_dirs_for(facts.library_path);
  files = build_files(facts.library_path);
  files.insert(files.end(), facts.toolkit_dirs.begin(), facts.toolkit_dirs.end());
  // nvrtcVersion gives only major.minor: the build is its files (a patch
  // release or a rebuilt toolkit is a new identity), named as every machine
  // with that toolkit names them: the library's file name, not its folder,
  // and the files' build-ids and contents (build_parts.h), not their stamps
  // (those are the record's, which is this machine's only).
  std::string version = "nvrtc " + std::to_string(major) + "." + std::to_string(minor) + " (" +
                        std::filesystem::path(facts.library_path).filename().string() +
                        "); build " + build_fingerprint(files, Env::posix());
  facts.identity = {"nvrtc", "nvrtc", std::move(version)};
  return facts;
}

// The record of what `config` loads: named by everything that picks the
// library (the names asked for, the loader's path and cache).
std::string record_name(const CompilerConfig& config, const BackendSettings& settings) {
  std::string picks = "nvrtc\n" + config.nvrtc_library;
  picks += std::string("\n") + kNvrtcLibraryVariable + "=" + settings.nvrtc_library;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH"}) {
    const char* value = std::getenv(var);
    picks += std::string("\n") + var + "=" + (value ? value : "");
  }
  picks += "\n" + stamp_text("/etc/ld.so.cache", Env::posix());
  // The form of what is learned: a new form, new records (4: the identity
  // names files by build-id, not by stamp).
  constexpr std::string_view kFactsForm = "4";
  return "nvrtc-" + std::string(kFactsForm) + "-" + to_hex(xxh3_128(picks));
}

std::string canonical_path(const std::string& path) {
  std::error_code error;
  const auto canonical = std::filesystem::weakly_canonical(path, error);
  return error ? path : canonical.string();
}

// Whether the library `named` (named_library) would load now is the one a
// record was learned from (`library`, canonical; `loaded_from`, the path
// the loader took). A named file must resolve to it; a soname search must
// not find a file of that name in LD_LIBRARY_PATH that is another; the
// path the loader took must still lead to it (a symbolic link retargeted,
// a toolkit folder switched). The loader's cache is in the record's name.
bool still_the_library(const std::string& named, const std::string& library,
                       const std::string& loaded_from) {
  const std::vector<std::string> candidates = vendor_library_candidates(named, kCudaToolkit);
  if (candidates.size() == 1 && candidates[0].find('/') != std::string::npos) {
    return canonical_path(candidates[0]) == library;
  }
  const std::vector<std::string> folders = loader_path_folders();
  for (const auto& name : candidates) {
    if (name.find('/') != std::string::npos) break;  // the sonames come first
    for (const auto& dir : folders) {
      std::error_code error;
      if (std::filesystem::exists(dir + "/" + name, error)) {
        return canonical_path(dir + "/" + name) == library;
      }
    }
  }
  return !loaded_from.empty() && canonical_path(loaded_from) == library;
}

Result<NvrtcFacts> facts_from(const CompilerFacts& record) {
  NvrtcFacts facts;
  auto path = fact(record, "library");
  auto version = fact(record, "identity.version");
  if (!path || !version) return Status::not_found("incomplete record");
  facts.library_path = *path;
  facts.identity = {"nvrtc", "nvrtc", *version};
  for (const auto& [name, value] : record.facts) {
    if (name == "arch") facts.archs.push_back(std::atoi(value.c_str()));
    if (name == "toolkit") facts.toolkit_dirs.push_back(value);
  }
  return facts;
}

}  // namespace

std::optional<std::string> nvrtc_target_misfit(const Target& target) {
  if (!parse_cuda_arch(target.arch)) {
    return "'" + target.arch + "' is not a CUDA arch (sm_NN, sm_NNa, compute_NN)";
  }
  if (!target.features.empty()) return "CUDA targets take no ':feature' suffix";
  return std::nullopt;
}

Result<std::unique_ptr<Compiler>> make_nvrtc_compiler(const CompilerConfig& config,
                                                      const BackendSettings& settings) {
  std::shared_ptr<const NvrtcApi> api;
  std::optional<NvrtcFacts> facts;
  const std::string named = named_library(config, settings);
  const std::string name = record_name(config, settings);
  if (auto record = load_compiler_facts(config.facts_dir, name, Env::posix())) {
    auto known = facts_from(*record);
    if (known &&
        still_the_library(named, known->library_path, fact(*record, "loaded_from").value_or(""))) {
      facts = std::move(*known);
    }
  }
  if (!facts) {
    auto loaded = shared_nvrtc(named);
    if (!loaded) return loaded.status();
    api = *loaded;
    std::vector<std::string> files;
    auto learned = facts_of(*api, files);
    if (!learned) return learned.status();
    facts = std::move(*learned);
    CompilerFacts record;
    record.files = std::move(files);
    record.facts = {{"library", facts->library_path},
                    {"loaded_from", api->library->path()},
                    {"identity.version", facts->identity.version}};
    for (int arch : facts->archs) record.facts.emplace_back("arch", std::to_string(arch));
    for (const auto& dir : facts->toolkit_dirs) record.facts.emplace_back("toolkit", dir);
    store_compiler_facts(config.facts_dir, name, record, Env::posix());
  }
  CompilerInputs inputs;
  inputs.dialect = "nvrtc";
  if (config.nvrtc_toolkit_include) inputs.toolkit_dirs = facts->toolkit_dirs;
  inputs.harmless_options = config.harmless_options;
  const std::string record_path =
      api || config.facts_dir.empty() ? std::string() : config.facts_dir + "/" + name + ".facts";
  return std::unique_ptr<Compiler>(std::make_unique<NvrtcCompiler>(
      std::move(api), named, std::move(*facts), std::move(inputs), record_path));
}

}  // namespace kcache
