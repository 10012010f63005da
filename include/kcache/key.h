// kcache: targets, requests and cache keys.
//
// A `KernelRequest` says what to compile; a `Target` says for which device.
// kcache turns the pair, plus the compiler's identity, into `KeyMaterial`:
// every input that can change the binary, as named text fields, ending with
// the whole source. The `CacheKey` is the XXH3-128 of that material: an
// index, not an identity. The material is stored with every entry and
// compared byte for byte on every hit, so no key collision, accidental or
// crafted, can serve a wrong binary. Derivation lives in one place
// (src/key/key_builder.cpp) and is pinned by golden tests;
// `docs/design.md` §1.1 says what goes in and why.
#pragma once

#include <kcache/export.h>
#include <kcache/status.h>

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

// A device family to compile for.
//   arch      "sm_90", "gfx906", or a normalized OpenCL device name.
//   features  canonical target features, ':'-separated and sorted by name,
//             e.g. "sramecc+:xnack-"; empty when none.
//   units     compute units (CUs, SMs); 0 when unknown. It selects the
//             database file, not the binary (see docs/design.md §1.2).
struct KCACHE_EXPORT Target {
  std::string arch{};
  std::string features{};
  int units = 0;

  // "<arch>_<units>" when units are known, else "<arch>". Units are always
  // written in decimal (MIOpen's hex counts made its file names miss).
  [[nodiscard]] std::string db_basename() const;
  // "<arch>", the arch-wide database tried after the exact one.
  [[nodiscard]] std::string arch_basename() const { return arch; }
  // "<arch>[:<features>]", e.g. "gfx90a:sramecc+:xnack-".
  [[nodiscard]] std::string id() const;
  // "<arch>[_<units>][:<features>]", e.g. "gfx90a_110:sramecc+:xnack-": the
  // full target, in the form parse() reads back.
  [[nodiscard]] std::string to_string() const;
  [[nodiscard]] bool empty() const { return arch.empty(); }

  // Parses "sm_90", "sm_90_132", "gfx906_60", "gfx90a:xnack-:sramecc+".
  // A trailing "_<digits>" is read as the unit count when what precedes it
  // still holds a digit ("sm_90" is an arch, "sm_90_132" has 132 units).
  // Features are put in canonical order. Fails on an empty or malformed arch.
  static Result<Target> parse(std::string_view text);

  friend bool operator==(const Target&, const Target&) = default;
};

// A header given in memory: `#include "name"` resolves to `content`.
struct KCACHE_EXPORT Header {
  std::string name{};
  std::string content{};
};

// Handles of a freshly built program, given to `KernelRequest::warmup`.
// For OpenCL: cl_context, cl_device_id, cl_program. Borrowed: valid only
// during the call.
struct KCACHE_EXPORT BuiltProgram {
  std::string_view backend;
  void* context = nullptr;
  void* device = nullptr;
  void* program = nullptr;
};

// What to compile.
struct KCACHE_EXPORT KernelRequest {
  // The program text.
  std::string source{};
  // Entry points. For OpenCL they must exist in the program; for NVRTC they
  // are name expressions. Part of the key.
  std::vector<std::string> kernel_names{};
  // Compiler options, one string, split with shell quoting rules.
  std::string options{};
  // Headers given in memory, looked up before the include directories.
  std::vector<Header> headers{};
  // Directories searched for headers on disk; `-I` options are searched too.
  // Every header found there that the source can include is hashed into the
  // key, so editing one never serves a stale binary.
  std::vector<std::string> include_dirs{};
  // The name the source is compiled under, where the compiler takes one
  // (nvrtc: the program name, which __FILE__, debug information and the
  // log show, and whose folder a quoted #include in the source searches).
  // Unset: the backend's own ("kcache_kernel.cu", in the working folder).
  // Part of the key when set; the other backends do not use it.
  std::optional<std::string> source_name{};
  // The device to compile for. Backends that see the device (OpenCL) fill in
  // what is left empty; for the others it must name an arch.
  Target target{};
  // Optional, not part of the key. Called by backends that build a live
  // program (OpenCL) after the build and before its binary is read, so the
  // caller can run the kernels once: PoCL then stores compiled work-group
  // code in the binary, and a later load is ready to launch at once. A
  // non-ok status fails the compile.
  std::function<Status(const BuiltProgram&)> warmup{};
};

// The 16-byte XXH3-128 of serialized key material (canonical byte order).
// Totally ordered; hashable.
class KCACHE_EXPORT CacheKey {
 public:
  static constexpr std::size_t kSize = 16;
  using Bytes = std::array<std::uint8_t, kSize>;

  CacheKey() = default;
  explicit CacheKey(const Bytes& bytes) : bytes_(bytes) {}

  [[nodiscard]] const Bytes& bytes() const { return bytes_; }
  // 32 lower-case hex digits.
  [[nodiscard]] std::string hex() const;
  // The inverse of hex(); nullopt unless `text` is exactly 32 hex digits.
  static std::optional<CacheKey> from_hex(std::string_view text);

  friend auto operator<=>(const CacheKey&, const CacheKey&) = default;

 private:
  Bytes bytes_{};
};

// One named input of the key, e.g. {"target.arch", "gfx906"}.
struct KCACHE_EXPORT KeyField {
  std::string name{};
  std::string value{};
  friend bool operator==(const KeyField&, const KeyField&) = default;
};

// Everything that can change a binary, in a fixed order. The source is the
// last field, "source", whole; headers read from disk appear as their
// SHA-256 (their bytes are not stored).
class KCACHE_EXPORT KeyMaterial {
 public:
  KeyMaterial() = default;
  explicit KeyMaterial(std::vector<KeyField> fields) : fields_(std::move(fields)) {}

  [[nodiscard]] const std::vector<KeyField>& fields() const { return fields_; }
  // The canonical text form, stored with every entry: one "name value" line
  // per field, with '\\', '\n' and '\r' escaped in values, except the
  // field "source", which must be last and is written "source <bytes>\n"
  // followed by its value as is.
  [[nodiscard]] std::string serialize() const;
  // The inverse of serialize(); fails on malformed text.
  static Result<KeyMaterial> parse(std::string_view text);
  // XXH3-128 of serialize().
  [[nodiscard]] CacheKey digest() const;

  friend bool operator==(const KeyMaterial&, const KeyMaterial&) = default;

 private:
  std::vector<KeyField> fields_{};
};

}  // namespace kcache

template <>
struct std::hash<kcache::CacheKey> {
  std::size_t operator()(const kcache::CacheKey& key) const noexcept {
    std::size_t h = 0;
    for (int i = 0; i < 8; ++i) h = (h << 8) | key.bytes()[i];
    return h;  // the key is already a uniform hash
  }
};
