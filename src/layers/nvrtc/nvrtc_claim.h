// Which real NVRTC a stand-in serves when the dlsym layer (layers/dlsym/)
// routes a program's lookups on a real NVRTC to it: one per stand-in,
// the first named wins. The dlsym layer holds the claims and exports the
// function below; a stand-in finds it with dlsym(RTLD_DEFAULT) (it is
// absent when the stand-in is preloaded without the dlsym layer).
//
// - The dlsym layer claims the library the program opened (its path) before
//   it hands the program the stand-in's functions: the stand-in then
//   forwards to that one (a wheel's NVRTC may be another build than the
//   system's).
// - A stand-in that found its real library by its own search
//   (real_nvrtc.cpp) claims it, so that a program that later opens
//   another file of that version is told it is not served, not given a
//   stand-in that forwards elsewhere.
#pragma once

namespace kcache::layer {

// claim(soname, proposed): `soname` is the stand-in's ("libnvrtc.so.13");
// a non-null `proposed` path is claimed when nothing is. Returns the claimed
// path (never freed), or nullptr when there is none or the soname has no
// stand-in. Thread-safe and lock-free: it may be called from a dlsym
// inside a library's constructor.
using ClaimNvrtc = const char* (*)(const char* soname, const char* proposed);

inline constexpr const char* kClaimNvrtcSymbol = "kcache_dlsym_layer_claim_nvrtc";

}  // namespace kcache::layer
