// Never a stale binary, through every way a compiler reads a header
// (issue 10): each real backend (command running `gcc -E`, nvrtc, opencl,
// hip) x each include route x an edit. After the edit, the binary kcache
// returns equals a compile with the cache off (and differs from the one
// before, so the route mattered); the unchanged request still hits, before
// and after. Runs in the test's own working folder, since compilers resolve
// relative names against it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <kcache/cache.h>

#include <filesystem>
#include <functional>
#include <ostream>

#include "fakes/required_backends.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;

struct Backend {
  std::string name;  // for test names and KCACHE_REQUIRE_BACKENDS
  std::string required_as;
  CompilerConfig config;
  std::string target;
  // Kernel text that puts the value of the macro MARK into the binary.
  std::string body;
};

std::vector<Backend> backends() {
  CompilerConfig gcc;
  gcc.backend = "command";
  // -P: no line markers (they would name the compile's private folder).
  gcc.command = "gcc -E -P -x c {in} -o {out}";
  CompilerConfig nvrtc;
  nvrtc.backend = "nvrtc";
  CompilerConfig opencl;
  opencl.backend = "opencl";
  CompilerConfig hip;
  hip.backend = "hip";
  return {
      {"gcc", "", gcc, "", "int mark = MARK;\n"},
      {"nvrtc", "nvrtc", nvrtc, "compute_80",
       "extern \"C\" __global__ void k(int* x) { x[0] = MARK; }\n"},
      {"opencl", "opencl", opencl, "", "kernel void k(global int* x) { x[0] = MARK; }\n"},
      {"hip", "hip", hip, "gfx906", "extern \"C\" __global__ void k(int* x) { x[0] = MARK; }\n"},
  };
}

// One way of reaching a header: what to write, the request, and an edit
// that must change the binary.
struct Route {
  std::string name;
  // Backends the route exists for (empty: all).
  std::vector<std::string> only;
  std::function<KernelRequest(const TempFolder&, const Backend&)> setup;
  std::function<void(const TempFolder&, KernelRequest&)> edit;
};

std::string mark(int value) { return "#define MARK " + std::to_string(value) + "\n"; }

KernelRequest with(const Backend& backend, const std::string& includes,
                   const std::string& options = {}) {
  KernelRequest request;
  request.source = includes + backend.body;
  request.options = options;
  if (backend.config.backend == "opencl" || backend.config.backend == "nvrtc" ||
      backend.config.backend == "hip") {
    request.kernel_names = {"k"};
  }
  return request;
}

