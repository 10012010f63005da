// libnvrtc.so.<N>, kcache's stand-in (the NVRTC shim): NVRTC compiles
// served through kcache for programs that never call it. Preloaded (`kcache
// run` puts it in LD_PRELOAD), it carries the real library's soname and
// symbol version, so a program linked to libnvrtc and one that dlopens it
// by soname (CuPy, PyTorch) both get it. docs/design.md §10.2 says how:
//
// - The real library is opened by its path (another object of the same
//   soname) and every call kcache does not serve is forwarded to it.
// - nvrtcCreateProgram gives the program a handle of the shim's own that
//   records the source, name and headers; nvrtcAddNameExpression records
//   the expression. nvrtcCompileProgram asks the cache through the "nvrtc"
//   backend, compiling exactly what the program asked (its options, the
//   arch taken from them, its program name, no folder added), and the
//   queries of the compiled program (CUBIN or PTX, the log, lowered names)
//   are answered from the entry.
// - Anything else (an option kcache cannot serve, a failed compile, PTX of
//   a cubin build, LTO IR, PCH, callbacks, an error case) turns the program
//   into a real one: the real program is made and compiled as the program
//   did, and from then on every call on it is the real call. The program
//   sees the real library's own answer.
#include <kcache/cache.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "base/mutex.h"
#include "layers/layer_cache.h"
#include "layers/layer_switch.h"
#include "layers/logged_compiler.h"
#include "layers/nvrtc/real_nvrtc.h"

