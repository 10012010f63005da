// The user tier to a package and back: Cache::export_db and
// Cache::import_package.
#pragma once

#include <kcache/admin.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "env/env.h"
#include "format/compression.h"
#include "store/tier.h"

namespace kcache {

// The entries of `db` in `user` (those of options.keys when set) written
// as a package at `output_path`, with its metadata, signed with
// options.signing_key when named; returns how many.
Result<std::uint64_t> export_user_db(const Tier& user, Env& env, std::string_view db,
                                     const std::string& output_path, const ExportOptions& options);

// The entries of the package at `path` that pass every check, stored in
// `user` (stored with `compression`) in the database its metadata names
// unless it holds them already; returns how many were stored (kCorruption
// when none passes), and counts those that fail in `left_out` when given.
// A package the system tier would refuse for its signature is refused
// whole (kCorruption): under `trusted_keys` (when any) one they do not
// sign, else one whose signature does not hold.
Result<std::uint64_t> import_into_user(Tier& user, const Env& env, const std::string& path,
                                       const std::vector<std::string>& trusted_keys,
                                       Compression compression, std::uint64_t* left_out = nullptr);

}  // namespace kcache
