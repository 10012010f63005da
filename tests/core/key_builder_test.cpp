// Golden tests pin the key: any change to what goes into it, or to its
// encoding, fails here. If the change is intended, bump kKeySchemaVersion
// and update the goldens in the same commit.
#include "core/key_builder.h"

#include <gtest/gtest.h>

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

TEST(KeyBuilderTest, GoldenMaterialAndDigest) {
  auto material = build_key_material(golden_request(), kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(material.is_ok()) << material.status().to_string();
  EXPECT_EQ(
      material->serialize(),
      "kcache.key 2\n"
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
      "header common.h sha256:4767235cb67f169cad00d920f225a05dcf4a11b3a71b215277b2ecc879ce82f0\n"
      "source 65\n"
      "#include \"common.h\"\nkernel void k(global float* x) { x[0] = X; }\n");
  // Computed apart: the text above in a file, then `xxh128sum` (xxHash's
  // own tool, Debian package xxhash).
  EXPECT_EQ(material->digest().hex(), "04c0f25d36649245a1176c1938001358");
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

// Each input that can change the binary changes the key.
// The hit path's text (fields, then the request's source by reference)
// is the material above: the same key, and it matches that material and
// nothing else.
TEST(KeyBuilderTest, KeyTextIsTheMaterialInTwoParts) {
  const KernelRequest request = golden_request();
  auto text = build_key_text(request, kIdentity, kTarget, Env::posix());
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

TEST(KeyBuilderTest, EveryComponentChangesTheKey) {
  const CacheKey base =
      build_key_material(golden_request(), kIdentity, kTarget, Env::posix())->digest();
  auto key_with = [&](auto change) {
    KernelRequest request = golden_request();
    CompilerIdentity identity = kIdentity;
    Target target = kTarget;
    change(request, identity, target);
    auto material = build_key_material(request, identity, target, Env::posix());
    EXPECT_TRUE(material.is_ok());
    return material->digest();
  };
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&) { r.source += " "; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&) { r.options += " -DC=3"; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&) { r.headers[0].content = "#define X 2\n"; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&) { r.kernel_names = {"k2"}; }));
  EXPECT_NE(base, key_with([](auto&, auto& i, auto&) { i.version = "OpenCL 3.0 PoCL 3.2"; }));
  EXPECT_NE(base, key_with([](auto&, auto& i, auto&) { i.id = "PoCL | gpu"; }));
  EXPECT_NE(base, key_with([](auto&, auto& i, auto&) { i.backend = "command"; }));
  EXPECT_NE(base, key_with([](auto&, auto&, auto& t) { t.arch = "gfx908"; }));
  EXPECT_NE(base, key_with([](auto&, auto&, auto& t) { t.features = "sramecc+:xnack+"; }));
  EXPECT_NE(base, key_with([](auto& r, auto&, auto&) { r.include_dirs = {"/nowhere"}; }));
}

// What must not change the key: option spelling, macro order, unit count
// (it selects the database, see docs/design.md §1), an unused header.
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
  auto key = [&] {
    return build_key_material(request, kIdentity, kTarget, Env::posix())->digest();
  };
  const CacheKey before = key();
  EXPECT_EQ(before, key());
  write_file(dir / "inc/sub/b.h", "#define B 2\n");  // a nested header, reached only through a.h
  const CacheKey after = key();
  EXPECT_NE(before, after);
  // The same header given through include_dirs instead of -I is found too.
  KernelRequest via_dirs = request;
  via_dirs.options.clear();
  via_dirs.include_dirs = {dir / "inc"};
  auto material = build_key_material(via_dirs, kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(material.is_ok());
  EXPECT_NE(material->serialize().find("header sub/b.h sha256:"), std::string::npos);
}

// Headers that ship with the compiler are covered by its version: not
// hashed, not followed; a user header of another name still is.
TEST(KeyBuilderTest, ToolkitHeadersAreNotHashed) {
  TempFolder dir;
  write_file(dir / "toolkit/cuda_fp16.h", "#include \"user.h\"\n");
  write_file(dir / "user/user.h", "one");
  write_file(dir / "user/mine.h", "mine");
  KernelRequest request;
  request.source = "#include <cuda_fp16.h>\n#include <mine.h>\n";
  request.include_dirs = {dir / "toolkit", dir / "user"};
  const std::vector<std::string> toolkit = {dir / "toolkit/"};
  auto material = build_key_material(request, kIdentity, kTarget, Env::posix(), toolkit);
  ASSERT_TRUE(material.is_ok());
  const std::string text = material->serialize();
  EXPECT_EQ(text.find("header cuda_fp16.h"), std::string::npos) << text;
  EXPECT_EQ(text.find("header user.h"), std::string::npos) << text;
  EXPECT_NE(text.find("header mine.h"), std::string::npos) << text;
  write_file(dir / "toolkit/cuda_fp16.h", "changed with the toolkit version");
  EXPECT_EQ(material->digest(),
            build_key_material(request, kIdentity, kTarget, Env::posix(), toolkit)->digest());
}

TEST(KeyBuilderTest, UnreadableIncludeHashesWholeDirs) {
  TempFolder dir;
  write_file(dir / "inc/x.h", "one");
  KernelRequest request;
  request.source = "#define H \"x.h\"\n#include H\nkernel void k() {}\n";
  request.include_dirs = {dir / "inc"};
  auto first = build_key_material(request, kIdentity, kTarget, Env::posix());
  ASSERT_TRUE(first.is_ok());
  EXPECT_NE(first->serialize().find("headers.scan whole-dirs"), std::string::npos);
  write_file(dir / "inc/x.h", "two");
  EXPECT_NE(first->digest(),
            build_key_material(request, kIdentity, kTarget, Env::posix())->digest());
}

TEST(KeyBuilderTest, RejectsBadInput) {
  KernelRequest empty;
  EXPECT_EQ(build_key_material(empty, kIdentity, kTarget, Env::posix()).status().code(),
            StatusCode::kInvalidArgument);
  KernelRequest bad_options = golden_request();
  bad_options.options = "-DA='unterminated";
  EXPECT_EQ(build_key_material(bad_options, kIdentity, kTarget, Env::posix()).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kcache
