// Golden tests pin the key: any change to what goes into it, or to its
// encoding, fails here. If the change is intended, bump kKeySchemaVersion
// and update the goldens in the same commit.
#include "key/key_builder.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "env/env.h"
#include "fakes/temp_folder.h"

namespace kcache {
namespace {

using testing::TempFolder;
using testing::write_file;

KernelRequest golden_request() {
  KernelRequest request;
  request.source = "#include \"common.h\"\nkernel void k(global float* x) { x[0] = X; }\n";
  request.kernel_names = {"k"};
  request.options = "-DB=2 -cl-fast-relaxed-math -D A=1";
  request.headers = {{"common.h", "#define X 1\n"}};
  return request;
}

const CompilerIdentity kIdentity{"opencl", "PoCL | cpu", "OpenCL 3.0 PoCL 3.1"};
const Target kTarget{"gfx906", "sramecc+:xnack-", 60};

// A key builder call for `dialect`'s compiler.
Result<KeyMaterial> material_for(const KernelRequest& request, const std::string& dialect,
                                 CompilerInputs inputs = {}) {
  inputs.dialect = dialect;
  return build_key_material(request, kIdentity, inputs, kTarget, Env::posix());
}

CacheKey key_for(const KernelRequest& request, const std::string& dialect = "generic",
                 CompilerInputs inputs = {}) {
  auto material = material_for(request, dialect, std::move(inputs));
  EXPECT_TRUE(material.is_ok()) << material.status().to_string();
  return material.is_ok() ? material->digest() : CacheKey{};
}

TEST(KeyBuilderTest, GoldenMaterialAndDigest) {
  auto material = build_key_material(golden_request(), kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(material.is_ok()) << material.status().to_string();
  EXPECT_EQ(material->serialize(),
            "kcache.key 3\n"
            "entry.format 2\n"
            "backend opencl\n"
            "compiler.id PoCL | cpu\n"
            "compiler.version OpenCL 3.0 PoCL 3.1\n"
            "target.arch gfx906\n"
            "target.features sramecc+:xnack-\n"
            "option -cl-fast-relaxed-math\n"
            "option -DA=1\n"
            "option -DB=2\n"
            "kernel k\n"
            "header common.h memory:common.h "
            "sha256:4767235cb67f169cad00d920f225a05dcf4a11b3a71b215277b2ecc879ce82f0\n"
            "source 65\n"
            "#include \"common.h\"\nkernel void k(global float* x) { x[0] = X; }\n");
  // Computed apart: the text above in a file, then `xxh128sum` (xxHash's
  // own tool, Debian package xxhash).
  EXPECT_EQ(material->digest().hex(), "c89c0a31d5d011540d5143e14d91064d");
}

// The material parses back to the same fields, the source (newlines and
// all) whole in the last one.
TEST(KeyBuilderTest, MaterialRoundTripsWithTheSourceLast) {
  auto material = build_key_material(golden_request(), kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(material.is_ok());
  ASSERT_FALSE(material->fields().empty());
  EXPECT_EQ(material->fields().back().name, "source");
  EXPECT_EQ(material->fields().back().value, golden_request().source);
  auto again = KeyMaterial::parse(material->serialize());
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(*again, *material);
  const std::string text = material->serialize();
  // A source cut short, or longer than its line says, is malformed.
  EXPECT_FALSE(KeyMaterial::parse(text.substr(0, text.size() - 1)).is_ok());
  EXPECT_FALSE(KeyMaterial::parse(text + "x").is_ok());
}

// The hit path's text (fields, then the request's source by reference)
// is the material above: the same key, and it matches that material and
// nothing else.
TEST(KeyBuilderTest, KeyTextIsTheMaterialInTwoParts) {
  const KernelRequest request = golden_request();
  auto text = build_key_text(request, kIdentity, CompilerInputs{}, kTarget, Env::posix());
  ASSERT_TRUE(text.is_ok()) << text.status().to_string();
  auto material = build_key_material(request, kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(material.is_ok());
  const std::string whole = material->serialize();
  EXPECT_EQ(text->joined(), whole);
  EXPECT_EQ(text->key(), material->digest());
  EXPECT_EQ(text->key(), key_of_material(whole));
  EXPECT_TRUE(text->matches(whole));
  EXPECT_FALSE(text->matches(whole.substr(0, whole.size() - 1)));
  EXPECT_FALSE(text->matches(whole + " "));
  EXPECT_FALSE(text->matches(""));
  for (std::size_t at : {std::size_t{0}, whole.size() / 2, whole.size() - 1}) {
    std::string changed = whole;
    changed[at] ^= 1;
    EXPECT_FALSE(text->matches(changed)) << "byte " << at;
  }
  // The source moved across the split still differs.
  std::string shifted = whole;
  shifted.insert(shifted.find("source "), "x");
  shifted.pop_back();
  EXPECT_FALSE(text->matches(shifted));
}

// Each input that can change the binary changes the key.
TEST(KeyBuilderTest, EveryComponentChangesTheKey) {
  const CacheKey base =
      build_key_material(golden_request(), kIdentity, kTarget, Env::posix())->digest();
  auto key_with = [&](auto change) {
    KernelRequest request = golden_request();
    CompilerIdentity identity = kIdentity;
    Target target = kTarget;
    CompilerInputs inputs;
    change(request, identity, target, inputs);
    auto material = build_key_material(request, identity, inputs, target, Env::posix());
    EXPECT_TRUE(material.is_ok());
    return material->digest();
  };
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&, auto&) { r.source += " "; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&, auto&) { r.options += " -DC=3"; }));
  EXPECT_NE(base,
            key_with([](auto& r, auto&, auto&, auto&) { r.headers[0].content = "#define X 2\n"; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&, auto&) { r.kernel_names = {"k2"}; }));
  EXPECT_NE(base,
            key_with([](auto&, auto& i, auto&, auto&) { i.version = "OpenCL 3.0 PoCL 3.2"; }));
  EXPECT_NE(base, key_with([](auto&, auto& i, auto&, auto&) { i.id = "PoCL | gpu"; }));
  EXPECT_NE(base, key_with([](auto&, auto& i, auto&, auto&) { i.backend = "command"; }));
  EXPECT_NE(base, key_with([](auto&, auto&, auto& t, auto&) { t.arch = "gfx908"; }));
  EXPECT_NE(base, key_with([](auto&, auto&, auto& t, auto&) { t.features = "sramecc+:xnack+"; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&, auto&) { r.include_dirs = {"/nowhere"}; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&, auto&) { r.source_name = "kernel.cu"; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&, auto&) { r.source_name = ""; }));
  // A variable the backend says changes its output.
  EXPECT_NE(base, key_with([](auto&, auto&, auto&, auto& in) {
              in.environment = {{"POCL_EXTRA_BUILD_FLAGS", "-DY=1"}};
            }));
}

// What must not change the key: option spelling, macro order, unit count
// (it selects the database, see docs/design.md §1.2), a header nothing
// includes.
TEST(KeyBuilderTest, EquivalentRequestsShareTheKey) {
  const CacheKey base =
      build_key_material(golden_request(), kIdentity, kTarget, Env::posix())->digest();
  KernelRequest reordered = golden_request();
  reordered.options = "-D A=1 -cl-fast-relaxed-math   -DB=2";
  EXPECT_EQ(base, build_key_material(reordered, kIdentity, kTarget, Env::posix())->digest());
  Target other_units = kTarget;
  other_units.units = 64;
  EXPECT_EQ(base,
            build_key_material(golden_request(), kIdentity, other_units, Env::posix())->digest());
  KernelRequest extra_header = golden_request();
  extra_header.headers.push_back({"unused.h", "int unused;"});
  EXPECT_EQ(base, build_key_material(extra_header, kIdentity, kTarget, Env::posix())->digest());
}

TEST(KeyBuilderTest, HeaderOnDiskChangesTheKey) {
  TempFolder dir;
  write_file(dir / "inc/a.h", "#include \"sub/b.h\"\n");
  write_file(dir / "inc/sub/b.h", "#define B 1\n");
  KernelRequest request;
  request.source = "#include <a.h>\nkernel void k() {}\n";
  request.options = "-I" + (dir / "inc");
  for (const char* dialect : {"generic", "nvrtc", "opencl", "gcc", "hiprtc", "nvcc"}) {
    const CacheKey before = key_for(request, dialect);
    EXPECT_EQ(before, key_for(request, dialect)) << dialect;
    write_file(dir / "inc/sub/b.h", std::string("#define B 2 // ") + dialect + "\n");
    EXPECT_NE(before, key_for(request, dialect)) << dialect;  // reached only through a.h
  }
  // The same header given through include_dirs instead of -I is found too.
  KernelRequest via_dirs = request;
  via_dirs.options.clear();
  via_dirs.include_dirs = {dir / "inc"};
  auto material = build_key_material(via_dirs, kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(material.is_ok());
  EXPECT_NE(material->serialize().find("header sub/b.h " + (dir / "inc/sub/b.h") + " sha256:"),
            std::string::npos)
      << material->serialize();
}

// A source named with a folder (NVRTC's program name): its quoted
// includes are looked for in that folder, not the working one.
TEST(KeyBuilderTest, QuotedIncludesOfANamedSourceAreItsFolders) {
  TempFolder dir;
  write_file(dir / "src/local.h", "#define L 1\n");
  KernelRequest request;
  request.source = "#include \"local.h\"\n__global__ void k() {}\n";
  request.source_name = dir / "src/kernel.cu";
  auto material = material_for(request, "nvrtc");
  ASSERT_TRUE(material.is_ok()) << material.status().to_string();
  const std::string text = material->serialize();
  EXPECT_NE(text.find("source.name " + (dir / "src/kernel.cu")), std::string::npos) << text;
  EXPECT_NE(text.find("header local.h " + (dir / "src/local.h") + " sha256:"), std::string::npos)
      << text;
  const CacheKey before = material->digest();
  write_file(dir / "src/local.h", "#define L 2\n");
  EXPECT_NE(before, key_for(request, "nvrtc"));
  // Named without a folder: the working folder's local.h, which is not there.
  request.source_name = "kernel.cu";
  auto unnamed = material_for(request, "nvrtc");
  ASSERT_TRUE(unnamed.is_ok());
  EXPECT_EQ(unnamed->serialize().find(dir / "src/local.h"), std::string::npos);
}

// Headers that ship with the compiler are covered by its identity: not
// hashed, not followed; a user header of another name still is.
TEST(KeyBuilderTest, ToolkitHeadersAreNotHashed) {
  TempFolder dir;
  write_file(dir / "toolkit/cuda_fp16.h", "#include \"user.h\"\n");
  write_file(dir / "user/user.h", "one");
  write_file(dir / "user/mine.h", "mine");
  KernelRequest request;
  request.source = "#include <cuda_fp16.h>\n#include <mine.h>\n";
  request.include_dirs = {dir / "user"};
  CompilerInputs inputs;
  inputs.toolkit_dirs = {dir / "toolkit/"};
  auto material = material_for(request, "nvrtc", inputs);
  ASSERT_TRUE(material.is_ok());
  const std::string text = material->serialize();
  EXPECT_EQ(text.find("header cuda_fp16.h"), std::string::npos) << text;
  EXPECT_EQ(text.find("header user.h"), std::string::npos) << text;
  EXPECT_NE(text.find("header mine.h"), std::string::npos) << text;
  write_file(dir / "toolkit/cuda_fp16.h", "changed with the toolkit version");
  EXPECT_EQ(material->digest(), key_for(request, "nvrtc", inputs));
}

// `#include H` with `#define H "x.h"`: the macro is looked up, and x.h is
// keyed like any include.
TEST(KeyBuilderTest, ComputedIncludeOfAKnownMacroIsResolved) {
  TempFolder dir;
  write_file(dir / "inc/x.h", "one");
  KernelRequest request;
  request.source = "#define H \"x.h\"\n#include H\nkernel void k() {}\n";
  request.include_dirs = {dir / "inc"};
  auto first = material_for(request, "nvrtc");
  ASSERT_TRUE(first.is_ok());
  EXPECT_EQ(first->serialize().find("headers.scan"), std::string::npos);
  EXPECT_NE(first->serialize().find("header x.h " + (dir / "inc/x.h")), std::string::npos);
  write_file(dir / "inc/x.h", "two");
  EXPECT_NE(first->digest(), key_for(request, "nvrtc"));
}

// A computed include kcache cannot settle keys every file the search can
// reach, and every in-memory header, where the compiler also lists what it
// read (gcc, nvcc: depend mode); elsewhere it is not keyed at all.
TEST(KeyBuilderTest, UnsettledComputedIncludeKeysEverything) {
  TempFolder dir;
  write_file(dir / "inc/deep/x.h", "one");
  KernelRequest request;
  request.source = "#define CAT(a, b) a##b\n#include CAT(H, DR)\nkernel void k() {}\n";
  request.include_dirs = {dir / "inc"};
  request.headers = {{"unused.h", "1"}};
  // With a forced include the working folder is searched: it is walked too.
  const auto original = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  struct Back {
    std::filesystem::path to;
    ~Back() { std::filesystem::current_path(to); }
  } back{original};
  auto first = material_for(request, "gcc");
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  const std::string text = first->serialize();
  EXPECT_NE(text.find("headers.scan everywhere"), std::string::npos) << text;
  EXPECT_NE(text.find("header unused.h memory:unused.h"), std::string::npos) << text;
  write_file(dir / "inc/deep/x.h", "two");
  EXPECT_NE(first->digest(), key_for(request, "gcc"));
  for (const char* dialect : {"nvrtc", "opencl", "hiprtc", "generic"}) {
    EXPECT_EQ(material_for(request, dialect).status().code(), StatusCode::kNotSupported) << dialect;
  }
  KernelRequest edited = request;
  edited.headers[0].content = "2";
  EXPECT_NE(key_for(request, "gcc"), key_for(edited, "gcc"));
}

// An empty source is a translation unit like any other (CuPy compiles one
// per option set): keyed, and not the key of a blank one.
TEST(KeyBuilderTest, AnEmptySourceIsKeyed) {
  KernelRequest empty;
  auto keyed = build_key_material(empty, kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(keyed.is_ok()) << keyed.status().to_string();
  KernelRequest blank;
  blank.source = "\n";
  auto other = build_key_material(blank, kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(other.is_ok());
  EXPECT_NE(keyed->digest(), other->digest());
}

TEST(KeyBuilderTest, RejectsBadInput) {
  KernelRequest bad_options = golden_request();
  bad_options.options = "-DA='unterminated";
  EXPECT_EQ(build_key_material(bad_options, kIdentity, kTarget, Env::posix()).status().code(),
            StatusCode::kInvalidArgument);
  // Two in-memory headers of one name: which one a compiler reads differs
  // between backends.
  KernelRequest twice = golden_request();
  twice.headers.push_back({"common.h", "#define X 2\n"});
  EXPECT_EQ(material_for(twice, "nvrtc").status().code(), StatusCode::kInvalidArgument);
  KernelRequest same_file = golden_request();
  same_file.headers.push_back({"./common.h", "#define X 2\n"});
  EXPECT_EQ(material_for(same_file, "opencl").status().code(), StatusCode::kInvalidArgument);
  KernelRequest escaping = golden_request();
  escaping.headers.push_back({"../up.h", ""});
  EXPECT_EQ(material_for(escaping, "gcc").status().code(), StatusCode::kInvalidArgument);
}

// What kcache cannot key is not keyed: such a request is compiled and not
// cached (kNotSupported says why).
TEST(KeyBuilderTest, WhatCannotBeKnownIsNotKeyed) {
  KernelRequest request = golden_request();
  request.options = "-fplugin=./evil.so";
  EXPECT_EQ(material_for(request, "gcc").status().code(), StatusCode::kNotSupported);
  request.options = "--frobnicate /etc/x";
  EXPECT_EQ(material_for(request, "generic").status().code(), StatusCode::kNotSupported);
  CompilerInputs harmless;
  harmless.harmless_options = {"--frobnicate"};
  request.options = "--frobnicate=/etc/x";
  EXPECT_TRUE(material_for(request, "generic", harmless).is_ok());
  // OpenCL gets one option string: a token with a space cannot be passed
  // as itself.
  CompilerInputs one_string;
  one_string.one_option_string = true;
  request.options = "'-DMSG=a b'";
  EXPECT_EQ(material_for(request, "opencl", one_string).status().code(), StatusCode::kNotSupported);
  // A header that is not a regular file.
  KernelRequest fifo;
  fifo.source = "#include \"/dev/null\"\n";
  EXPECT_EQ(material_for(fifo, "gcc").status().code(), StatusCode::kNotSupported);
  // A header found nowhere, for a compiler whose own folders are unknown.
  KernelRequest unfound;
  unfound.source = "#include <surely_nowhere_kcache.h>\n";
  CompilerInputs unknown;
  unknown.owns_unfound_headers = false;
  EXPECT_EQ(material_for(unfound, "generic", unknown).status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(material_for(unfound, "generic").is_ok());
}

}  // namespace
}  // namespace kcache