namespace {

using kcache::layer::note_caller;
using kcache::layer::Real;
using kcache::layer::real;

// A program as the application made it, served by kcache until something
// needs the real one (`twin`), made then and used for every later call.
struct Program {
  std::string source;
  std::optional<std::string> name;  // as given: nullopt for NULL
  std::vector<std::string> header_texts;
  std::vector<std::string> header_names;
  std::vector<std::string> expressions;
  bool compiled = false;
  std::vector<std::string> options;  // of the compile, as given
  // What the compile left, when kcache served it.
  kcache::CachedKernel kernel;
  bool cubin = false;  // the entry holds CUBIN (a real arch), else PTX
  std::string log;
  std::map<std::string, std::string, std::less<>> lowered;  // expression -> symbol
  nvrtcProgram twin = nullptr;
};

// The shim's state: never destroyed (programs are destroyed from static
// destructors at exit).
struct Shim {
  std::unique_ptr<kcache::Cache> cache;
  std::once_flag compiler_made;
  std::unique_ptr<kcache::Compiler> compiler;  // null when it cannot be made
  kcache::Mutex mutex;
  std::unordered_set<const Program*> programs GUARDED_BY(mutex);
};

// The shim, or nullptr when it serves nothing (KCACHE_LAYER_DISABLE=1, the
// cache off or not opened, no real library): every call is then the real one.
Shim* shim() {
  static Shim* const active = []() -> Shim* {
    if (kcache::layer::layer_disabled() || real() == nullptr) return nullptr;
    auto cache = kcache::layer::open_layer_cache(
        "NVRTC shim", "compiles through " + real()->path + " are served");
    if (!cache) return nullptr;
    auto* made = new Shim;  // never deleted: see Shim
    made->cache = std::move(cache);
    return made;
  }();
  return active;
}

// The shim's program behind `handle`, or nullptr for a real one (made
// through __nvrtcCPEx) or none.
Program* own(nvrtcProgram handle) {
  Shim* s = shim();
  if (s == nullptr || handle == nullptr) return nullptr;
  auto* program = reinterpret_cast<Program*>(handle);
  kcache::MutexLock lock(s->mutex);
  return s->programs.count(program) != 0 ? program : nullptr;
}

std::vector<const char*> pointers(const std::vector<std::string>& texts) {
  std::vector<const char*> out;
  out.reserve(texts.size());
  for (const auto& text : texts) out.push_back(text.c_str());
  return out;
}

// The real program of `p`, made (and compiled, if `p` was) as the
// application made it; nullptr when the real library refuses it.
nvrtcProgram twin_of(Program& p) {
  if (p.twin != nullptr) return p.twin;
  const Real& r = *real();
  auto texts = pointers(p.header_texts);
  auto names = pointers(p.header_names);
  if (r.CreateProgram(&p.twin, p.source.c_str(), p.name ? p.name->c_str() : nullptr,
                      static_cast<int>(texts.size()), texts.data(),
                      names.data()) != NVRTC_SUCCESS) {
    p.twin = nullptr;
    return nullptr;
  }
  for (const auto& expression : p.expressions) r.AddNameExpression(p.twin, expression.c_str());
  if (p.compiled) {
    auto argv = pointers(p.options);
    r.CompileProgram(p.twin, static_cast<int>(argv.size()), argv.data());
  }
  return p.twin;
}

// Options whose effect kcache cannot give from an entry: other outputs
// (LTO IR, OptiX IR, NVVM), files written (timings, precompiled headers),
// no output at all.
bool unservable_option(std::string_view option) {
  for (std::string_view name : {"-dlto",
                                "--dlink-time-opt",
                                "-gen-lto",
                                "--gen-lto",
                                "--optix-ir",
                                "-optix-ir",
                                "--time",
                                "-time",
                                "--fdevice-time-trace",
                                "-fdevice-time-trace",
                                "--create-pch",
                                "-create-pch",
                                "--pch",
                                "-pch",
                                "--use-pch",
                                "-use-pch",
                                "--pch-dir",
                                "-pch-dir",
                                "--fdevice-syntax-only",
                                "-fdevice-syntax-only",
                                "--dump-nvvm",
                                "-dump-nvvm"}) {
    if (option == name || (option.starts_with(name) && option[name.size()] == '=')) return true;
  }
  return false;
}

// One token for the request's option string: quoted as a POSIX shell
// quotes, which split_options() reads back as the token itself.
std::string quoted(std::string_view token) {
  std::string out = "'";
  for (char c : token) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// The request for `p` compiled with `argv`: the arch moved from the options
// to the target; nullopt when kcache cannot serve it.
std::optional<kcache::KernelRequest> request_for(const Program& p,
                                                 const std::vector<std::string>& argv) {
  kcache::KernelRequest request;
  std::optional<std::string> arch;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string_view option = argv[i];
    if (unservable_option(option)) return std::nullopt;
    std::optional<std::string> value;
    for (std::string_view name : {"-arch", "--gpu-architecture"}) {
      if (option == name && i + 1 < argv.size()) {
        value = argv[++i];
      } else if (option.starts_with(name) && option.size() > name.size() &&
                 option[name.size()] == '=') {
        value = std::string(option.substr(name.size() + 1));
      }
    }
    if (value) {
      if (arch) return std::nullopt;  // which one NVRTC takes is its business
      arch = std::move(value);
      continue;
    }
    if (!request.options.empty()) request.options += ' ';
    request.options += quoted(option);
  }
  if (!arch || !(arch->starts_with("sm_") || arch->starts_with("compute_"))) return std::nullopt;
  auto target = kcache::Target::parse(*arch);
  if (!target || target->units != 0) return std::nullopt;
  request.target = *target;
  request.source = p.source;
  // NVRTC's own name for a program given none (nvrtc.h: NULL or "").
  request.source_name = p.name && !p.name->empty() ? *p.name : "default_program";
  for (std::size_t i = 0; i < p.header_texts.size(); ++i) {
    request.headers.push_back({p.header_names[i], p.header_texts[i]});
  }
  request.kernel_names = p.expressions;
  return request;
}

// The "nvrtc" backend over the real library, compiling as called.
kcache::Compiler* compiler(Shim& s) {
  std::call_once(s.compiler_made, [&s] {
    kcache::CompilerConfig config;
    config.backend = "nvrtc";
    config.nvrtc_library = real()->path;
    config.nvrtc_toolkit_include = false;
    if (auto made = kcache::make_compiler(config)) {
      s.compiler = std::make_unique<kcache::layer::LoggedCompiler>(std::move(*made));
    }
  });
  return s.compiler.get();
}

// nvrtcCompileProgram of `p`, served; false when the real call must do it.
bool serve_compile(Shim& s, Program& p, const std::vector<std::string>& argv) {
  auto request = request_for(p, argv);
  kcache::Compiler* backend = compiler(s);
  if (!request || backend == nullptr) return false;
  auto kernel = s.cache->get_or_compile(*request, *backend);
  if (!kernel) {
    kcache::layer::say_left_to_real(*s.cache, "NVRTC", kernel.status().to_string());
    return false;
  }
  const auto format = kernel->metadata(kcache::kFormatField);
  if (!format || (*format != "cubin" && *format != "ptx")) return false;
  p.cubin = *format == "cubin";
  p.log = kernel->tier == kcache::TierKind::kCompiled
              ? kernel->compile_log
              : kernel->metadata(kcache::kBuildLogField).value_or("");
  p.lowered.clear();
  for (const auto& [field, value] : kernel->metadata_fields) {
    if (field != kcache::kLoweredField) continue;
    const std::size_t space = value.find(' ');
    if (space != std::string::npos) p.lowered[value.substr(space + 1)] = value.substr(0, space);
  }
  // Every expression must have its symbol: one without is NVRTC's to answer.
  for (const auto& expression : p.expressions) {
    if (p.lowered.find(expression) == p.lowered.end()) return false;
  }
  p.kernel = std::move(*kernel);
  return true;
}

// The answer of an output query (`size` or `copy` into `out`) of `p` from
// its entry, when it holds the output asked for.
nvrtcResult output(const Program& p, std::size_t* size, char* out) {
  const auto binary = p.kernel.binary();
  if (size != nullptr) *size = binary.size();
  if (out != nullptr) std::memcpy(out, binary.data(), binary.size());
  return NVRTC_SUCCESS;
}

nvrtcResult unavailable() { return NVRTC_ERROR_INTERNAL_ERROR; }

// A call on `handle`: on a real program (made through __nvrtcCPEx), or on
// one the shim has handed to its twin, the real call; `answer` when
// `served` says the shim answers it; otherwise the twin's real call.
template <class... Args, class Served, class Answer>
nvrtcResult forward(nvrtcResult (*kcache::NvrtcFunctions::*function)(nvrtcProgram, Args...),
                    nvrtcProgram handle, Served served, Answer answer,
                    std::type_identity_t<Args>... args) {
  const Real* r = real();
  if (r == nullptr || r->*function == nullptr) return unavailable();
  Program* p = own(handle);
  if (p == nullptr) return (r->*function)(handle, args...);
  if (p->twin == nullptr && served(*p)) return answer(*p);
  nvrtcProgram twin = twin_of(*p);
  return twin != nullptr ? (r->*function)(twin, args...) : NVRTC_ERROR_INTERNAL_ERROR;
}

// The outputs and controls kcache never serves: the real program's.
template <class... Args>
nvrtcResult real_only(nvrtcResult (*kcache::NvrtcFunctions::*function)(nvrtcProgram, Args...),
                      nvrtcProgram handle, std::type_identity_t<Args>... args) {
  auto never = [](Program&) { return false; };
  return forward(
      function, handle, never, [](Program&) { return NVRTC_ERROR_INTERNAL_ERROR; }, args...);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) const char* nvrtcGetErrorString(nvrtcResult result) {
  note_caller(__builtin_return_address(0));
  const Real* r = real();
  if (r == nullptr || r->GetErrorString == nullptr) return "NVRTC_ERROR_INTERNAL_ERROR";
  return r->GetErrorString(result);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcVersion(int* major, int* minor) {
  note_caller(__builtin_return_address(0));
  const Real* r = real();
  return r && r->Version ? r->Version(major, minor) : unavailable();
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetNumSupportedArchs(int* count) {
  note_caller(__builtin_return_address(0));
  const Real* r = real();
  return r && r->GetNumSupportedArchs ? r->GetNumSupportedArchs(count) : unavailable();
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetSupportedArchs(int* archs) {
  note_caller(__builtin_return_address(0));
  const Real* r = real();
  return r && r->GetSupportedArchs ? r->GetSupportedArchs(archs) : unavailable();
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetPCHHeapSize(std::size_t* size) {
  note_caller(__builtin_return_address(0));
  const Real* r = real();
  return r && r->GetPCHHeapSize ? r->GetPCHHeapSize(size) : unavailable();
}

__attribute__((visibility("default"))) nvrtcResult nvrtcSetPCHHeapSize(std::size_t size) {
  note_caller(__builtin_return_address(0));
  const Real* r = real();
  return r && r->SetPCHHeapSize ? r->SetPCHHeapSize(size) : unavailable();
}

__attribute__((visibility("default"))) nvrtcResult nvrtcCreateProgram(
    nvrtcProgram* prog, const char* src, const char* name, int num_headers,
    const char* const* headers, const char* const* include_names) {
  note_caller(__builtin_return_address(0));
  const Real* r = real();
  if (r == nullptr) return unavailable();
  Shim* s = shim();
  bool plain = s != nullptr && prog != nullptr && src != nullptr && num_headers >= 0 &&
               (num_headers == 0 || (headers != nullptr && include_names != nullptr));
  for (int i = 0; plain && i < num_headers; ++i) {
    plain = headers[i] != nullptr && include_names[i] != nullptr;
  }
  // Anything unusual is NVRTC's to answer.
  if (!plain) return r->CreateProgram(prog, src, name, num_headers, headers, include_names);
  auto program = std::make_unique<Program>();
  program->source = src;
  if (name != nullptr) program->name = name;
  for (int i = 0; i < num_headers; ++i) {
    program->header_texts.emplace_back(headers[i]);
    program->header_names.emplace_back(include_names[i]);
  }
  kcache::MutexLock lock(s->mutex);
  s->programs.insert(program.get());
  *prog = reinterpret_cast<nvrtcProgram>(program.release());
  return NVRTC_SUCCESS;
}

__attribute__((visibility("default"))) nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  const Real* r = real();
  if (r == nullptr) return unavailable();
  Program* p = prog != nullptr ? own(*prog) : nullptr;
  if (p == nullptr) return r->DestroyProgram(prog);
  {
    Shim* s = shim();
    kcache::MutexLock lock(s->mutex);
    s->programs.erase(p);
  }
  if (p->twin != nullptr) r->DestroyProgram(&p->twin);
  delete p;
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

__attribute__((visibility("default"))) nvrtcResult nvrtcAddNameExpression(
    nvrtcProgram prog, const char* name_expression) {
  auto served = [&](Program&) { return name_expression != nullptr; };
  auto answer = [&](Program& p) {
    if (p.compiled) return NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION;
    p.expressions.emplace_back(name_expression);
    return NVRTC_SUCCESS;
  };
  return forward(&Real::AddNameExpression, prog, served, answer, name_expression);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcCompileProgram(nvrtcProgram prog,
                                                                       int num_options,
                                                                       const char* const* options) {
  std::vector<std::string> argv;
  auto served = [&](Program& p) {
    if (p.compiled || num_options < 0 || (num_options > 0 && options == nullptr)) return false;
    for (int i = 0; i < num_options; ++i) {
      if (options[i] == nullptr) return false;
      argv.emplace_back(options[i]);
    }
    p.options = argv;
    p.compiled = serve_compile(*shim(), p, argv);
    if (!p.compiled) p.options.clear();
    return p.compiled;
  };
  auto answer = [](Program&) { return NVRTC_SUCCESS; };
  return forward(&Real::CompileProgram, prog, served, answer, num_options, options);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog,
                                                                     std::size_t* size) {
  auto served = [&](Program& p) { return p.compiled && size != nullptr; };
  auto answer = [&](Program& p) {
    if (!p.cubin) {  // a PTX build has no CUBIN: NVRTC says it is empty
      *size = 0;
      return NVRTC_SUCCESS;
    }
    return output(p, size, nullptr);
  };
  return forward(&Real::GetCUBINSize, prog, served, answer, size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  auto served = [&](Program& p) { return p.compiled && p.cubin && cubin != nullptr; };
  auto answer = [&](Program& p) { return output(p, nullptr, cubin); };
  return forward(&Real::GetCUBIN, prog, served, answer, cubin);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog,
                                                                   std::size_t* size) {
  auto served = [&](Program& p) { return p.compiled && !p.cubin && size != nullptr; };
  auto answer = [&](Program& p) { return output(p, size, nullptr); };
  return forward(&Real::GetPTXSize, prog, served, answer, size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx) {
  auto served = [&](Program& p) { return p.compiled && !p.cubin && ptx != nullptr; };
  auto answer = [&](Program& p) { return output(p, nullptr, ptx); };
  return forward(&Real::GetPTX, prog, served, answer, ptx);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog,
                                                                          std::size_t* size) {
  auto served = [&](Program& p) { return p.compiled && size != nullptr; };
  auto answer = [&](Program& p) {
    *size = p.log.size() + 1;  // with its NUL, as NVRTC counts
    return NVRTC_SUCCESS;
  };
  return forward(&Real::GetProgramLogSize, prog, served, answer, size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog,
                                                                      char* log) {
  auto served = [&](Program& p) { return p.compiled && log != nullptr; };
  auto answer = [&](Program& p) {
    std::memcpy(log, p.log.c_str(), p.log.size() + 1);
    return NVRTC_SUCCESS;
  };
  return forward(&Real::GetProgramLog, prog, served, answer, log);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog,
                                                                       const char* name_expression,
                                                                       const char** lowered_name) {
  // The answers NVRTC gives before the compile and for an expression never
  // added are its documented errors (checked by tests/layers/nvrtc_shim.sh).
  auto served = [&](Program&) { return name_expression != nullptr && lowered_name != nullptr; };
  auto answer = [&](Program& p) {
    if (!p.compiled) return NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
    auto it = p.lowered.find(std::string_view(name_expression));
    if (it == p.lowered.end()) return NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
    *lowered_name = it->second.c_str();
    return NVRTC_SUCCESS;
  };
  return forward(&Real::GetLoweredName, prog, served, answer, name_expression, lowered_name);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetNVVMSize(nvrtcProgram prog,
                                                                    std::size_t* size) {
  return real_only(&Real::GetNVVMSize, prog, size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetNVVM(nvrtcProgram prog, char* nvvm) {
  return real_only(&Real::GetNVVM, prog, nvvm);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog,
                                                                     std::size_t* size) {
  return real_only(&Real::GetLTOIRSize, prog, size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char* ir) {
  return real_only(&Real::GetLTOIR, prog, ir);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram prog,
                                                                       std::size_t* size) {
  return real_only(&Real::GetOptiXIRSize, prog, size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetOptiXIR(nvrtcProgram prog, char* ir) {
  return real_only(&Real::GetOptiXIR, prog, ir);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram prog) {
  return real_only(&Real::GetPCHCreateStatus, prog);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram prog,
                                                                               std::size_t* size) {
  return real_only(&Real::GetPCHHeapSizeRequired, prog, size);
}

__attribute__((visibility("default"))) nvrtcResult nvrtcSetFlowCallback(
    nvrtcProgram prog, int (*callback)(void*, void*), void* payload) {
  return real_only(&Real::SetFlowCallback, prog, callback, payload);
}

// __nvrtcCPEx's arguments are not documented: the trampoline below keeps
// every argument register, asks for the real function (passing its own
// return address: 7 registers and 128 bytes of xmm above it), and jumps to it.
__attribute__((visibility("hidden"))) void* kcache_nvrtc_cpex_target(const void* caller) {
  note_caller(caller);
  const Real* r = real();
  return r && r->CPEx ? r->CPEx : reinterpret_cast<void*>(&unavailable);
}

}  // extern "C"

#if defined(__x86_64__)
asm(R"(
  .text
  .globl __nvrtcCPEx
  .type __nvrtcCPEx, @function
__nvrtcCPEx:
  pushq %rdi
  pushq %rsi
  pushq %rdx
  pushq %rcx
  pushq %r8
  pushq %r9
  pushq %rax
  subq $128, %rsp
  movdqu %xmm0, 0(%rsp)
  movdqu %xmm1, 16(%rsp)
  movdqu %xmm2, 32(%rsp)
  movdqu %xmm3, 48(%rsp)
  movdqu %xmm4, 64(%rsp)
  movdqu %xmm5, 80(%rsp)
  movdqu %xmm6, 96(%rsp)
  movdqu %xmm7, 112(%rsp)
  movq 184(%rsp), %rdi
  call kcache_nvrtc_cpex_target
  movq %rax, %r11
  movdqu 0(%rsp), %xmm0
  movdqu 16(%rsp), %xmm1
  movdqu 32(%rsp), %xmm2
  movdqu 48(%rsp), %xmm3
  movdqu 64(%rsp), %xmm4
  movdqu 80(%rsp), %xmm5
  movdqu 96(%rsp), %xmm6
  movdqu 112(%rsp), %xmm7
  addq $128, %rsp
  popq %rax
  popq %r9
  popq %r8
  popq %rcx
  popq %rdx
  popq %rsi
  popq %rdi
  jmp *%r11
  .size __nvrtcCPEx, .-__nvrtcCPEx
)");
#endif
