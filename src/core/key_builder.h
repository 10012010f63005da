// The one place where a request becomes key material (docs/design.md §1).
// Changing what goes in, or its order, changes every key: bump
// kKeySchemaVersion and update the goldens (tests/core/key_builder_test.cpp).
#pragma once

#include <kcache/compiler.h>
#include <kcache/key.h>

#include "env/env.h"

namespace kcache {

inline constexpr int kKeySchemaVersion = 2;

// The last field of key material: the whole source, written raw
// (append_raw_field).
inline constexpr std::string_view kSourceField = "source";

// The key of serialized key material: its XXH3-128.
CacheKey key_of_material(std::string_view material);

// kInvalidArgument for malformed options or an empty source; kIoError when
// a header exists but cannot be read.
// The same, already serialized (KeyMaterial::serialize()): what the cache
// hashes and compares on every request, without building the field list.
// The text refers to `request.source`.
Result<KeyText> build_key_text(const KernelRequest& request, const CompilerIdentity& compiler,
                               const Target& target, const Env& env,
                               const std::vector<std::string>& toolkit_dirs = {});
// The same for `compiler`, whose toolkit folders are listed only when the
// source can include a header (the hit path).
Result<KeyText> build_key_text(const KernelRequest& request, const Compiler& compiler,
                               const Target& target, const Env& env);

// `toolkit_dirs`: Compiler::toolkit_include_dirs().
Result<KeyMaterial> build_key_material(const KernelRequest& request,
                                       const CompilerIdentity& compiler, const Target& target,
                                       const Env& env,
                                       const std::vector<std::string>& toolkit_dirs = {});

}  // namespace kcache
