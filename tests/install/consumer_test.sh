#!/usr/bin/env bash
# package.consumer: installs the kcache build into a temporary prefix and
# uses it as an outside project would:
#   1. cmake --install <build dir> --prefix <tmp>/prefix, and the layout;
#   2. the installed kcache tool runs (--version, info, compile);
#   3. consumer/ (find_package(kcache 0.1 CONFIG), kcache::kcache) builds
#      against the prefix and runs;
#   4. consumer.c builds against the C API with `pkg-config --cflags --libs
#      kcache` and runs.
# Exit 0 pass, 1 fail (what was expected vs seen), 125 skip.
# Environment (set by CTest): KCACHE_BUILD_DIR, KCACHE_CMAKE,
# KCACHE_CMAKE_GENERATOR, KCACHE_CXX_COMPILER, KCACHE_C_COMPILER.
set -u
set -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PACKAGE_TEST="${KCACHE_PACKAGE_TEST_NAME:-package.consumer}"
# shellcheck source=tests/install/package_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/package_lib.sh"

: "${KCACHE_BUILD_DIR:?KCACHE_BUILD_DIR must name the kcache build folder}"
BUILD_DIR="$KCACHE_BUILD_DIR"
CMAKE="${KCACHE_CMAKE:-cmake}"
GENERATOR="${KCACHE_CMAKE_GENERATOR:-}"
CXX_COMPILER="${KCACHE_CXX_COMPILER:-c++}"
C_COMPILER="${KCACHE_C_COMPILER:-cc}"
command -v "$CMAKE" >/dev/null || skip "cmake ($CMAKE) is not available"
command -v pkg-config >/dev/null || skip "pkg-config is not installed"
# A sanitized libkcache needs the sanitizer runtime loaded first in every
# program that uses it: not something a consumer of the package does.
[[ -z "${KCACHE_SANITIZE:-}" ]] || skip "this build uses sanitizers (${KCACHE_SANITIZE}); the package test runs in the normal build"
command -v python3 >/dev/null || skip "python3 is not installed"
[[ -f "$BUILD_DIR/cmake_install.cmake" ]] || fail_now "$BUILD_DIR is not a configured kcache build"

for var in $(compgen -e); do
  [[ "$var" == KCACHE_* ]] && unset "$var"
done
T="$(mktemp -d "${TMPDIR:-/tmp}/kcache-package.XXXXXX")" || fail_now "mktemp -d failed"
cleanup() {
  local rc=$?
  if [[ "${KEEP:-0}" == 1 ]]; then echo "kept $T" >&2; else rm -rf "$T"; fi
  exit "$rc"
}
trap cleanup EXIT
mkdir -p "$T/home" "$T/run/sys"
export HOME="$T/home" XDG_CACHE_HOME="$T/xdg"
export KCACHE_CUSTOM_CACHE_DIR="$T/run/tool-cache" KCACHE_SYSTEM_DB_PATH="$T/run/sys"
prefix="$T/prefix"

# --- 1. Install -------------------------------------------------------------
step install "$CMAKE" --install "$BUILD_DIR" --prefix "$prefix" ||
  fail_now "cmake --install $BUILD_DIR --prefix $prefix failed (build the kcache and kcache_tool targets first)"

libkcache="$(find "$prefix" -name 'libkcache.so' \( -type f -o -type l \) | head -n 1)"
[[ -n "$libkcache" ]] || fail_now "no libkcache.so under $prefix; installed: $(cd "$prefix" && find . -type f -o -type l)"
libdir="$(dirname "$libkcache")"
echo "libdir: $libdir"
for f in include/kcache/cache.h include/kcache/c_api.h include/kcache/compiler.h include/kcache/key.h \
  include/kcache/options.h include/kcache/status.h include/kcache/export.h include/kcache/version.h bin/kcache; do
  [[ -f "$prefix/$f" ]] || failed "expected $prefix/$f to be installed"
done
[[ -f "$libdir/cmake/kcache/kcacheConfig.cmake" ]] || failed "expected $libdir/cmake/kcache/kcacheConfig.cmake"
[[ -f "$libdir/cmake/kcache/kcacheConfigVersion.cmake" ]] || failed "expected $libdir/cmake/kcache/kcacheConfigVersion.cmake"
[[ -f "$libdir/pkgconfig/kcache.pc" ]] || failed "expected $libdir/pkgconfig/kcache.pc"
[[ -d "$prefix/share/kcache/db" ]] || failed "expected the system database folder $prefix/share/kcache/db"
if [[ -n "$(find "$prefix" -path '*/include/*' \( -name '*_internal.h' -o -name 'build_config.h' \))" ]]; then
  failed "internal headers were installed: $(find "$prefix" -path '*/include/*' \( -name '*_internal.h' -o -name 'build_config.h' \))"
