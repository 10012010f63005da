// A KeyMemo makes keying cheaper, never different: whatever it keeps (the
// digests, the scans, whole key heads found by the request, the heads it
// keeps on disk for later processes), a request keyed through it gets the
// text and the key a fresh derivation gives, for every input the key is
// derived from and after every edit. Each test runs twice: with one memo,
// and also through the records of a folder (inputs/scan_records.h) read
// by a fresh memo for each request, as a new process would.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "env/env.h"
#include "fakes/temp_folder.h"
#include "inputs/file_digests.h"
#include "key/key_builder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;
namespace fs = std::filesystem;

struct Keyed {
  std::string text;
  CacheKey key;
  friend bool operator==(const Keyed&, const Keyed&) = default;
};

struct Inputs {
  KernelRequest request;
  CompilerIdentity identity{"nvrtc", "stand-in", "12.4"};
  CompilerInputs compiler;
  Target target{"sm_90", "", 0};
};

class KeyMemoTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam())
      memo_.records =
          std::make_unique<ScanRecords>(records_ / "scans", Env::posix(), [] { return true; });
    write_file(dir_ / "inc/a.h", "#define A 1\n#include \"b.h\"\n");
    write_file(dir_ / "inc/b.h", "#define B 2\n");
    base_.request.source =
        "#include \"a.h\"\nextern \"C\" __global__ void k(float* x) { *x = A; }\n";
    base_.request.options = "-I" + (dir_ / "inc") + " -default-device";
    base_.request.kernel_names = {"k"};
    base_.compiler.dialect = "nvrtc";
  }

  // A scan that read a file changed within a timestamp tick is not kept
  // (ccache's guard; its ctime cannot be set back): waits, on the clock,
  // until every file here is older than that.
  void settle() {
    for (const auto& entry : fs::recursive_directory_iterator(dir_.path())) {
      for (;;) {
        auto stamp = Env::posix().stamp(entry.path().string());
        if (!stamp || !changed_recently(*stamp)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }

  static Keyed keyed(const Inputs& in, KeyMemo* memo) {
    auto text = build_key_text(in.request, in.identity, in.compiler, in.target, Env::posix(), memo);
    EXPECT_TRUE(text.is_ok()) << text.status().to_string();
    if (!text) return {};
    return {text->joined(), text->key()};
  }

  // A memo as a new process's cache makes it, with the records folder.
  std::unique_ptr<KeyMemo> new_process() {
    auto memo = std::make_unique<KeyMemo>();
    memo->records =
        std::make_unique<ScanRecords>(records_ / "scans", Env::posix(), [] { return true; });
    return memo;
  }

  // Through the memo, and alike without one (the key being the digest of
  // the text, as KeyMaterial computes it); with records, also through a
  // new process's memo.
  Keyed memoized(const Inputs& in) {
    const Keyed through = keyed(in, &memo_);
    const Keyed fresh = keyed(in, nullptr);
    EXPECT_EQ(through, fresh) << "the memo keyed a request otherwise";
    if (GetParam()) {
      auto later = new_process();
      EXPECT_EQ(keyed(in, later.get()), fresh) << "a record keyed a request otherwise";
    }
    auto material = KeyMaterial::parse(fresh.text);
    EXPECT_TRUE(material.is_ok());
    if (material) {
      EXPECT_EQ(material->digest(), fresh.key);
    }
    return through;
  }

  // Keys `base_` until the memo answers from its whole heads (the third
  // reuse of a scan is watched).
  Keyed warm() {
    settle();
    Keyed first = memoized(base_);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(memoized(base_), first);
    return first;
  }

  TempFolder dir_;
  TempFolder records_;
  KeyMemo memo_;
  Inputs base_;
};

INSTANTIATE_TEST_SUITE_P(, KeyMemoTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Records" : "InProcess";
                         });

// Each change to one input, with whether it must move the key (some are
// the compiler's own and move the key only through what they make the
// scan find: both ways the memo must key as a fresh derivation does).
TEST_P(KeyMemoTest, EveryInputOfTheKeySeparatesRequests) {
  write_file(dir_ / "first/a.h", "#define A 7\n");
  const std::string first = dir_ / "first";
  const Keyed base = warm();
  struct Change {
    std::string what;
    bool moves_key;
    std::function<void(Inputs&)> apply;
  };
  const std::vector<Change> changes = {
      {"source", true, [](Inputs& in) { in.request.source[in.request.source.size() - 3] = 'B'; }},
      {"option", true, [](Inputs& in) { in.request.options += " -DX=1"; }},
      {"option value", true, [](Inputs& in) { in.request.options += " -arch=sm_80"; }},
      {"kernel name", true, [](Inputs& in) { in.request.kernel_names.push_back("k2"); }},
      {"include dir", true,
       [this](Inputs& in) { in.request.include_dirs.push_back(dir_ / "inc"); }},
      {"memory header", true,
       [](Inputs& in) {
         in.request.headers.push_back({"b.h", "#define B 3\n"});
       }},
      {"arch", true, [](Inputs& in) { in.target.arch = "sm_80"; }},
      {"features", true, [](Inputs& in) { in.target.features = "a"; }},
      {"backend", true, [](Inputs& in) { in.identity.backend = "command"; }},
      {"compiler id", true, [](Inputs& in) { in.identity.id = "other"; }},
      {"compiler version", true, [](Inputs& in) { in.identity.version = "12.5"; }},
      {"environment", true,
       [](Inputs& in) {
         in.compiler.environment.push_back({"NVRTC_X", "1"});
       }},
      {"leading -I that shadows", true,
       [first](Inputs& in) { in.compiler.leading_options.push_back("-I" + first); }},
      {"leading macro", false, [](Inputs& in) { in.compiler.leading_options.push_back("-DY=2"); }},
      {"trailing -I", false,
       [first](Inputs& in) { in.compiler.trailing_options.push_back("-I" + first); }},
      {"toolkit folder", false, [first](Inputs& in) { in.compiler.toolkit_dirs.push_back(first); }},
      {"dialect", false, [](Inputs& in) { in.compiler.dialect = "generic"; }},
      {"harmless option", false,
       [](Inputs& in) { in.compiler.harmless_options.push_back("-default-device"); }},
  };
  for (const auto& change : changes) {
    Inputs variant = base_;
    change.apply(variant);
    Keyed once{};
    // (The files are settled: every variant's scan is kept and reused.)
    for (int i = 0; i < 4; ++i) {
      const Keyed now = memoized(variant);
      if (i == 0) once = now;
      EXPECT_EQ(now, once) << change.what;
    }
    if (change.moves_key) {
      EXPECT_NE(once.key, base.key) << change.what << " left the key";
    }
    EXPECT_EQ(memoized(base_), base) << "after " << change.what;
  }
}

TEST_P(KeyMemoTest, AnEditedHeaderIsKeyedAnew) {
  const Keyed before = warm();
  write_file(dir_ / "inc/b.h", "#define B 3\n");  // same size, watched by now
  const Keyed after = memoized(base_);
  EXPECT_NE(after.key, before.key);
  write_file(dir_ / "inc/b.h", "#define B 2\n");
  EXPECT_EQ(memoized(base_), before);
}

TEST_P(KeyMemoTest, AShadowingHeaderIsKeyedAnew) {
  base_.request.options = "-I" + (dir_ / "first") + " " + base_.request.options;
  fs::create_directories(dir_ / "first");
  const Keyed before = warm();
  write_file(dir_ / "first/b.h", "#define B 9\n");  // inc/a.h finds inc/b.h first
  EXPECT_EQ(memoized(base_), before);
  write_file(dir_ / "first/a.h", "#define A 9\n");  // found before inc/a.h now
  EXPECT_NE(memoized(base_).key, before.key);
}

// What the records are for: a new process keys a request an earlier one
// kept with no header read (one stat per probe instead); without records
// it reads every header again.
TEST_P(KeyMemoTest, ANewProcessReadsNoHeaderOfARequestKeptOnDisk) {
  const Keyed before = warm();
  auto later = GetParam() ? new_process() : std::make_unique<KeyMemo>();
  EXPECT_EQ(keyed(base_, later.get()), before);
  if (GetParam()) {
    EXPECT_EQ(later->digests.reads(), 0u);
  } else {
    EXPECT_EQ(later->digests.reads(), 2u);  // a.h and b.h
  }
  // An edit in between: the record no longer holds, and the new content
  // is read and keyed.
  write_file(dir_ / "inc/b.h", "#define B 3\n");
  auto after = GetParam() ? new_process() : std::make_unique<KeyMemo>();
  EXPECT_NE(keyed(base_, after.get()).key, before.key);
  EXPECT_GT(after->digests.reads(), 0u);
}

// Requests that read no file key through the prefixes a memo keeps by
// their option set (key/key_prefixes.h): every input still separates them,
// in any order, and an option set that makes a search (an -I, a forced
// include, a -D testing for a header) keys as a fresh derivation does.
TEST(KeyPrefixesTest, EveryInputOfAPlainRequestSeparatesRequests) {
  TempFolder dir;
  write_file(dir / "inc/a.h", "#define A 1\n");
  Inputs base;
  base.request.source = "extern \"C\" __global__ void k(float* x) { *x = 1; }\n";
  base.request.options = "-std=c++17 -default-device";
  base.request.kernel_names = {"k"};
  base.compiler.dialect = "nvrtc";
  const std::string inc = dir / "inc";
  using Apply = std::function<void(Inputs&)>;
  const std::vector<std::pair<std::string, Apply>> changes = {
      {"nothing", [](Inputs&) {}},
      {"source", [](Inputs& in) { in.request.source += "// another\n"; }},
      {"source with a directive", [](Inputs& in) { in.request.source += "#define B 2\n"; }},
      {"source with an include",
       [](Inputs& in) { in.request.source = "#include \"a.h\"\n" + in.request.source; }},
      {"option", [](Inputs& in) { in.request.options += " -DX=1"; }},
      {"option order", [](Inputs& in) { in.request.options = "-default-device -std=c++17"; }},
      {"option testing for a header",
       [](Inputs& in) { in.request.options += " -DH=__has_include(<a.h>)"; }},
      {"forced include", [inc](Inputs& in) { in.request.options += " -include " + inc + "/a.h"; }},
      {"-I", [inc](Inputs& in) { in.request.options += " -I" + inc; }},
      {"include dir", [inc](Inputs& in) { in.request.include_dirs.push_back(inc); }},
      {"kernel name", [](Inputs& in) { in.request.kernel_names.push_back("k2"); }},
      {"no kernel name", [](Inputs& in) { in.request.kernel_names.clear(); }},
      {"source name", [](Inputs& in) { in.request.source_name = "k.cu"; }},
      {"memory header",
       [](Inputs& in) {
         in.request.headers.push_back({"a.h", "#define A 3\n"});
       }},
      {"arch", [](Inputs& in) { in.target.arch = "sm_80"; }},
      {"features", [](Inputs& in) { in.target.features = "a"; }},
      {"units", [](Inputs& in) { in.target.units = 132; }},
      {"backend", [](Inputs& in) { in.identity.backend = "command"; }},
      {"compiler id", [](Inputs& in) { in.identity.id = "other"; }},
      {"compiler version", [](Inputs& in) { in.identity.version = "12.5"; }},
      {"environment",
       [](Inputs& in) {
         in.compiler.environment.push_back({"NVRTC_X", "1"});
       }},
      {"leading macro", [](Inputs& in) { in.compiler.leading_options.push_back("-DY=2"); }},
      {"leading -I", [inc](Inputs& in) { in.compiler.leading_options.push_back("-I" + inc); }},
      {"trailing -I", [inc](Inputs& in) { in.compiler.trailing_options.push_back("-I" + inc); }},
      {"toolkit folder", [inc](Inputs& in) { in.compiler.toolkit_dirs.push_back(inc); }},
      {"system folder", [inc](Inputs& in) { in.compiler.system_dirs.push_back(inc); }},
      {"dialect", [](Inputs& in) { in.compiler.dialect = "generic"; }},
      {"harmless option", [](Inputs& in) { in.compiler.harmless_options.push_back("-x"); }},
      {"one option string", [](Inputs& in) { in.compiler.one_option_string = true; }},
      {"include dir with a space", [](Inputs& in) { in.request.include_dirs.push_back("a b"); }},
      {"one option string, include dir with a space",
       [](Inputs& in) {
         in.compiler.one_option_string = true;
         in.request.include_dirs.push_back("a b");
       }},
      {"unfound headers", [](Inputs& in) { in.compiler.owns_unfound_headers = false; }},
  };
  auto fresh = [](const Inputs& in) {
    auto text = build_key_text(in.request, in.identity, in.compiler, in.target, Env::posix());
    return text ? text->joined() + "|" + text->key().hex() : "error: " + text.status().message();
  };
  KeyMemo memo;
  auto through = [&memo](const Inputs& in) {
    auto text =
        build_key_text(in.request, in.identity, in.compiler, in.target, Env::posix(), &memo);
    return text ? text->joined() + "|" + text->key().hex() : "error: " + text.status().message();
  };
  std::vector<std::string> keys;
  // Twice over, forwards then backwards: each prefix is first made, then
  // found, by requests of every other kind in between.
  for (int pass = 0; pass < 4; ++pass) {
    for (std::size_t n = 0; n < changes.size(); ++n) {
      const auto& [what, apply] = changes[pass % 2 == 0 ? n : changes.size() - 1 - n];
      Inputs variant = base;
      apply(variant);
      const std::string expected = fresh(variant);
      EXPECT_EQ(through(variant), expected) << what << ", pass " << pass;
      if (pass == 0) keys.push_back(expected);
    }
  }
  // What a plain key holds moved it; the rest (the units name the
  // database; the compiler's folders, macros and dialect act through what
  // a search finds, and a source that includes nothing finds nothing) left
  // it.
  const std::set<std::string> moving = {"source",
                                        "source with a directive",
                                        "source with an include",
                                        "option",
                                        "option order",
                                        "option testing for a header",
                                        "forced include",
                                        "-I",
                                        "include dir",
                                        "kernel name",
                                        "no kernel name",
                                        "source name",
                                        "arch",
                                        "features",
                                        "backend",
                                        "compiler id",
                                        "compiler version",
                                        "environment",
                                        "include dir with a space",
                                        "one option string, include dir with a space"};
  for (std::size_t n = 1; n < changes.size(); ++n) {
    const std::string& what = changes[n].first;
    if (moving.contains(what)) {
      EXPECT_NE(keys[n], keys[0]) << what << " left the key";
      for (std::size_t m = 1; m < n; ++m) {
        if (moving.contains(changes[m].first)) {
          EXPECT_NE(keys[n], keys[m]) << what;
        }
      }
    } else {
      EXPECT_EQ(keys[n], keys[0]) << what << " moved the key";
    }
  }
}

// A request found by its prefix is still checked as a fresh one is.
TEST(KeyPrefixesTest, AFoundPrefixStillRefusesWhatAFreshKeyRefuses) {
  Inputs in;
  in.request.source = "__kernel void k(__global int* x) { *x = 1; }\n";
  in.request.options = "-cl-std=CL2.0";
  in.compiler.dialect = "opencl";
  KeyMemo memo;
  ASSERT_TRUE(build_key_text(in.request, in.identity, in.compiler, in.target, Env::posix(), &memo));
  Inputs twice = in;
  twice.request.headers = {{"a.h", "1"}, {"./a.h", "2"}};
  auto refused = build_key_text(twice.request, twice.identity, twice.compiler, twice.target,
                                Env::posix(), &memo);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  Inputs escaping = in;
  escaping.request.headers = {{"../a.h", "1"}};
  EXPECT_FALSE(build_key_text(escaping.request, escaping.identity, escaping.compiler,
                              escaping.target, Env::posix(), &memo));
  Inputs no_arch = in;
  no_arch.target.arch.clear();
  EXPECT_FALSE(build_key_text(no_arch.request, no_arch.identity, no_arch.compiler, no_arch.target,
                              Env::posix(), &memo));
}

// More option sets than a memo keeps: the oldest make way, keys unchanged.
TEST(KeyPrefixesTest, MoreOptionSetsThanKeptKeyAlike) {
  KeyMemo memo;
  Inputs in;
  in.request.source = "extern \"C\" __global__ void k() {}\n";
  in.compiler.dialect = "nvrtc";
  const std::size_t sets = 3 * KeyPrefixes::kLimit + 1;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < sets; ++i) {
      in.request.options = "-DN=" + std::to_string(i);
      auto fresh = build_key_text(in.request, in.identity, in.compiler, in.target, Env::posix());
      auto through =
          build_key_text(in.request, in.identity, in.compiler, in.target, Env::posix(), &memo);
      ASSERT_TRUE(fresh && through);
      EXPECT_EQ(through->joined(), fresh->joined()) << i;
      EXPECT_EQ(through->key(), fresh->key()) << i;
    }
  }
}

}  // namespace
}  // namespace kcache
