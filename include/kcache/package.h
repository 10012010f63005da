// kcache: packages (.kdb), the read-only databases the system tier serves
// (docs/formats.md §2): what one says of itself, joining them, and signing
// them. Signatures are Ed25519, from libsodium loaded at run time: signing
// or checking one needs libsodium installed (kUnavailable otherwise).
#pragma once

#include <kcache/compiler.h>
#include <kcache/export.h>
#include <kcache/status.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kcache {

// Whether `name` can name a database (its files' basename, a package's
// metadata "db"): letters, digits, '_', '-', '.', not first, at most 200.
KCACHE_EXPORT bool valid_db_name(std::string_view name);

// Whether `head`, a file's first bytes (8 are enough), begins as a package
// does: for a tool that must not replace a file that is not one.
KCACHE_EXPORT bool starts_as_package(std::span<const std::uint8_t> head);

// The system folder (KCACHE_SYSTEM_DB_PATH) as the system tier reads it,
// for tools that show or fill it. A database's package is "<db>.kdb";
// other libraries' packages for its target are its drop-ins,
// "<db>.kdb.d/<name>.kdb", regular files of which the tier uses the first
// 64 in the byte order of their names.

// Where the system tier looks for the package of database `db` in
// `folder`: "<folder>/<db>.kdb", or with `drop_in` the drop-in
// "<folder>/<db>.kdb.d/<drop_in>.kdb".
KCACHE_EXPORT std::string system_package_path(const std::string& folder, const std::string& db,
                                              const std::string& drop_in = {});

// A name in the system folder where the tier looks for packages, and
// whether it uses what is there.
struct KCACHE_EXPORT SystemFolderItem {
  // Relative to the folder: "<db>.kdb", "<db>.kdb.d/<file>", or the
  // drop-in folder "<db>.kdb.d" itself when its packages cannot be listed.
  std::string name{};
  std::string path{};  // the folder's path and `name`
  std::string db{};    // the database it is found as (by its name)
  // Whether the tier opens it: a "<db>.kdb", or a drop-in package among
  // the first 64. False when its place alone rules it out: not a regular
  // file, a drop-in past those, a drop-in folder that cannot be listed.
  bool opened = false;
  // Why the tier does not serve from it: its place; or, opened, that it
  // cannot be read, is refused (as PackageInfo::refusal says, under the
  // trusted keys given), or was packed for another database or with
  // another key or entry format (package_unfit_reason with no compiler).
  // Empty when it is used: whether it fits a compiler is asked at each
  // request.
  std::string why_not_used{};
  [[nodiscard]] bool used() const { return why_not_used.empty(); }
};
struct KCACHE_EXPORT SystemFolder {
  // By database, each database's own package first, then its drop-ins
  // and what is named as one, in name order.
  std::vector<SystemFolderItem> items{};
  // Why the folder lists none, when the folder itself is the reason: "no
  // such folder", "not a folder", "cannot list it: <why>" (and, when it
  // can be searched, that the tier still finds a package in it by its
  // name); empty otherwise.
  std::string problem{};
};
// What is in the system folder `folder`, each package opened and judged
// as the system tier would: `trusted_keys` as KCACHE_TRUSTED_KEYS names
// them (.pub files or folders of them); with none, a package is trusted
// for its file's owner and mode. Nothing is written.
KCACHE_EXPORT SystemFolder describe_system_folder(
    const std::string& folder, const std::vector<std::string>& trusted_keys = {});

