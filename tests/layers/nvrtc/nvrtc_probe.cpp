// An NVRTC program that knows nothing of kcache, loading NVRTC as CuPy
// does (dlopen by soname, dlsym): it compiles programs and prints, one
// line each, every answer a program can see of them (results, sizes and
// digests of CUBIN and PTX, logs, lowered names, the error cases).
// tests/layers/nvrtc_shim.sh runs it without the shim and under it, and
// compares.
//
// Usage: nvrtc_probe SONAME INCLUDE_DIR [THREADS]
//   INCLUDE_DIR holds probe.h, which the source includes through -I.
// Exit 0 when it ran to the end; 1 when a call that must work failed;
// 125 when SONAME cannot be loaded.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

struct Nvrtc {
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int*, int*);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetPTXSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*GetPTX)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char*);
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char*, const char**);
  nvrtcResult (*GetLTOIRSize)(nvrtcProgram, std::size_t*);  // null before NVRTC 12
};

Nvrtc api;

template <class F>
void bind(void* handle, F& function, const char* name, bool required = true) {
  function = reinterpret_cast<F>(::dlsym(handle, name));
  if (function == nullptr && required) {
    std::printf("FAIL no %s\n", name);
    std::exit(1);
  }
}

std::uint64_t digest(const char* data, std::size_t size) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (std::size_t i = 0; i < size; ++i)
    h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ULL;
  return h;
}

// Every output of a compiled program, one line each.
void print_outputs(const char* label, nvrtcProgram program) {
  std::size_t size = 0;
  nvrtcResult rc = api.GetProgramLogSize(program, &size);
  std::string log(size, '\0');
  nvrtcResult log_rc = rc == 0 ? api.GetProgramLog(program, log.data()) : -1;
  std::printf("%s log: rc %d/%d size %zu\n%s\n-- end of log\n", label, rc, log_rc, size,
              log.c_str());
  size = 0;
  rc = api.GetCUBINSize(program, &size);
  std::string cubin(size, '\0');
  nvrtcResult get = rc == 0 && size > 0 ? api.GetCUBIN(program, cubin.data()) : -1;
  std::printf("%s cubin: rc %d/%d size %zu digest %016llx\n", label, rc, get, size,
              static_cast<unsigned long long>(digest(cubin.data(), cubin.size())));
  size = 0;
  rc = api.GetPTXSize(program, &size);
  std::string ptx(size, '\0');
  get = rc == 0 && size > 0 ? api.GetPTX(program, ptx.data()) : -1;
  std::printf("%s ptx: rc %d/%d size %zu digest %016llx\n", label, rc, get, size,
              static_cast<unsigned long long>(digest(ptx.data(), ptx.size())));
  const std::size_t file = ptx.find("probe_file");
  if (file != std::string::npos) std::printf("%s ptx names its file\n", label);
  if (api.GetLTOIRSize != nullptr) {
    size = 0;
    std::printf("%s ltoir: rc %d size %zu\n", label, api.GetLTOIRSize(program, &size), size);
  }
}

struct Spec {
  const char* label;
  const char* source;
  const char* name;
  std::vector<const char*> options;
  std::vector<const char*> expressions;
  std::vector<const char*> header_texts;
  std::vector<const char*> header_names;
};

// Creates, compiles and reads `spec` the way a JIT does, printing each answer.
void run(const Spec& spec, bool quiet = false) {
  nvrtcProgram program = nullptr;
  nvrtcResult rc = api.CreateProgram(&program, spec.source, spec.name,
                                     static_cast<int>(spec.header_texts.size()),
                                     spec.header_texts.data(), spec.header_names.data());
  if (!quiet) std::printf("%s create: rc %d\n", spec.label, rc);
  if (rc != 0) return;
  for (const char* expression : spec.expressions) {
    rc = api.AddNameExpression(program, expression);
    if (!quiet) std::printf("%s add %s: rc %d\n", spec.label, expression, rc);
  }
  const char* lowered = nullptr;
  if (!spec.expressions.empty() && !quiet) {
    std::printf("%s lowered before compile: rc %d\n", spec.label,
                api.GetLoweredName(program, spec.expressions[0], &lowered));
  }
  rc = api.CompileProgram(program, static_cast<int>(spec.options.size()), spec.options.data());
  if (!quiet) std::printf("%s compile: rc %d (%s)\n", spec.label, rc, api.GetErrorString(rc));
  if (!quiet) print_outputs(spec.label, program);
  for (const char* expression : spec.expressions) {
    lowered = nullptr;
    rc = api.GetLoweredName(program, expression, &lowered);
    if (!quiet)
      std::printf("%s lowered %s: rc %d %s\n", spec.label, expression, rc,
                  lowered ? lowered : "(none)");
  }
  if (!quiet) {
    std::printf("%s lowered of an expression never added: rc %d\n", spec.label,
                api.GetLoweredName(program, "never_added", &lowered));
    std::printf("%s add after compile: rc %d\n", spec.label,
                api.AddNameExpression(program, "late"));
  }
  if (quiet) {
    std::size_t size = 0;
    api.GetCUBINSize(program, &size);
    std::string cubin(size, '\0');
    if (size > 0) api.GetCUBIN(program, cubin.data());
    std::printf("%s cubin digest %016llx\n", spec.label,
                static_cast<unsigned long long>(digest(cubin.data(), cubin.size())));
  }
  rc = api.DestroyProgram(&program);
  if (!quiet)
    std::printf("%s destroy: rc %d handle %s\n", spec.label, rc, program ? "kept" : "null");
}

