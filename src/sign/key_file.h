// Key files for package signatures (docs/formats.md §5): one line each,
//   KEY      kcache-ed25519-private <128 hex digits: seed, then public key>
//   KEY.pub  kcache-ed25519-public <64 hex digits> [comment]
// A private key file must be readable by its owner only (as ssh requires
// of its keys). A key is named by its id: the first 16 hex digits of the
// SHA-256 of its public key.
#pragma once

#include <kcache/status.h>

#include <string>

#include "env/env.h"
#include "sign/ed25519.h"

namespace kcache {

std::string key_id(const Ed25519PublicKey& key);

// kNotFound when absent; kInvalidArgument, naming the file and what is
// wrong with it, when it is not a key of that kind (or, for a private
// key, when others may read it).
Result<Ed25519PublicKey> read_public_key(const std::string& path, const Env& env);
Result<Ed25519SecretKey> read_secret_key(const std::string& path, const Env& env);

// Writes `pair` to `path` (0600) and `path`.pub (0644), each replaced
// atomically; kInvalidArgument when either exists and !overwrite.
Status write_key_pair(const std::string& path, const Ed25519KeyPair& pair, bool overwrite,
                      Env& env);

}  // namespace kcache
