// The "hip" backend: HIP C++ through hipRTC (ROCm 5's libamdhip64), run in
// a child process so that a compiler crash never takes the program down.
//
// Why a child: hipRTC from ROCm 5.2 aborts the whole process when asked for
// a target its comgr has no device libraries for (gfx1100), and comgr, once
// loaded, cannot share a process with another LLVM-based runtime such as
// PoCL (both register LLVM's command-line options; LLVM aborts). So this
// library never loads libamdhip64 or comgr: each compile runs in
// kcache-hip-worker (hip_worker.cpp; protocol in hip_protocol.h), in a
// private temporary folder that is also the worker's TMPDIR, so whatever a
// crash leaves behind (comgr's comgr-* folders) goes with the folder. A
// worker killed by a signal is a kCompileError naming the target and the
// signal. A fresh worker per compile adds 30-60 ms (process start, loading
// libamdhip64, comgr and LLVM) to hipRTC's 110-200 ms. A worker still
// running at CompilerConfig::timeout is killed (SIGKILL, with anything it
// started) and the compile is kTimeout, naming the target.
//
// When the compiler is made, the worker is run once ("probe", about 40 ms,
// once per process and library) to find libamdhip64, its hipRTC and comgr
// versions, and the ISAs comgr lists with the target-id features each takes.
// resolve_target refuses what comgr does not list (kUnavailable) and
// features the arch does not take (kInvalidArgument), before any compile.
//
// Options: the request's options go to hipRTC as given, then -I for each
// include folder, then --gpu-architecture=<target id> (e.g.
// gfx90a:sramecc+:xnack-). No -O is added: hipRTC's default is -O3 (the
// code objects are byte-identical). Output: the code object (an AMDGPU ELF,
// format "hsaco"); name expressions are lowered by hipRTC and stored like
// nvrtc's, one "lowered" field per kernel: "<lowered name> <expression>".
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>

#include "base/setting_variables.h"
#include "compiler/command/process.h"
#include "compiler/compiler_facts.h"
#include "compiler/hip/hip_protocol.h"
#include "compiler/registry.h"
#include "compiler/vendor_library.h"
#include "env/temp_dir.h"
#include "inputs/options.h"

// Set by src/CMakeLists.txt: the path from the installed library's folder to
// the worker's, and (for runs from the build tree) the worker built there.
#ifndef KCACHE_HIP_WORKER_RELATIVE
#define KCACHE_HIP_WORKER_RELATIVE "../libexec/kcache"
#endif

