// The one place where a request becomes key material (docs/design.md §1.1).
// Changing what goes in, or its order, changes every key: bump
// kKeySchemaVersion (format/key_schema.h) and update the goldens (tests/core/key_builder_test.cpp).
#pragma once

#include <kcache/compiler.h>
#include <kcache/key.h>

#include "base/key_digest.h"
#include "env/env.h"
#include "format/key_schema.h"
#include "inputs/file_digests.h"
#include "inputs/scan_memo.h"
#include "inputs/scan_records.h"
#include "key/key_prefixes.h"
#include "key/key_text.h"

namespace kcache {

// The key material of `request` for `compiler` and `target`, serialized
// (KeyMaterial::serialize()) in two parts: what the cache hashes and
// compares on every request, without building the field list. The text
// refers to `request.source`. `inputs`: how the compiler reads files (its
// Compiler::inputs()). `memo` (may be null) makes repeated requests
// cheaper, never different.
//
// Errors: kInvalidArgument for malformed options, an empty source or two
// in-memory headers of one name; kIoError when a header exists but cannot
// be read; kNotSupported when the request cannot be keyed (an option that
// reads what kcache does not model, a header that is not a regular file,
// more headers than the scan's limits): it is compiled, never cached.
// What a cache remembers across requests to key them faster: digests of
// files and texts, and whole scans (each checked against the disk before
// use).
struct KeyMemo {
  FileDigests digests;
  // Scans, by what each was derived from; and whole key text heads, by
  // everything the key was derived from (a request seen before costs a
  // lookup and the scan's check, not the options, search and fields).
  ScanMemo scans;
  ScanMemo heads;
  // The first fields of requests that read no file, by the inputs they
  // were derived from (the options parsed once per option set).
  KeyPrefixes prefixes;
  // The heads kept on disk for later processes (may be null): looked up
  // when `heads` has none, written when a head is kept there.
  std::unique_ptr<ScanRecords> records;
};

// What a key was derived from on disk: the files whose content it holds,
// and every look the scan took (its probes, with the stamps they found).
struct KeyedFiles {
  std::vector<FileId> files;
  std::vector<ScanProbe> probes;
};

// `keyed_files` (may be null) receives what the key was derived from.
Result<KeyText> build_key_text(const KernelRequest& request, const CompilerIdentity& compiler,
                               const CompilerInputs& inputs, const Target& target, const Env& env,
                               KeyMemo* memo = nullptr, KeyedFiles* keyed_files = nullptr);
Result<KeyText> build_key_text(const KernelRequest& request, const Compiler& compiler,
                               const Target& target, const Env& env, KeyMemo* memo = nullptr,
                               KeyedFiles* keyed_files = nullptr);

// The same, as fields.
Result<KeyMaterial> build_key_material(const KernelRequest& request,
                                       const CompilerIdentity& compiler,
                                       const CompilerInputs& inputs, const Target& target,
                                       const Env& env);
// For a generic compiler (CompilerInputs{}).
Result<KeyMaterial> build_key_material(const KernelRequest& request,
                                       const CompilerIdentity& compiler, const Target& target,
                                       const Env& env);

}  // namespace kcache