const char* kSource = R"(#include "probe.h"
#include "probe_mem.h"
template <typename T> __global__ void scale(T* a, T s) { a[threadIdx.x] = a[threadIdx.x] * s * SCALE + OFFSET + MEM; }
__global__ void add(int* a, const int* b) { a[threadIdx.x] += b[threadIdx.x]; }
__device__ const char* probe_where = __FILE__;
__global__ void warn() { int unused_probe_variable; }
)";

const char* kFileSource = R"(__device__ const char* probe_file = __FILE__;
extern "C" __global__ void file_probe(const char** out) { *out = probe_file; }
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: nvrtc_probe SONAME INCLUDE_DIR [THREADS]\n");
    return 2;
  }
  void* nvrtc = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (nvrtc == nullptr) {
    std::printf("no %s: %s\n", argv[1], ::dlerror());
    return 125;
  }
  bind(nvrtc, api.GetErrorString, "nvrtcGetErrorString");
  bind(nvrtc, api.Version, "nvrtcVersion");
  bind(nvrtc, api.CreateProgram, "nvrtcCreateProgram");
  bind(nvrtc, api.DestroyProgram, "nvrtcDestroyProgram");
  bind(nvrtc, api.CompileProgram, "nvrtcCompileProgram");
  bind(nvrtc, api.GetPTXSize, "nvrtcGetPTXSize");
  bind(nvrtc, api.GetPTX, "nvrtcGetPTX");
  bind(nvrtc, api.GetCUBINSize, "nvrtcGetCUBINSize");
  bind(nvrtc, api.GetCUBIN, "nvrtcGetCUBIN");
  bind(nvrtc, api.GetProgramLogSize, "nvrtcGetProgramLogSize");
  bind(nvrtc, api.GetProgramLog, "nvrtcGetProgramLog");
  bind(nvrtc, api.AddNameExpression, "nvrtcAddNameExpression");
  bind(nvrtc, api.GetLoweredName, "nvrtcGetLoweredName");
  bind(nvrtc, api.GetLTOIRSize, "nvrtcGetLTOIRSize", false);
  int major = 0;
  int minor = 0;
  const nvrtcResult version = api.Version(&major, &minor);
  std::printf("version: rc %d %d.%d\n", version, major, minor);
  const std::string include = std::string("-I") + argv[2];
  const int threads = argc > 3 ? std::atoi(argv[3]) : 0;

  const std::vector<const char*> mem_text{"#define MEM 5\n"};
  const std::vector<const char*> mem_name{"probe_mem.h"};
  const Spec cubin{"cubin",
                   kSource,
                   "probe.cu",
                   {"-arch=sm_80", "--std=c++17", "-DSCALE=3", include.c_str(), "-lineinfo"},
                   {"scale<int>", "&add", "warn"},
                   mem_text,
                   mem_name};
  if (threads > 0) {  // the same compile on many threads at once
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back([&] { run(cubin, true); });
    for (auto& thread : pool) thread.join();
    std::printf("done\n");
    return 0;
  }
  run(cubin);
  run({"ptx",
       kSource,
       "probe.cu",
       {"--gpu-architecture=compute_80", "-DSCALE=4", include.c_str()},
       {"scale<float>"},
       mem_text,
       mem_name});
  run({"two-token arch",
       kSource,
       "probe.cu",
       {"-arch", "sm_80", "-DSCALE=5", include.c_str()},
       {},
       mem_text,
       mem_name});
  run({"file named", kFileSource, "sub/probe_file.cu", {"-arch=compute_80"}, {}, {}, {}});
  run({"file null", kFileSource, nullptr, {"-arch=compute_80"}, {}, {}, {}});
  run({"file empty", kFileSource, "", {"-arch=compute_80"}, {}, {}, {}});
  // CuPy compiles an empty file (its name "") once per option set.
  run({"empty source", "", "", {"-arch=compute_80", include.c_str()}, {}, {}, {}});
  run({"broken",
       "__global__ void broken() { undeclared_probe_name = 1; }",
       "broken.cu",
       {"-arch=sm_80"},
       {},
       {},
       {}});
  run({"bad option", kFileSource, "bad.cu", {"-arch=sm_80", "--no-such-probe-option"}, {}, {}, {}});
  run({"no arch", kFileSource, "noarch.cu", {}, {}, {}, {}});
  run({"two archs", kFileSource, "two.cu", {"-arch=sm_80", "-arch=sm_86"}, {}, {}, {}});
  run({"missing header",
       "#include \"nowhere_probe.h\"\n",
       "missing.cu",
       {"-arch=sm_80"},
       {},
       {},
       {}});
  nvrtcProgram none = nullptr;
  std::printf("create without a source: rc %d\n",
              api.CreateProgram(&none, nullptr, "x.cu", 0, nullptr, nullptr));
  std::printf("compile of no program: rc %d\n", api.CompileProgram(nullptr, 0, nullptr));
  std::printf("destroy of no program: rc %d\n", api.DestroyProgram(nullptr));
  std::printf("done\n");
  return 0;
}