// What a package (.kdb) says of itself, for `kcache info PKG`: its format,
// kernel count and metadata ("db", "created" (Unix seconds), "producer",
// "key_format", "entry_format", one "compiler" per compiler identity of its
// entries, "<backend> | <id> | <version>"), its signer, and whether the
// system tier would use it. kNotFound when absent, kCorruption when it is
// not a valid .kdb.
struct KCACHE_EXPORT PackageInfo {
  std::string path{};
  std::uint32_t format_version = 0;
  std::uint64_t kernels = 0;
  // With `check_entries`: the entries that fail their checks (checksum,
  // key, and in a signed package the digest it was signed with).
  std::uint64_t bad_entries = 0;
  // Which: each such entry's key (hex) and what fails, in index order.
  std::vector<std::pair<std::string, std::string>> bad_entry_problems{};
  // Of those, the entries whole by their own checksum that are not the
  // ones the package was signed with. The system tier compares an entry
  // with its signed digest only under trusted keys (then it refuses the
  // package whole); without keys it checks each entry's checksum, and
  // serves these.
  std::uint64_t entries_not_as_signed = 0;
  std::vector<std::pair<std::string, std::string>> metadata{};
  // Why another user could have written the file; empty when no one could.
  std::string untrusted{};
  // The id of the key that signed it (16 hex digits); empty when unsigned.
  std::string signer{};
  // Why its signature does not hold; empty when it holds or there is none.
  std::string signature_problem{};
  // Why the system tier would refuse it: under the trusted keys when some
  // are given (unsigned, signed by another key, signature broken, an entry
  // not as signed), else for its file's owner or mode, or a signature
  // that does not hold; empty when it would use it.
  std::string refusal{};
};
// `trusted_keys`: .pub files or folders of them, as KCACHE_TRUSTED_KEYS
// names them (read with read_trusted_keys' rules).
KCACHE_EXPORT Result<PackageInfo> read_package_info(
    const std::string& path, bool check_entries = false,
    const std::vector<std::string>& trusted_keys = {});

// Why the package `info` describes, found as database `db` (its file's
// name), cannot serve `compiler`'s requests: packed for another database,
// key or entry format, or toolchain; empty when it can, or when its
// metadata does not say; a `compiler` with no backend checks the database
// and the formats only. The system tier passes over such a package with
// one warning.
KCACHE_EXPORT std::string package_unfit_reason(const PackageInfo& info, const std::string& db,
                                               const CompilerIdentity& compiler);

// Joins packages of one database (their metadata "db") into a new package
// at `output` (replaced atomically), each key once (the first package's
// copy); entries that fail their checks are left out; signed with the
// private key at `signing_key` when one is named. Returns how many entries
// the new package holds, and counts those left out in `left_out` when
// given. kInvalidArgument when the packages are of different databases.
KCACHE_EXPORT Result<std::uint64_t> merge_packages(const std::vector<std::string>& inputs,
                                                   const std::string& output,
                                                   const std::string& signing_key = {},
                                                   std::uint64_t* left_out = nullptr);

// What merge_packages_reporting did: the entries written, those left out
// (they fail their checks), and the keys a later package holds another
// binary for than the first that has it (kept: the compiler's output
// differs from run to run, or a package was altered), the first named.
struct KCACHE_EXPORT MergeReport {
  std::uint64_t entries = 0;
  std::uint64_t left_out = 0;
  std::uint64_t differing = 0;
  std::string first_differing;  // "<key> in <path>", when differing > 0
};
// merge_packages, with what it found.
KCACHE_EXPORT Result<MergeReport> merge_packages_reporting(const std::vector<std::string>& inputs,
                                                           const std::string& output,
                                                           const std::string& signing_key = {});

// Makes a new key pair: the private key at `path` (mode 0600) and the
// public key at `path`.pub. kInvalidArgument when either exists and
// !overwrite. Returns the key's id.
KCACHE_EXPORT Result<std::string> generate_signing_key(const std::string& path,
                                                       bool overwrite = false);
// Checks that `path` holds a private key that can sign (well formed,
// readable by its owner only, libsodium present); returns its id.
KCACHE_EXPORT Result<std::string> check_signing_key(const std::string& path);
// Signs the package at `path` with the private key at `signing_key`,
// replacing the file atomically (a signature it had is replaced). Refused
// (kCorruption) when an entry fails its checks. Returns the key's id.
KCACHE_EXPORT Result<std::string> sign_package(const std::string& path,
                                               const std::string& signing_key);
// Reads public keys from `paths` (.pub files, or folders whose *.pub files
// are read); returns their ids, or the first problem (a missing, malformed
// or other-writable key file) as kInvalidArgument or kNotFound.
KCACHE_EXPORT Result<std::vector<std::string>> read_trusted_keys(
    const std::vector<std::string>& paths);
// The same read as the system tier reads KCACHE_TRUSTED_KEYS: the ids of
// the keys it would trust, and, apart, each key file or folder it would
// pass over and why (a missing one included), so that a tool judges a
// folder of keys as the tier does.
struct KCACHE_EXPORT TrustedKeyList {
  std::vector<std::string> ids{};
  std::vector<std::string> problems{};
};
KCACHE_EXPORT TrustedKeyList list_trusted_keys(const std::vector<std::string>& paths);

}  // namespace kcache