fi
soname="$(objdump -p "$libkcache" 2>/dev/null | awk '/SONAME/ {print $2}')"
[[ -z "$soname" || -e "$libdir/$soname" ]] || failed "the SONAME $soname of libkcache.so is not installed in $libdir"
version="$(awk -F'"' '/KCACHE_VERSION_STRING/ {print $2}' "$prefix/include/kcache/version.h")"
[[ -n "$version" ]] || failed "no KCACHE_VERSION_STRING in the installed version.h"

# --- 2. The installed tool ---------------------------------------------------
tool="$prefix/bin/kcache"
if out="$(env -u LD_LIBRARY_PATH "$tool" --version 2>&1)"; then
  [[ "$out" == "kcache $version"* ]] || failed "$tool --version: expected 'kcache $version ...', seen '$out'"
  if command -v ldd >/dev/null; then
    resolved="$(env -u LD_LIBRARY_PATH ldd "$tool" | awk '/libkcache\.so/ {print $3}')"
    [[ "$(realpath "$resolved")" == "$(realpath "$libdir")"/* ]] ||
      failed "the installed tool loads libkcache from '$resolved', expected one under $libdir (RPATH)"
  fi
else
  failed "the installed tool does not run without LD_LIBRARY_PATH (its RPATH should find $libdir): $out"
fi
# kcache run finds the OpenCL layer installed beside libkcache, and the
# layer finds libkcache through its own RPATH.
if [[ -f "$libdir/libkcache_opencl_layer.so" ]]; then
  out="$("$tool" run --print-env 2>&1)" || failed "$tool run --print-env failed: $out"
  [[ "$out" == "LD_PRELOAD=$(realpath "$libdir")/libkcache_opencl_layer.so"* ]] ||
    failed "installed kcache run: expected LD_PRELOAD=$libdir/libkcache_opencl_layer.so, seen '$out'"
  out="$("$tool" run -- /bin/sh -c 'exit 7' 2>&1)"
  rc=$?
  ((rc == 7)) || failed "installed kcache run -- sh -c 'exit 7': exit status $rc, expected 7: $out"
  ldd "$libdir/libkcache_opencl_layer.so" | grep -q 'libkcache.so.*not found' &&
    failed "the installed OpenCL layer does not find libkcache (RPATH): $(ldd "$libdir/libkcache_opencl_layer.so")"
elif [[ -f "$BUILD_DIR/src/libkcache_opencl_layer.so" ]]; then
  failed "the OpenCL layer libkcache_opencl_layer.so is built but not installed in $libdir"
fi
# The dlsym layer (programs that open NVRTC or libOpenCL themselves) is
# installed beside libkcache, finds it through its RPATH, and kcache run
# preloads it.
if [[ -f "$BUILD_DIR/src/libkcache_dlsym_layer.so" ]]; then
  [[ -f "$libdir/libkcache_dlsym_layer.so" ]] ||
    failed "the dlsym layer libkcache_dlsym_layer.so is built but not installed in $libdir"
  out="$("$tool" run --print-env 2>&1)"
  [[ "$out" == *"$(realpath "$libdir")/libkcache_dlsym_layer.so"* ]] ||
    failed "installed kcache run does not preload the dlsym layer: '$out'"
  ldd "$libdir/libkcache_dlsym_layer.so" | grep -q 'libkcache.so.*not found' &&
    failed "the installed dlsym layer does not find libkcache (RPATH): $(ldd "$libdir/libkcache_dlsym_layer.so")"
fi
# The NVRTC shim's stand-ins are installed in <libdir>/kcache/nvrtc, find
# libkcache through their RPATH, and kcache run preloads each whose real
# library is here (Debian's libnvrtc.so.11.2 on CI).
for soname in libnvrtc.so.13 libnvrtc.so.12 libnvrtc.so.11.2; do
  built="$BUILD_DIR/src/kcache/nvrtc/$soname"
  [[ -f "$built" ]] || continue
  stand_in="$libdir/kcache/nvrtc/$soname"
  [[ -f "$stand_in" ]] || failed "the NVRTC stand-in $soname is built but not installed in $libdir/kcache/nvrtc"
  ldd "$stand_in" | grep -q 'libkcache.so.*not found' &&
    failed "the installed NVRTC stand-in does not find libkcache (RPATH): $(ldd "$stand_in")"
  if python3 -c 'import ctypes,sys; ctypes.CDLL(sys.argv[1])' "$soname" 2>/dev/null; then
    out="$("$tool" run --print-env 2>&1)"
    [[ "$out" == *"$(realpath "$libdir")/kcache/nvrtc/$soname"* ]] ||
      failed "installed kcache run does not preload the NVRTC stand-in for $soname: '$out'"
  fi
done
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! out="$("$tool" --version 2>&1)"; then
  fail_now "$tool --version fails even with LD_LIBRARY_PATH=$libdir: $out"
fi
# The default system folder of an installed kcache is <prefix>/share/kcache/db.
info="$(env -u KCACHE_SYSTEM_DB_PATH "$tool" info --json 2>&1)" || failed "$tool info --json failed: $info"
enabled="$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["enabled"], d["disabled_reason"])' "$info" 2>&1)"
if [[ "$enabled" == "False built with"* ]]; then
  skip "this kcache build has the cache disabled (${enabled#False })"
fi
seen="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["system_db_path"])' "$info" 2>&1)"
[[ "$seen" == "$(realpath "$prefix/share/kcache/db")" || "$seen" == "$prefix/share/kcache/db" ]] ||
  failed "installed tool: default system_db_path: expected $prefix/share/kcache/db, seen '$seen'"
printf 'kernel void k(global int* a) { a[0] = 1; }\n' >"$T/run/k.cl"
tiers=""
for i in 1 2; do
  out="$("$tool" compile --backend command --command "cp {in} {out}" --compiler-id test-cp \
    --target gfx906_60 --source "$T/run/k.cl" --json 2>"$T/tool-stderr")" ||
    { failed "installed tool: compile $i failed: $(cat "$T/tool-stderr")"; break; }
  tiers+="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["tier"])' "$out") "
done
[[ "$tiers" == "compiled user " ]] || failed "installed tool: tiers of two compiles: expected 'compiled user', seen '$tiers'"

# --- 3. The CMake package ----------------------------------------------------
gen_args=()
[[ -n "$GENERATOR" ]] && gen_args=(-G "$GENERATOR")
if step consumer-configure "$CMAKE" -S "$HERE/consumer" -B "$T/consumer-build" "${gen_args[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$CXX_COMPILER" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF; then
  found="$(sed -n 's/^kcache_DIR:[A-Z]*=//p' "$T/consumer-build/CMakeCache.txt")"
  [[ "$(realpath "$found")" == "$(realpath "$prefix")"/* ]] ||
    failed "find_package(kcache) found '$found', expected the package under $prefix"
  if step consumer-build "$CMAKE" --build "$T/consumer-build" --parallel 1; then
    consumer="$(find "$T/consumer-build" -name kcache_consumer -type f -perm -u+x | head -n 1)"
    mkdir -p "$T/run/cxx/sys"
    if ! out="$("$consumer" "$T/run/cxx" 2>&1)"; then
      failed "the CMake consumer failed: $out"
    else
      echo "$out"
    fi
  else
    failed "the CMake consumer (find_package(kcache 0.1 CONFIG), kcache::kcache) does not build against $prefix"
  fi
else
  failed "the CMake consumer does not configure with -DCMAKE_PREFIX_PATH=$prefix"
fi

# --- 4. pkg-config and the C API ----------------------------------------------
export PKG_CONFIG_PATH="$libdir/pkgconfig"
if ! flags="$(pkg-config --cflags --libs kcache 2>&1)"; then
  failed "pkg-config --cflags --libs kcache with PKG_CONFIG_PATH=$PKG_CONFIG_PATH: $flags"
else
  echo "pkg-config --cflags --libs kcache: $flags"
  pc_ok=1
  # The .pc file may spell the prefix relative to itself (${pcfiledir}/../..):
  # compare the folders it names, not their spelling.
  flag_dir() { # flag_dir -I|-L: the canonical folder of that flag, or ""
    local f
    for f in $flags; do
      if [[ $f == "$1"* ]]; then realpath -m "${f#"$1"}"; return; fi
    done
  }
  [[ "$(flag_dir -I)" == "$(realpath -m "$prefix/include")" ]] ||
    { failed "pkg-config --cflags kcache: expected -I$prefix/include, seen '$flags' (kcache.pc must follow the install prefix, e.g. prefix=\${pcfiledir}/../..)"; pc_ok=0; }
  [[ "$(flag_dir -L)" == "$(realpath -m "$libdir")" ]] ||
    { failed "pkg-config --libs kcache: expected -L$libdir, seen '$flags'"; pc_ok=0; }
  [[ " $flags " == *" -lkcache "* ]] || { failed "pkg-config --libs kcache: expected -lkcache, seen '$flags'"; pc_ok=0; }
  if ((!pc_ok)); then
    # Go on with the prefix the .pc file should have had, to test the C API.
    flags="$(pkg-config --define-variable=prefix="$prefix" --cflags --libs kcache)"
    echo "continuing with: $flags"
  fi
  # shellcheck disable=SC2086
  if step c-consumer-build "$C_COMPILER" -std=c99 -Wall -Wextra -Werror -pedantic "$HERE/consumer.c" \
    -o "$T/c_consumer" $flags; then
    mkdir -p "$T/run/c/sys"
    if out="$("$T/c_consumer" "$T/run/c" compiled 2>&1)"; then
      echo "$out"
      out="$("$T/c_consumer" "$T/run/c" user 2>&1)" || failed "the C consumer, second run (expects tier user): $out"
      echo "$out"
    else
      failed "the C consumer, first run (expects tier compiled): $out"
    fi
  else
    failed "consumer.c does not build with \$(pkg-config --cflags --libs kcache)"
  fi
fi

if ((failures > 0)); then
  echo "FAIL [package.consumer]: $failures check(s) failed" >&2
  exit 1
fi
echo "PASS [package.consumer]"
