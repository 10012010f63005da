// The signer write_kdb signs a package with, from a private key file.
#pragma once

#include <kcache/status.h>

#include <optional>
#include <string>

#include "env/env.h"
#include "format/kdb_file.h"

namespace kcache {

// kUnavailable without libsodium; the key file's problems as key_file.h
// says them.
Result<KdbSigner> signer_from_key_file(const std::string& path, const Env& env);
// The same for a key that may not be named: nullopt for an empty path.
Result<std::optional<KdbSigner>> optional_signer(const std::string& path, const Env& env);

}  // namespace kcache
