// kcache: compilers, the last tier.
//
// A `Compiler` turns a `KernelRequest` into a binary for one target. Vendor
// compilers (OpenCL, NVRTC, HIP) are loaded at run time with dlopen, so the
// kcache library itself has no link-time dependency on any GPU runtime; a
// backend whose library is missing fails to construct with kUnavailable and
// a message naming the library, and the rest of kcache still works.
//
// Backends:
//   "opencl"   any OpenCL platform through the ICD loader (libOpenCL.so.1).
//              The identity holds the platform, device and driver versions
//              and the build of every library the OpenCL stack loaded.
//   "nvrtc"    CUDA C++ through NVRTC (libnvrtc, found through
//              KCACHE_NVRTC_LIBRARY, the loader path, CUDA_HOME or
//              /usr/local/cuda). Target sm_NN gives CUBIN, compute_NN PTX.
//              The identity holds the NVRTC version and the build of
//              libnvrtc, its builtins and the toolkit's include folders.
//   "hip"      HIP C++ through hipRTC (ROCm 5's libamdhip64, see
//              CompilerConfig::hip_library), for targets such as gfx906,
//              gfx90a:sramecc+:xnack- or gfx1030; no AMD GPU is needed.
//              Output: the code object (AMDGPU ELF, format "hsaco"); name
//              expressions are lowered like NVRTC's. Every compile runs in a
//              helper process, kcache-hip-worker (installed in
//              <libexecdir>/kcache; KCACHE_HIP_WORKER overrides), so a
//              compiler crash is a kCompileError naming the target and the
//              signal, never the end of the program. resolve_target refuses a
//              target the installed comgr does not list (gfx1100 on ROCm 5.2)
//              with kUnavailable, and a malformed or foreign one, or a feature
//              the arch does not take, with kInvalidArgument. The identity
//              holds the hipRTC and comgr versions and the build of their files.
//   "command"  an external compiler command line with {in} and {out}
//              placeholders; identified by `compiler_id`, or by its build:
//              the program (and each file the command line names), stamped,
//              as ccache's compiler_check=mtime. gcc, clang, hipcc and nvcc
//              are asked what they read (-MD -MF, checked on every hit).
#pragma once

#include <kcache/export.h>
#include <kcache/key.h>
#include <kcache/status.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

// Who compiles. `id` names the compiler and its platform precisely enough
// that two compilers with equal (id, version) produce the same binary for
// the same input. Both are part of the key.
struct KCACHE_EXPORT CompilerIdentity {
  std::string backend{};  // "opencl", "command", ...
  std::string id{};       // e.g. "Portable Computing Language|pthread-skylake-avx512"
  std::string version{};  // e.g. "OpenCL 3.0 PoCL 3.1|driver 3.1+debian"
};

// The names of the metadata fields an entry may hold (CompileOutput::
// metadata, CachedKernel::metadata): set by the backends and kcache, read by
// programs and the drop-in layers. Stored on disk: a name never changes.
//
// The binary's form: "cubin" or "ptx" (nvrtc), "hsaco" (hip), "poclbin",
// "elf" or "opencl-binary" (opencl), "command-output" (command).
inline constexpr char kFormatField[] = "format";
// One per name expression lowered (nvrtc, hip): "<lowered name> <name
// expression>", e.g. "_Z3addIfEvPT_ add<float>".
inline constexpr char kLoweredField[] = "lowered";
// opencl: "yes" when the request's warmup ran on the built program before
// its binary was read (KernelRequest::warmup), "no" when it had none.
inline constexpr char kWarmedField[] = "warmed";
// The compiler's log, kept by the drop-in layers to answer a hit's log query
// as the compile did.
inline constexpr char kBuildLogField[] = "build_log";
// Why an entry was replaced by a refined binary (Cache::refine).
inline constexpr char kRefinedField[] = "refined";

