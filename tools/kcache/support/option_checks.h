// The checks of command-line options that several commands share: a path
// given empty, the private key to sign with, the public keys packages are
// held to.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kcache::tool {

// The check of an option that names a file or folder: an empty value
// (what "$KEY" gives with KEY unset) is a usage error, never taken as the
// option left out (`--sign ""` would write an unsigned package).
inline CLI::Validator names_a_path() {
  return CLI::Validator(
      [](std::string& value) { return value.empty() ? std::string("is empty") : std::string(); },
      "", "a path");
}

// Checks the private key a --sign or --key option names (before anything
// is compiled or written): 0 when it can sign; else says why, prefixed by
// `option`, and returns 1: a key file that is missing or not a usable key
// is an input that cannot be used, as an unreadable source is, and
// without libsodium signing cannot be done here.
int check_key_option(const std::string& option, const std::string& key_path);

// The keys packages are held to (kcache info PKG, verify PKG): those
// `named` (--trusted), else KCACHE_TRUSTED_KEYS. A named key that cannot
// be used is a usage error (nullopt, said); a configured one a warning.
std::optional<std::vector<std::string>> trusted_keys_to_check(
    const std::vector<std::string>& named);

}  // namespace kcache::tool
