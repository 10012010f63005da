// A libsodium.so.23 without libsodium's functions, in a folder of its own:
// with that folder first in LD_LIBRARY_PATH, kcache finds libsodium but
// cannot use it, as on a machine without it (sign/ed25519.cpp loads it at
// run time), so that what cannot check a signature is tested everywhere.
extern "C" int kcache_no_sodium_here() { return 0; }