std::vector<Route> routes() {
  auto edit_file = [](std::string path) {
    return [path](const TempFolder& dir, KernelRequest&) { write_file(dir / path, mark(2)); };
  };
  return {
      {"MinusI",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/m.h", mark(1));
         return with(b, "#include \"m.h\"\n", "-Iinc");
       },
       edit_file("inc/m.h")},
      {"IncludeDirs",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "dirs/m.h", mark(1));
         KernelRequest request = with(b, "#include <m.h>\n");
         request.include_dirs = {dir / "dirs"};
         return request;
       },
       edit_file("dirs/m.h")},
      {"AbsoluteName",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "gen/params.h", mark(1));
         return with(b, "#include \"" + (dir / "gen/params.h") + "\"\n");
       },
       edit_file("gen/params.h")},
      {"Nested",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/a.h", "#include \"sub/b.h\"\n");
         write_file(dir / "inc/sub/b.h", mark(1));
         return with(b, "#include <a.h>\n", "-Iinc");
       },
       edit_file("inc/sub/b.h")},
      {"BesideTheIncludingHeader",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/a.h", "#include \"b.h\"\n");
         write_file(dir / "inc/b.h", mark(1));
         write_file(dir / "later/b.h", mark(7));
         return with(b, "#include <a.h>\n", "-Iinc -Ilater");
       },
       edit_file("inc/b.h")},
      {"Shadowed",
       {},
       [](const TempFolder& dir, const Backend& b) {
         std::filesystem::create_directories(dir / "first");
         write_file(dir / "second/m.h", mark(1));
         return with(b, "#include <m.h>\n", "-Ifirst -Isecond");
       },
       edit_file("first/m.h")},  // a new file earlier in the search
      {"SourceFolder",
       {"nvrtc", "opencl"},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "m.h", mark(1));  // the working folder
         return with(b, "#include \"m.h\"\n");
       },
       edit_file("m.h")},
      {"Isystem",
       {"gcc", "hip"},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "sys/m.h", mark(1));
         return with(b, "#include <m.h>\n", "-isystem sys");
       },
       edit_file("sys/m.h")},
      {"Iquote",
       {"gcc", "hip"},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "quote/m.h", mark(1));
         return with(b, "#include \"m.h\"\n", "-iquote quote");
       },
       edit_file("quote/m.h")},
      {"ForcedInclude",
       {"gcc", "hip", "nvrtc"},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "forced/m.h", mark(1));
         return with(b, "", "-include forced/m.h");
       },
       edit_file("forced/m.h")},
      {"PreInclude",
       {"nvrtc"},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/m.h", mark(1));
         return with(b, "", "-Iinc --pre-include=m.h");
       },
       edit_file("inc/m.h")},
      {"AfterAComment",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/m.h", mark(1));
         return with(b, "/* c */ #include \"m.h\"\n", "-Iinc");
       },
       edit_file("inc/m.h")},
      {"LineSplice",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/m.h", mark(1));
         return with(b, "#inc\\\nlude \"m.h\"\n", "-Iinc");
       },
       edit_file("inc/m.h")},
      {"Digraph",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/m.h", mark(1));
         return with(b, "%:include \"m.h\"\n", "-Iinc");
       },
       edit_file("inc/m.h")},
      {"HasInclude",
       {},
       [](const TempFolder& dir, const Backend& b) {
         std::filesystem::create_directories(dir / "inc");
         return with(
             b, "#if __has_include(\"opt.h\")\n#define MARK 2\n#else\n#define MARK 1\n#endif\n",
             "-Iinc");
       },
       [](const TempFolder& dir, KernelRequest&) { write_file(dir / "inc/opt.h", "\n"); }},
      // CCCL's `#define _CCCL_HAS_INCLUDE(_X) __has_include(_X)`, called
      // from an #if: the call tests for the header, not the macro's body.
      {"HasIncludeThroughAMacro",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/cccl.h",
                    "#define WRAP_HAS(_X) __has_include(_X)\n#define MY_HAS WRAP_HAS\n");
         return with(b,
                     "#include \"cccl.h\"\n#if MY_HAS(<opt.h>)\n#define MARK 2\n#else\n"
                     "#define MARK 1\n#endif\n",
                     "-Iinc");
       },
       [](const TempFolder& dir, KernelRequest&) { write_file(dir / "inc/opt.h", "\n"); }},
      {"HasIncludeThroughAnOptionMacro",
       {"gcc", "nvrtc", "hip"},
       [](const TempFolder& dir, const Backend& b) {
         std::filesystem::create_directories(dir / "inc");
         return with(b, "#if WRAP_HAS(<opt.h>)\n#define MARK 2\n#else\n#define MARK 1\n#endif\n",
                     "-Iinc '-DWRAP_HAS(_X)=__has_include(_X)'");
       },
       [](const TempFolder& dir, KernelRequest&) { write_file(dir / "inc/opt.h", "\n"); }},
      {"MacroNamingADiskHeader",
       {},
       [](const TempFolder& dir, const Backend& b) {
         write_file(dir / "inc/m.h", mark(1));
         return with(b, "#define HDR \"m.h\"\n#include HDR\n", "-Iinc");
       },
       edit_file("inc/m.h")},
      {"MemoryHeader",
       {},
       [](const TempFolder&, const Backend& b) {
         KernelRequest request = with(b, "#include \"impl.h\"\n");
         request.headers = {{"impl.h", mark(1)}};
         return request;
       },
       [](const TempFolder&, KernelRequest& request) { request.headers[0].content = mark(2); }},
      {"MemoryHeaderNested",
       {},
       [](const TempFolder&, const Backend& b) {
         KernelRequest request = with(b, "#include \"outer.h\"\n");
         request.headers = {{"outer.h", "#include \"inner.h\"\n"}, {"inner.h", mark(1)}};
         return request;
       },
       [](const TempFolder&, KernelRequest& request) { request.headers[1].content = mark(2); }},
      {"MemoryHeaderThroughAMacro",
       {},
       [](const TempFolder&, const Backend& b) {
         KernelRequest request = with(b, "#define KHDR \"impl.h\"\n#include KHDR\n");
         request.headers = {{"impl.h", mark(1)}};
         return request;
       },
       [](const TempFolder&, KernelRequest& request) { request.headers[0].content = mark(2); }},
      {"MemoryHeaderThroughAnOptionMacro",
       {"gcc", "nvrtc", "hip"},
       [](const TempFolder&, const Backend& b) {
         KernelRequest request = with(b, "#include KHDR\n", "-DKHDR='\"impl.h\"'");
         request.headers = {{"impl.h", mark(1)}};
         return request;
       },
       [](const TempFolder&, KernelRequest& request) { request.headers[0].content = mark(2); }},
      {"MemoryHeaderForced",
       {"nvrtc"},
       [](const TempFolder&, const Backend& b) {
         KernelRequest request = with(b, "", "--pre-include=impl.h");
         request.headers = {{"impl.h", mark(1)}};
         return request;
       },
       [](const TempFolder&, KernelRequest& request) { request.headers[0].content = mark(2); }},
  };
}