// What a compile produced.
struct KCACHE_EXPORT CompileOutput {
  std::vector<std::uint8_t> binary{};
  // Facts to store with the binary, e.g. {kFormatField, "poclbin"} or a
  // lowered kernel name (the field names above). Returned with every later
  // hit.
  std::vector<std::pair<std::string, std::string>> metadata{};
  // The compiler's messages (warnings), possibly empty.
  std::string log{};
  // Files on disk the compile read beyond what the request holds, as the
  // compiler listed them (the command backend asks gcc, clang, hipcc and
  // nvcc with -MD -MF). Their digests are kept with the entry and checked
  // on every hit: one that changed makes the hit a miss. Empty when the
  // compiler cannot tell.
  std::vector<std::string> files_read{};
  // Why the binary must not be cached (the compiler could not say what it
  // read); empty when it may be. The binary is still returned.
  std::string not_cacheable{};
};

// What a compiler reads besides the request, as kcache models it to key a
// request (docs/design.md §1.3 says, per backend, what is in the key). The
// key and the backend's compile read a request through the same model, so
// the compiler receives exactly the options that were keyed.
struct KCACHE_EXPORT CompilerInputs {
  // The option syntax and header search order: "nvrtc", "hiprtc",
  // "opencl", "gcc" (gcc, clang, hipcc), "nvcc", or "generic": an unknown
  // compiler, whose -D, -U and -I are read and every place it may search
  // for a header is keyed.
  std::string dialect = "generic";
  // Options the compiler gets besides the request's, read for include
  // folders and files: before the request's (a command line's own) and
  // after them (what the platform adds from its environment, such as
  // PoCL's POCL_EXTRA_BUILD_FLAGS).
  std::vector<std::string> leading_options{};
  std::vector<std::string> trailing_options{};
  // Header folders that ship with the compiler, searched after the others.
  // A header found there is covered by the identity and not hashed.
  std::vector<std::string> toolkit_dirs{};
  // System header folders the compiler takes from its environment
  // (C_INCLUDE_PATH, CPLUS_INCLUDE_PATH): a header found there is keyed.
  std::vector<std::string> system_dirs{};
  // Environment variables that change the output, and their values, for
  // those that are set: each is in the key.
  std::vector<std::pair<std::string, std::string>> environment{};
  // Option names declared harmless (CompilerConfig::harmless_options): an
  // option kcache does not know and that may name a file makes a request
  // uncached, unless it is one of these.
  std::vector<std::string> harmless_options{};
  // Whether a header found in none of the folders kcache knows is the
  // compiler's own (a built-in header, covered by its identity). False for
  // a compiler whose own folders are unknown (a command running an unknown
  // program): such a header makes the request uncached.
  bool owns_unfound_headers = true;
  // The backend passes the options as one string (OpenCL): a token with a
  // space, a quote or a backslash cannot be passed as itself, and makes the
  // request uncached (the platform gets the options as written).
  bool one_option_string = false;
};

// Thread-safe: `compile` may run on several threads at once, for different
// requests. Implementations never throw.
class KCACHE_EXPORT Compiler {
 public:
  virtual ~Compiler() = default;

  [[nodiscard]] virtual const CompilerIdentity& identity() const = 0;

  // Completes a requested target (a backend that sees its device fills in
  // arch and units) or rejects one it cannot compile for, with
  // kInvalidArgument and the list of what it supports.
  [[nodiscard]] virtual Result<Target> resolve_target(const Target& requested) const = 0;

  // How this compiler reads files (see CompilerInputs); the default is a
  // generic compiler, whose every possible header is keyed.
  [[nodiscard]] virtual const CompilerInputs& inputs() const;

  // Compiles `request` for `target` (a value returned by resolve_target).
  // A source the compiler rejects gives kCompileError with its log in
  // details(); a failure to run the compiler gives kUnavailable or kIoError;
  // a compiler run still going at CompilerConfig::timeout, kTimeout.
  [[nodiscard]] virtual Result<CompileOutput> compile(const KernelRequest& request,
                                                      const Target& target) = 0;

  // The runtime library compiles go through, for a backend that loads one
  // (nvrtc: libnvrtc; hip: libamdhip64), else empty. No part of the key
  // (the identity names the library's build); a manifest (KCACHE_RECORD)
  // records it, so that `kcache pack` compiles with the library the
  // program used, wherever the program found it.
  [[nodiscard]] virtual std::string library() const { return {}; }

