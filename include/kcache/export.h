// kcache: symbol visibility. The shared library is built with hidden
// visibility; only what is marked KCACHE_EXPORT is part of its ABI.
#pragma once

#define KCACHE_EXPORT __attribute__((visibility("default")))