// For gtest's messages and ctest's names.
void PrintTo(const Backend& backend, std::ostream* out) { *out << backend.name; }
void PrintTo(const Route& route, std::ostream* out) { *out << route.name; }

// Every backend with every route that exists for it.
std::vector<std::tuple<Backend, Route>> matrix() {
  std::vector<std::tuple<Backend, Route>> all;
  for (const Backend& backend : backends()) {
    for (const Route& route : routes()) {
      if (route.only.empty() ||
          std::find(route.only.begin(), route.only.end(), backend.name) != route.only.end()) {
        all.emplace_back(backend, route);
      }
    }
  }
  return all;
}

std::vector<std::uint8_t> bytes_of(const CachedKernel& kernel) {
  return {kernel.binary().begin(), kernel.binary().end()};
}

class IncludeRoutesTest : public ::testing::TestWithParam<std::tuple<Backend, Route>> {
 protected:
  void SetUp() override {
    const Backend& backend = std::get<0>(GetParam());
    auto made = make_compiler(backend.config);
    if (!made) {
      if (backend.required_as.empty()) GTEST_SKIP() << made.status().message();
      KCACHE_SKIP_OR_FAIL_BACKEND(backend.required_as, made.status().message());
    }
    compiler_ = std::move(*made);
    original_dir_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_.path());
    CacheOptions options;
    options.cache_dir = dir_ / "cache";
    options.read_environment = false;
    options.log_level = LogLevel::kError;
    cache_ = std::move(*Cache::open(options));
    options.disable_cache = true;
    uncached_ = std::move(*Cache::open(options));
  }
  void TearDown() override {
    if (!original_dir_.empty()) std::filesystem::current_path(original_dir_);
  }

  Result<CachedKernel> get(Cache& cache, KernelRequest& request) {
    const Backend& backend = std::get<0>(GetParam());
    if (!backend.target.empty()) request.target = *Target::parse(backend.target);
    return cache.get_or_compile(request, *compiler_);
  }

  TempFolder dir_;
  std::filesystem::path original_dir_;
  std::unique_ptr<Compiler> compiler_;
  std::unique_ptr<Cache> cache_;
  std::unique_ptr<Cache> uncached_;
};

TEST_P(IncludeRoutesTest, AnEditIsNeverServedStale) {
  const auto& [backend, route] = GetParam();
  KernelRequest request = route.setup(dir_, backend);

  auto first = get(*cache_, request);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string() << "\n" << first.status().details();
  EXPECT_EQ(first->tier, TierKind::kCompiled);
  // Three hits: the second reuse of the scan watches its headers
  // (env/change_watch.h), the third is answered by the watch alone, so the
  // edit below meets the watch too.
  for (int hit = 0; hit < 3; ++hit) {
    auto again = get(*cache_, request);
    ASSERT_TRUE(again.is_ok());
    EXPECT_NE(again->tier, TierKind::kCompiled) << "the unchanged request did not hit";
    EXPECT_EQ(bytes_of(*again), bytes_of(*first));
  }

  route.edit(dir_, request);
  auto edited = get(*cache_, request);
  ASSERT_TRUE(edited.is_ok()) << edited.status().to_string() << "\n" << edited.status().details();
  auto fresh = get(*uncached_, request);
  ASSERT_TRUE(fresh.is_ok()) << fresh.status().to_string();
  EXPECT_NE(bytes_of(*fresh), bytes_of(*first)) << "the edit does not change the binary";
  EXPECT_EQ(bytes_of(*edited), bytes_of(*fresh)) << "a stale binary after the edit";
  EXPECT_EQ(edited->tier, TierKind::kCompiled);

  auto repeat = get(*cache_, request);
  ASSERT_TRUE(repeat.is_ok());
  EXPECT_NE(repeat->tier, TierKind::kCompiled) << "the edited request did not hit";
  EXPECT_EQ(bytes_of(*repeat), bytes_of(*fresh));
  EXPECT_EQ(cache_->stats().uncacheable, 0u);
}

std::string param_name(const ::testing::TestParamInfo<std::tuple<Backend, Route>>& info) {
  return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(EveryBackendAndRoute, IncludeRoutesTest, ::testing::ValuesIn(matrix()),
                         param_name);

}  // namespace
}  // namespace kcache
