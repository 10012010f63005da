#!/usr/bin/env bash
# package.multiarch: package.consumer's checks (consumer_test.sh) on an
# install whose library folder is two levels deep, lib/<multiarch triplet>
# (Debian's layout, what GNUInstallDirs picks for the /usr prefix): the
# default system folder <prefix>/share/kcache/db, the tool's RPATH, and
# `kcache run` finding the OpenCL layer and the NVRTC stand-ins beside
# libkcache are all relative to it. Configures and builds the libraries and
# the tool alone (no tests, benchmarks or examples) in <build>/multiarch,
# kept so that a rerun is incremental. Built as CMake's "None" type (no
# optimisation, no debug information): what it checks is where files are
# and that they find each other, and a build without -O2 -g takes about half
# the time (a whole second build of the libraries, on CI's two cores).
# Exit 0 pass, 1 fail, 125 skip (a sanitizer build: the package tests run
# in the normal build).
# Environment (set by CTest): KCACHE_BUILD_DIR, KCACHE_SOURCE_DIR,
# KCACHE_CMAKE, KCACHE_CMAKE_GENERATOR, KCACHE_CXX_COMPILER,
# KCACHE_C_COMPILER.
set -euo pipefail

PACKAGE_TEST=package.multiarch
# shellcheck source=tests/install/package_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/package_lib.sh"

: "${KCACHE_BUILD_DIR:?KCACHE_BUILD_DIR must name the kcache build folder}"
: "${KCACHE_SOURCE_DIR:?KCACHE_SOURCE_DIR must name the kcache source folder}"
CMAKE="${KCACHE_CMAKE:-cmake}"
[[ -z "${KCACHE_SANITIZE:-}" ]] || skip "this build uses sanitizers (${KCACHE_SANITIZE}); the package tests run in the normal build"
triplet="$(${KCACHE_C_COMPILER:-cc} -print-multiarch 2>/dev/null || true)"
[[ -n "$triplet" ]] || triplet="$(uname -m)-linux-gnu"
libdir="lib/$triplet"

build="$KCACHE_BUILD_DIR/multiarch"
T="$(mktemp -d "${TMPDIR:-/tmp}/kcache-multiarch.XXXXXX")" || fail_now "mktemp -d failed"
trap 'rm -rf "$T"' EXIT
generator=()
[[ -n "${KCACHE_CMAKE_GENERATOR:-}" ]] && generator=(-G "$KCACHE_CMAKE_GENERATOR")
step configure "$CMAKE" -S "$KCACHE_SOURCE_DIR" -B "$build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_LIBDIR="$libdir" \
  -DCMAKE_CXX_COMPILER="${KCACHE_CXX_COMPILER:-c++}" -DCMAKE_C_COMPILER="${KCACHE_C_COMPILER:-cc}" \
  -DKCACHE_BUILD_TESTS=OFF -DKCACHE_BUILD_BENCHMARKS=OFF -DKCACHE_BUILD_EXAMPLES=OFF ||
  fail_now "configuring $build with CMAKE_INSTALL_LIBDIR=$libdir failed"
step build "$CMAKE" --build "$build" || fail_now "building $build failed"

# The layout itself, before the consumer's checks (which find libkcache
# wherever it is installed).
step install "$CMAKE" --install "$build" --prefix "$T/prefix" || fail_now "cmake --install $build failed"
[[ -e "$T/prefix/$libdir/libkcache.so" ]] ||
  fail_now "libkcache.so is not in $libdir: $(cd "$T/prefix" && find . -name 'libkcache*')"
[[ -d "$T/prefix/$libdir/kcache/nvrtc" || ! -d "$build/src/kcache/nvrtc" ]] ||
  fail_now "the NVRTC stand-ins are not in $libdir/kcache/nvrtc"
[[ -e "$T/prefix/$libdir/libkcache_opencl_layer.so" || ! -e "$build/src/libkcache_opencl_layer.so" ]] ||
  fail_now "the OpenCL layer is not in $libdir"

KCACHE_BUILD_DIR="$build" KCACHE_PACKAGE_TEST_NAME="$PACKAGE_TEST" \
  bash "$(dirname "${BASH_SOURCE[0]}")/consumer_test.sh"
