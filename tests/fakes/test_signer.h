// A fresh Ed25519 key pair and the KdbSigner for it, for tests of signed
// packages (libsodium must be installed: the tests fail, not skip, without).
#pragma once

#include <gtest/gtest.h>

#include "format/kdb_file.h"
#include "sign/ed25519.h"

namespace kcache::testing {

struct TestSigner {
  Ed25519KeyPair pair;
  KdbSigner signer;
};

inline TestSigner make_test_signer() {
  TestSigner made;
  auto pair = ed25519_generate();
  EXPECT_TRUE(pair.is_ok()) << pair.status().to_string();
  if (pair) made.pair = *pair;
  made.signer.public_key = made.pair.public_key;
  made.signer.sign = [secret = made.pair.secret_key](std::span<const std::uint8_t> message) {
    return ed25519_sign(message, secret);
  };
  return made;
}

}  // namespace kcache::testing