  // Whether a binary this compiler stored serves `request` as well as a
  // new compile would, judged by the metadata stored with it
  // (CompileOutput::metadata). False: the cache compiles again and stores
  // the new binary over it. Asked of entries in writable tiers alone (a
  // package's binary is served as it is: a compile could not replace it,
  // and a binary beats a compile). Default: true. The OpenCL backend says
  // false for a binary stored without a warmup when the request has one
  // (PoCL keeps the work-group code a launch makes in the binary).
  [[nodiscard]] virtual bool stored_binary_serves(
      const KernelRequest& request,
      const std::vector<std::pair<std::string, std::string>>& metadata) const {
    (void)request;
    (void)metadata;
    return true;
  }
};

// How to build a compiler by backend name (the CLI and the C API use this).
struct KCACHE_EXPORT CompilerConfig {
  std::string backend{};  // "opencl", "nvrtc", "hip" or "command"

  // command: the command line, e.g. "clang -c -x cl {in} -o {out}". {in} is
  // replaced by a file holding the source, {out} by the file to read back.
  std::string command{};
  // command: a fixed identity; when empty, the program found in PATH (past
  // wrappers such as ccache or env) and every file the command line names
  // are stamped (path, size, mtime, ctime, inode): nothing is run.
  std::string compiler_id{};
  // command: the file name {in} gets (compilers pick the language from its
  // extension); "kernel.src" when empty. Part of the identity.
  std::string command_input_name{};

  // opencl: which platform and device (indices as the ICD loader lists
  // them; -1 picks the first that has a device).
  int opencl_platform = -1;
  int opencl_device = 0;
  // opencl: compile in the caller's context for this device instead of one
  // the compiler creates (cl_context and cl_device_id; borrowed, must outlive
  // the compiler).
  void* opencl_context = nullptr;
  void* opencl_device_id = nullptr;

  // Every backend: names of options kcache should take as harmless (they
  // read no file and name no folder), e.g. "--my-flag" or "-fmy-opt=": an
  // option it does not know that may name a file otherwise makes a request
  // uncached. Such an option takes its value joined or after '='.
  std::vector<std::string> harmless_options{};

  // Every backend: where it may keep what it learns about its compiler
  // (identity, targets), checked by the files' stamps, so that a later
  // process knows it without loading the compiler (nvrtc: a program whose
  // requests all hit never loads libnvrtc). Empty: <user cache
  // dir>/<version>/compilers when the cache is enabled; "-": nowhere.
  std::string facts_dir{};

  // nvrtc: the libnvrtc to load (a path or soname); searched when empty.
  std::string nvrtc_library{};
  // nvrtc: put the toolkit's include folders on the include path (after the
  // request's), so <cuda_fp16.h> and <cuda/std/...> work without -I. Off,
  // a compile is exactly the NVRTC call its request spells (the NVRTC
  // shim's: it compiles what the program asked NVRTC for, as it asked).
  bool nvrtc_toolkit_include = true;
  // hip: the libamdhip64 that holds hipRTC (a path or soname), loaded by the
  // worker process; when empty, KCACHE_HIP_LIBRARY, else libamdhip64.so.5,
  // libamdhip64.so, then $ROCM_PATH/lib, $HIP_PATH/lib and /opt/rocm/lib.
  std::string hip_library{};

  // command and hip: the longest one compile (one child process: the
  // command, or kcache-hip-worker) may take; 0 = no limit. At the deadline
  // the child and the processes it started are killed (SIGKILL) and the
  // compile gives kTimeout, which is not remembered as a compile error. The
  // nvrtc and opencl compile inside the calling process and have no limit.
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

// Creates the compiler a config names. kInvalidArgument for an unknown
// backend or a bad config; kUnavailable when its runtime cannot be loaded
// (e.g. no libOpenCL.so.1, no OpenCL platform).
KCACHE_EXPORT Result<std::unique_ptr<Compiler>> make_compiler(const CompilerConfig& config);

// The backend names make_compiler accepts.
KCACHE_EXPORT std::vector<std::string> compiler_backends();

// Why `backend` can take no target of this name whatever its runtime (an
// AMD arch for nvrtc, a CUDA arch for hip), read from the name alone;
// nullopt when it may, the runtime deciding (which archs this NVRTC or
// ROCm compiles for, which device OpenCL has; a command's targets are its
// own). Loads nothing: `kcache pack` asks before it starts a compiler.
KCACHE_EXPORT std::optional<std::string> target_misfit(std::string_view backend,
                                                       const Target& target);

}  // namespace kcache