namespace kcache {
namespace {

using hip::Records;

constexpr const char* kWorkerName = "kcache-hip-worker";

// What the probe found, shared by every compiler made for one library.
struct HipRuntime {
  std::string worker;
  std::string library_path;  // the libamdhip64 each compile loads
  std::string hiprtc_version;
  std::string comgr_version;  // empty when the worker did not find comgr
  // processor ("gfx90a") -> the target-id features it takes ("sramecc",
  // "xnack"); empty when comgr's list is unknown. isa_names keeps comgr's
  // order, for messages.
  std::map<std::string, std::vector<std::string>> isas;
  std::vector<std::string> isa_names;
  CompilerIdentity identity;
};

// Where libamdhip64 may be (vendor_library_candidates): the library the
// program or the hip_library setting names, else the loader's search path,
// then $ROCM_PATH/lib, $HIP_PATH/lib and /opt/rocm/lib.
constexpr const char* kHipSonames[] = {"libamdhip64.so.5", "libamdhip64.so"};
constexpr const char* kRocmRootVariables[] = {"ROCM_PATH", "HIP_PATH"};
constexpr VendorToolkit kRocmToolkit{kHipSonames, kRocmRootVariables, "/opt/rocm", "lib"};

// The folder of the file this code runs from: libkcache.so, or the program
// that links kcache statically.
std::string loaded_from_dir() {
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&loaded_from_dir), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code error;
  auto path = std::filesystem::canonical(info.dli_fname, error);
  return error ? std::string() : path.parent_path().string();
}

bool executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The worker: the one the hip_worker setting names (KCACHE_HIP_WORKER; the
// only one tried when set), else the installed one
// (<libdir>/../libexec/kcache/, found from the loaded library), else, for
// code running from its build tree, the one built beside it. An installed
// kcache never runs a program out of a build folder.
Result<std::string> find_worker(const std::string& named) {
  if (!named.empty()) {
    if (executable(named)) return named;
    return Status::unavailable(std::string(kHipWorkerVariable) + "=" + named +
                               " is not an executable file");
  }
  std::vector<std::string> tried;
  const std::string dir = loaded_from_dir();
  if (!dir.empty()) {
    const std::string installed =
        (std::filesystem::path(dir) / KCACHE_HIP_WORKER_RELATIVE / kWorkerName)
            .lexically_normal()
            .string();
    if (executable(installed)) return installed;
    tried.push_back(installed);
#ifdef KCACHE_HIP_WORKER_BUILD
    std::error_code error;
    const auto tree = std::filesystem::canonical(KCACHE_BUILD_TREE, error).string();
    if (!error && (dir == tree || dir.starts_with(tree + "/"))) {
      if (executable(KCACHE_HIP_WORKER_BUILD)) return std::string(KCACHE_HIP_WORKER_BUILD);
      tried.emplace_back(KCACHE_HIP_WORKER_BUILD);
    }
#endif
  }
  std::string where;
  for (const auto& path : tried) where += (where.empty() ? "" : ", ") + path;
  return Status::unavailable(std::string("the hip backend needs its helper program ") +
                             kWorkerName + " (not found" +
                             (where.empty() ? std::string() : " at " + where) + "); set " +
                             kHipWorkerVariable + " to its path");
}

struct WorkerRun {
  ProcessResult process;
  std::optional<Records> result;  // nullopt when the worker wrote none
};

// Runs `<worker> <command> <folder>` on `request`, in `folder` (a private
// TempDir whose tmp/ becomes the worker's TMPDIR), for at most `timeout`
// (0: no limit).
Result<WorkerRun> run_worker(const std::string& worker, const char* command, const Records& request,
                             const std::string& folder, std::chrono::milliseconds timeout) {
  const std::string tmp = folder + "/" + hip::kTempSubfolder;
  if (::mkdir(tmp.c_str(), 0700) != 0) {
    return Status::io_error("cannot create " + tmp + ": " + std::strerror(errno));
  }
  if (!hip::write_file_atomic(folder + "/" + hip::kRequestFile, request.encode())) {
    return Status::io_error("cannot write the hipRTC request in " + folder);
  }
  auto process = run_process({worker, command, folder}, folder + "/worker.log", timeout);
  if (!process) return process.status();
  WorkerRun run;
  run.process = std::move(*process);
  if (run.process.signal == 0 && run.process.exit_code == 0) {
    if (auto bytes = hip::read_file(folder + "/" + hip::kResultFile)) {
      run.result = Records::decode(*bytes);
    }
  }
  return run;
}

std::string signal_text(int signal) {
  const char* name = ::strsignal(signal);
  return "signal " + std::to_string(signal) + (name ? std::string(": ") + name : std::string());
}

// Why a worker that neither crashed nor answered failed.
Status worker_failure(const std::string& worker, const WorkerRun& run) {
  if (run.process.exit_code != 0) {
    return Status(StatusCode::kInternal,
                  worker + " failed with exit code " + std::to_string(run.process.exit_code),
                  run.process.output);
  }
  return Status(StatusCode::kInternal, worker + " wrote no readable result", run.process.output);
}

Result<std::shared_ptr<const HipRuntime>> probe(const std::string& worker,
                                                const std::vector<std::string>& candidates,
                                                std::chrono::milliseconds timeout) {
  Records request;
  request.add("protocol", std::string(hip::kHipProtocolVersion));
  for (const auto& name : candidates) request.add("library", name);
  auto temp = TempDir::create("kcache-hip-");
  if (!temp) return temp.status();
  auto run = run_worker(worker, "probe", request, temp->path(), timeout);
  if (!run) return run.status();
  if (run->process.signal != 0) {
    return Status(StatusCode::kUnavailable,
                  "loading hipRTC (" + candidates.front() + ") crashed " + worker + " (" +
                      signal_text(run->process.signal) + ")",
                  run->process.output);
  }
  if (!run->result) return worker_failure(worker, *run);
  const Records& result = *run->result;
  if (result.first("status") != "ok") {
    return Status::unavailable(
        std::string("the hip backend needs libamdhip64 (ROCm's hipRTC); set ") +
        kHipLibraryVariable + " or ROCM_PATH: cannot load " + candidates.front() + " (" +
        result.first("message").value_or("?") + ")");
  }

  auto runtime = std::make_shared<HipRuntime>();
  runtime->worker = worker;
  runtime->library_path = result.first("library_path").value_or(candidates.front());
  runtime->hiprtc_version = result.first("hiprtc_version").value_or("?");
  runtime->comgr_version = result.first("comgr_version").value_or("");
  for (const auto& line : result.all("isa")) {
    std::vector<std::string> words;
    for (std::size_t pos = 0; pos < line.size();) {
      std::size_t space = line.find(' ', pos);
      if (space == std::string::npos) space = line.size();
      if (space > pos) words.push_back(line.substr(pos, space - pos));
      pos = space + 1;
    }
    if (words.empty() || runtime->isas.count(words.front()) != 0) continue;
    runtime->isas[words.front()] = std::vector<std::string>(words.begin() + 1, words.end());
    runtime->isa_names.push_back(words.front());
  }
  // hiprtcVersion says "9.0" for all of ROCm 5.2 and more: the build is
  // the files (libamdhip64, comgr), by their build-ids (build_parts.h).
  // The worker that runs them is kcache's own program: what it does to a
  // compile is its protocol's version, not its build, so a HIP package
  // packed by one kcache build fits another's (as NVRTC's and OpenCL's,
  // compiled in the process, never counted kcache's own files).
  std::string version = "hiprtc " + runtime->hiprtc_version;
  std::vector<std::string> files{runtime->library_path};
  if (!runtime->comgr_version.empty()) {
    version += "; comgr " + runtime->comgr_version;
    files.push_back(result.first("comgr_path").value_or(""));
  }
  version += "; worker protocol " + std::string(hip::kHipProtocolVersion);
  version += "; build " + build_fingerprint(files, Env::posix());
  runtime->identity = {"hip", "hiprtc", std::move(version)};
  return std::shared_ptr<const HipRuntime>(runtime);
}

// What a target may be written with before its arch (comgr's names).
constexpr std::string_view kAmdTriple = "amdgcn-amd-amdhsa--";

// "gfx906", "gfx90a", "gfx1100", "gfx9-generic": what an AMD GPU arch looks
// like, whether or not this ROCm knows it.
bool looks_like_amd_arch(std::string_view arch) {
  if (!arch.starts_with("gfx") || arch.size() < 4) return false;
  arch.remove_prefix(3);
  if (arch.ends_with("-generic")) {
    arch.remove_suffix(8);
    return !arch.empty() && std::all_of(arch.begin(), arch.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-';
    });
  }
  return arch.front() >= '0' && arch.front() <= '9' &&
         std::all_of(arch.begin(), arch.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

class HipCompiler final : public Compiler {
 public:
  HipCompiler(std::shared_ptr<const HipRuntime> runtime, std::chrono::milliseconds timeout,
              std::vector<std::string> harmless_options)
      : runtime_(std::move(runtime)), timeout_(timeout) {
    inputs_.dialect = "hiprtc";
    inputs_.harmless_options = std::move(harmless_options);
  }

  const CompilerIdentity& identity() const override { return runtime_->identity; }
  std::string library() const override { return runtime_->library_path; }

  const CompilerInputs& inputs() const override { return inputs_; }

  Result<Target> resolve_target(const Target& requested) const override {
    if (requested.empty()) {
      return Status::invalid_argument(
          "the hip backend needs a target such as gfx906 or gfx90a:sramecc+:xnack-; this ROCm "
          "supports " +
          supported());
    }
    Target target = requested;
    if (target.arch.starts_with(kAmdTriple)) target.arch.erase(0, kAmdTriple.size());
    if (!looks_like_amd_arch(target.arch)) {
      return Status::invalid_argument(*hip_target_misfit(requested));
    }
    auto canonical = Target::parse(target.id());  // sorts the features
    if (!canonical) return canonical.status();
    target.features = canonical->features;

    const std::vector<std::string>* takes = nullptr;
    static const std::vector<std::string> kTargetIdFeatures = {"sramecc", "xnack"};
    if (runtime_->isas.empty()) {
      takes = &kTargetIdFeatures;  // comgr's list is unknown; the worker is the safety net
    } else {
      auto isa = runtime_->isas.find(target.arch);
      if (isa == runtime_->isas.end()) {
        return Status::unavailable("this ROCm (" + versions() + ") cannot compile for " +
                                   target.arch + "; it supports " + supported());
      }
      takes = &isa->second;
    }
    std::vector<std::string> seen;
    for (std::size_t pos = 0; pos < target.features.size();) {
      std::size_t colon = target.features.find(':', pos);
      if (colon == std::string::npos) colon = target.features.size();
      const std::string name = target.features.substr(pos, colon - pos - 1);  // without +/-
      pos = colon + 1;
      if (std::find(takes->begin(), takes->end(), name) == takes->end()) {
        std::string list;
        for (const auto& feature : *takes) list += (list.empty() ? "" : ", ") + feature;
        return Status::invalid_argument(target.arch + " takes no '" + name + "' feature" +
                                        (list.empty() ? " (it takes none)" : "; it takes " + list));
      }
      if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
        return Status::invalid_argument("target feature '" + name + "' is given twice");
      }
      seen.push_back(name);
    }
    return target;
  }

  Result<CompileOutput> compile(const KernelRequest& request, const Target& target) override {
    auto parsed = request_options(request, inputs_);  // the tokens the key holds
    if (!parsed) return parsed.status();
    for (const auto& token : parsed->tokens) {
      if (token.starts_with("--gpu-architecture") || token.starts_with("--offload-arch") ||
          token.starts_with("--amdgpu-target") || token.starts_with("-mcpu") ||
          token.starts_with("-march") || token == "-arch" || token.starts_with("-arch=")) {
        return Status::invalid_argument("set the AMD arch with the target, not with '" + token +
                                        "' in the options");
      }
    }
    Records worker_request;
    worker_request.add("protocol", std::string(hip::kHipProtocolVersion));
    worker_request.add("library", runtime_->library_path);
    worker_request.add("source", request.source);
    for (auto& token : parsed->tokens) worker_request.add("option", std::move(token));
    for (const auto& dir : request.include_dirs) worker_request.add("option", "-I" + dir);
    worker_request.add("option", "--gpu-architecture=" + target.id());
    for (const auto& header : request.headers) {
      worker_request.add("header_name", header.name);
      worker_request.add("header_content", header.content);
    }
    for (const auto& name : request.kernel_names) worker_request.add("name_expression", name);

    auto temp = TempDir::create("kcache-hip-");
    if (!temp) return temp.status();
    auto run = run_worker(runtime_->worker, "compile", worker_request, temp->path(), timeout_);
    if (!run && run.status().code() == StatusCode::kTimeout) {
      return Status(StatusCode::kTimeout,
                    "hipRTC compiling for " + target.id() + ": " + run.status().message(),
                    run.status().details());
    }
    if (!run) return run.status();
    if (run->process.signal != 0) return crashed(target, run->process);
    if (!run->result) return worker_failure(runtime_->worker, *run);
    Records& result = *run->result;

    const std::string status = result.first("status").value_or("");
    const std::string message = result.first("message").value_or("");
    std::string log = result.first("log").value_or("");
    if (status == "compile_error") {
      return Status::compile_error(message + " (target " + target.id() + ")", std::move(log));
    }
    if (status == "invalid_argument") return Status::invalid_argument(message);
    if (status == "unavailable") return Status::unavailable(message);
    if (status != "ok") return Status::internal("kcache-hip-worker: " + message);

    auto code = result.first("code");
    if (!code || code->size() < 20 ||
        code->compare(0, 4,
                      "\x7f"
                      "ELF") != 0) {
      return Status::internal("hipRTC returned something that is not an ELF code object");
    }
    CompileOutput output;
    output.binary.assign(code->begin(), code->end());
    output.metadata.emplace_back(kFormatField, "hsaco");
    // The worker's "lowered" records (hip_protocol.h) are the entry's fields.
    for (auto& name : result.all("lowered")) output.metadata.emplace_back(kLoweredField, name);
    output.log = std::move(log);
    return output;
  }

 private:
  Status crashed(const Target& target, const ProcessResult& process) const {
    std::string message =
        "hipRTC crashed (" + signal_text(process.signal) + ") compiling for " + target.id();
    if (!runtime_->isas.empty() && runtime_->isas.count(target.arch) == 0) {
      message +=
          ", which this ROCm (" + versions() + ") cannot compile for; it supports " + supported();
    }
    message += "; the program goes on, nothing was cached";
    return Status::compile_error(std::move(message), process.output);
  }

  std::string versions() const {
    return "hiprtc " + runtime_->hiprtc_version +
           (runtime_->comgr_version.empty() ? "" : ", comgr " + runtime_->comgr_version);
  }

  std::string supported() const {
    if (runtime_->isas.empty()) return "the gfx targets its comgr knows";
    std::string list;
    for (const auto& isa : runtime_->isa_names) list += (list.empty() ? "" : ", ") + isa;
    return list;
  }

  std::shared_ptr<const HipRuntime> runtime_;
  const std::chrono::milliseconds timeout_;
  CompilerInputs inputs_;
};

}  // namespace

std::optional<std::string> hip_target_misfit(const Target& target) {
  std::string_view arch = target.arch;
  if (arch.starts_with(kAmdTriple)) arch.remove_prefix(kAmdTriple.size());
  if (!looks_like_amd_arch(arch)) {
    return "'" + target.arch + "' is not an AMD GPU arch (gfx906, gfx90a, gfx1030, ...)";
  }
  return std::nullopt;
}

Result<std::unique_ptr<Compiler>> make_hip_compiler(const CompilerConfig& config,
                                                    const BackendSettings& settings) {
  auto worker = find_worker(settings.hip_worker);
  if (!worker) return worker.status();
  const std::vector<std::string> candidates = vendor_library_candidates(
      config.hip_library.empty() ? settings.hip_library : config.hip_library, kRocmToolkit);
  std::string key = *worker;
  for (const auto& name : candidates) key += "\n" + name;

  // One probe per worker and library list per process; a failed probe is
  // tried again next time.
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const HipRuntime>> probed;
  std::shared_ptr<const HipRuntime> runtime;
  {
    std::lock_guard lock(mutex);
    auto& slot = probed[key];
    if (!slot) {
      // The probe is shared by later compilers, whatever their timeout; it
      // takes about 40 ms, so a minute is plenty, and 0 stays no limit.
      const auto probe_timeout =
          config.timeout.count() > 0
              ? std::min<std::chrono::milliseconds>(config.timeout, std::chrono::seconds(60))
              : config.timeout;
      auto fresh = probe(*worker, candidates, probe_timeout);
      if (!fresh) {
        probed.erase(key);
        return fresh.status();
      }
      slot = *fresh;
    }
    runtime = slot;
  }
  return std::unique_ptr<Compiler>(
      std::make_unique<HipCompiler>(std::move(runtime), config.timeout, config.harmless_options));
}

}  // namespace kcache
