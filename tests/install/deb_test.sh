#!/usr/bin/env bash
# package.deb: the Debian packages, made and used as a user would:
#   1. builds the PoCL kernel package (kcache-demo-kernels-pocl: the demo
#      run with KCACHE_RECORD, then kcache pack) and runs cpack;
#   2. checks the .debs: names, version, Depends (every library the
#      binaries need is depended on), contents;
#   3. unpacks libkcache0, kcache and kcache-demo-kernels-pocl into a
#      temporary root (dpkg-deb -x: no root privileges, no dpkg database)
#      and runs the installed tool and the demo against it, with no
#      KCACHE_SYSTEM_DB_PATH: every kernel must come from the system tier
#      (the demo's report: tier.system), with no "Missing system database
#      file" warning;
#   4. the same with the packages made for another prefix (/opt/kcache).
# Exit 0 pass, 1 fail, 125 skip (no dpkg-deb or cpack, a sanitizer build,
# or no OpenCL device unless KCACHE_REQUIRE_BACKENDS names opencl).
# Environment (set by CTest): KCACHE_BUILD_DIR, KCACHE_CMAKE, KCACHE_CPACK.
set -euo pipefail

PACKAGE_TEST=package.deb
# shellcheck source=tests/install/package_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/package_lib.sh"
value() { sed -n "s/^$2=//p" "$1"; }

: "${KCACHE_BUILD_DIR:?KCACHE_BUILD_DIR must name the kcache build folder}"
BUILD_DIR="$KCACHE_BUILD_DIR"
CMAKE="${KCACHE_CMAKE:-cmake}"
CPACK="${KCACHE_CPACK:-cpack}"
required="${KCACHE_REQUIRE_BACKENDS:-}"
[[ -z "${KCACHE_SANITIZE:-}" ]] || skip "this build uses sanitizers (${KCACHE_SANITIZE}); the .deb test runs in the normal build"
command -v dpkg-deb >/dev/null || skip "dpkg-deb is not installed (not a Debian system)"
command -v "$CPACK" >/dev/null || skip "cpack ($CPACK) is not available"
[[ -f "$BUILD_DIR/CPackConfig.cmake" ]] || fail_now "$BUILD_DIR has no CPackConfig.cmake (not a configured kcache build)"
demo="$BUILD_DIR/examples/kcache_demo"
[[ -x "$demo" ]] || fail_now "no demo at $demo (KCACHE_BUILD_EXAMPLES and KCACHE_WITH_OPENCL must be on)"
if ! probe="$("$demo" --list-devices 2>&1)"; then
  if [[ ",${required// /}," == *",opencl,"* ]]; then
    fail_now "backend opencl is required (KCACHE_REQUIRE_BACKENDS=$required) but the demo finds no OpenCL device: $probe"
  fi
  skip "no OpenCL device (kcache_demo --list-devices): $probe"
fi

for var in $(compgen -e); do
  [[ "$var" == KCACHE_* && "$var" != KCACHE_REQUIRE_BACKENDS ]] && unset "$var"
done
T="$(mktemp -d "${TMPDIR:-/tmp}/kcache-deb.XXXXXX")"
cleanup() {
  local rc=$?
  if [[ "${KEEP:-0}" == 1 ]]; then echo "kept $T" >&2; else rm -rf "$T"; fi
  exit "$rc"
}
trap cleanup EXIT
# The installed folders must pass the system tier's ownership and mode
# checks (writable by no one else), whatever umask CTest runs with.
umask 022
chmod 0755 "$T"
export HOME="$T/home" XDG_CACHE_HOME="$T/xdg"
mkdir -p "$HOME"

# --- 1. Build the PoCL kernel package, then the .debs -------------------------
start=$SECONDS
step build-kernels "$CMAKE" --build "$BUILD_DIR" --target kcache-demo-kernels-pocl ||
  fail_now "building the target kcache-demo-kernels-pocl failed"
echo "kcache-demo-kernels-pocl built in $((SECONDS - start)) s"
start=$SECONDS
step cpack "$CPACK" --config "$BUILD_DIR/CPackConfig.cmake" -B "$T/debs" || fail_now "cpack failed"
echo "cpack in $((SECONDS - start)) s"

version="$(awk -F'"' '/KCACHE_VERSION_STRING/ {print $2}' "$BUILD_DIR/include/kcache/version.h")"
[[ -n "$version" ]] || fail_now "no KCACHE_VERSION_STRING in $BUILD_DIR/include/kcache/version.h"
deb_of() { # deb_of DIR PACKAGE: the one .deb of PACKAGE in DIR
  local found
  found="$(find "$1" -maxdepth 1 -name "$2_*.deb" -print -quit)"
  [[ -n "$found" ]] || fail_now "no $2_*.deb in $1; made: $(cd "$1" && ls ./*.deb 2>/dev/null | tr '\n' ' ')"
  echo "$found"
}
lib_deb="$(deb_of "$T/debs" libkcache0)"
tool_deb="$(deb_of "$T/debs" kcache)"
dev_deb="$(deb_of "$T/debs" libkcache-dev)"
kernels_deb="$(deb_of "$T/debs" kcache-demo-kernels-pocl)"

# --- 2. What the .debs say and hold -------------------------------------------
field() { dpkg-deb -f "$1" "$2"; }
for deb in "$lib_deb" "$tool_deb" "$dev_deb" "$kernels_deb"; do
  [[ "$(field "$deb" Version)" == "$version-"* ]] ||
    failed "$(basename "$deb"): Version '$(field "$deb" Version)', expected $version-<release>"
done
deb_version="$(field "$lib_deb" Version)"
[[ "$(field "$tool_deb" Depends)" == *"libkcache0 (= $deb_version)"* ]] ||
  failed "kcache Depends '$(field "$tool_deb" Depends)' lacks libkcache0 (= $deb_version)"
[[ "$(field "$dev_deb" Depends)" == *"libkcache0 (= $deb_version)"* ]] ||
  failed "libkcache-dev Depends '$(field "$dev_deb" Depends)' lacks libkcache0 (= $deb_version)"
[[ "$(field "$kernels_deb" Depends)" == *"libkcache0 (>= $version)"* ]] ||
  failed "kcache-demo-kernels-pocl Depends '$(field "$kernels_deb" Depends)' lacks libkcache0 (>= $version)"
contents() { dpkg-deb -c "$1" | awk '{print $6}'; }
contents "$lib_deb" | grep '/lib/libkcache\.so\.[0-9]' >/dev/null || failed "libkcache0 holds no libkcache.so.N"
contents "$lib_deb" | grep '/libexec/kcache/kcache-hip-worker$' >/dev/null || failed "libkcache0 holds no kcache-hip-worker"
if [[ "$(uname -m)" == x86_64 ]]; then  # the NVRTC shims are built there (kcache run preloads them)
  contents "$lib_deb" | grep '/lib/kcache/nvrtc/libnvrtc\.so\.13$' >/dev/null ||
    failed "libkcache0 holds no NVRTC shim (lib/kcache/nvrtc/libnvrtc.so.13)"
fi
contents "$tool_deb" | grep '^\./usr/bin/kcache$' >/dev/null || failed "kcache holds no /usr/bin/kcache"
contents "$tool_deb" | grep '^\./usr/libexec/kcache/libkcache-no-gpu-driver\.so$' >/dev/null ||
  failed "kcache holds no libkcache-no-gpu-driver.so (pack's stand-in for the GPU driver)"
contents "$dev_deb" | grep '/include/kcache/cache\.h$' >/dev/null || failed "libkcache-dev holds no kcache/cache.h"
contents "$dev_deb" | grep '/cmake/kcache/KcacheKernelPackage\.cmake$' ||
  failed "libkcache-dev holds no KcacheKernelPackage.cmake"
kdb="$(contents "$kernels_deb" | grep '^\./usr/share/kcache/db/.*\.kdb$' || true)"
[[ "$(wc -l <<<"$kdb")" == 1 && -n "$kdb" ]] ||
  failed "kcache-demo-kernels-pocl: expected one .kdb in /usr/share/kcache/db, holds: $(contents "$kernels_deb" | tr '\n' ' ')"

# --- 3. Unpacked into a root, used with no configuration -----------------------
# check_root ROOT PREFIX: ROOT holds the three packages under PREFIX.
check_root() {
  local root=$1 prefix=$2 label=$3 tool libdir info seen lib_loaded
  tool="$root$prefix/bin/kcache"
  libdir="$root$prefix/lib"
  [[ -x "$tool" ]] || { failed "$label: no $tool"; return; }
  # The tool finds the library through its RPATH, the library its system
  # folder beside itself.
  if ! info="$(env -u LD_LIBRARY_PATH "$tool" info --json 2>&1)"; then
    failed "$label: $tool info --json failed (without LD_LIBRARY_PATH): $info"
    return
  fi
  seen="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["system_db_path"])' "$info")"
  [[ "$(realpath -m "$seen")" == "$(realpath -m "$root$prefix/share/kcache/db")" ]] ||
    failed "$label: installed tool: system_db_path '$seen', expected $root$prefix/share/kcache/db"
  # The demo against the unpacked library (LD_LIBRARY_PATH comes before the
  # build tree's RUNPATH), a fresh user cache, no KCACHE_SYSTEM_DB_PATH.
  export LD_LIBRARY_PATH="$libdir"
  lib_loaded="$(ldd "$demo" | awk '/libkcache\.so/ {print $3}')"
  [[ "$(realpath "$lib_loaded")" == "$(realpath "$libdir")"/* ]] ||
    failed "$label: the demo loads libkcache from '$lib_loaded', expected one under $libdir"
  export KCACHE_CUSTOM_CACHE_DIR="$T/user-$label"
  local run report
  for run in quick full; do
    report="$T/$label-$run.txt"
    local options=(--report "$report")
    [[ $run == quick ]] && options+=(--quick)
    if ! "$demo" "${options[@]}" >"$T/$label-$run.out" 2>"$T/$label-$run.err"; then
      failed "$label: the demo ($run) failed: $(tail -n 5 "$T/$label-$run.err")"
      continue
    fi
    local kernels system
    kernels="$(value "$report" kernels)"
    system="$(value "$report" tier.system)"
    echo "$label $run: $kernels kernels, system $system, user $(value "$report" tier.user), compiled $(value "$report" tier.compiled), ok $(value "$report" ok)"
    [[ "$kernels" -ge 8 ]] || failed "$label $run: $kernels kernels, want at least 8"
    [[ "$(value "$report" ok)" == "$kernels" ]] || failed "$label $run: not every result is right"
    [[ "$system" == "$kernels" ]] ||
      failed "$label $run: $system of $kernels kernels from the system tier (compiled $(value "$report" tier.compiled), user $(value "$report" tier.user))"
    if grep 'Missing system database file' "$T/$label-$run.err" >/dev/null; then
      failed "$label $run: the demo warned: $(grep 'Missing system database file' "$T/$label-$run.err")"
    fi
    if grep 'kcache: Warning' "$T/$label-$run.err"; then
      failed "$label $run: kcache warned: $(grep 'kcache: Warning' "$T/$label-$run.err")"
    fi
  done
  unset LD_LIBRARY_PATH KCACHE_CUSTOM_CACHE_DIR
}

unpack() { # unpack ROOT DEB...
  local root=$1 deb
  shift
  mkdir -p "$root"
  for deb in "$@"; do
    step "unpack-$(basename "$deb")" dpkg-deb -x "$deb" "$root" || fail_now "dpkg-deb -x $deb failed"
  done
}
unpack "$T/root" "$lib_deb" "$tool_deb" "$kernels_deb"
check_root "$T/root" /usr usr

# The library's dependencies: every library a binary of libkcache0 or kcache
# needs is in a package the Depends name.
if command -v objdump >/dev/null; then
  for pair in "$lib_deb:$T/root/usr/lib/libkcache.so.0" "$lib_deb:$T/root/usr/libexec/kcache/kcache-hip-worker" \
    "$tool_deb:$T/root/usr/bin/kcache" "$tool_deb:$T/root/usr/libexec/kcache/libkcache-no-gpu-driver.so"; do
    deb="${pair%%:*}"
    file="${pair#*:}"
    depends="$(field "$deb" Depends)"
    for needed in $(objdump -p "$file" | awk '/NEEDED/ {print $2}'); do
      [[ "$needed" == libkcache* ]] && continue
      path="$(/sbin/ldconfig -p | awk -v n="$needed" '$1 == n && /x86-64|x86_64/ && !seen {print $NF; seen = 1}')"
      [[ -n "$path" ]] || continue
      owner="$(dpkg -S "$(realpath "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)"
      owner="${owner%%:*}"
      [[ -n "$owner" ]] || continue
      [[ ", $depends," == *", $owner "* || ", $depends," == *", $owner,"* ]] ||
        failed "$(basename "$deb"): $(basename "$file") needs $needed (package $owner), not in Depends '$depends'"
    done
  done
fi

# --- 4. Another prefix ---------------------------------------------------------
step cpack-opt "$CPACK" --config "$BUILD_DIR/CPackConfig.cmake" -B "$T/debs-opt" \
  -D CPACK_PACKAGING_INSTALL_PREFIX=/opt/kcache || fail_now "cpack with CPACK_PACKAGING_INSTALL_PREFIX=/opt/kcache failed"
unpack "$T/root-opt" "$(deb_of "$T/debs-opt" libkcache0)" "$(deb_of "$T/debs-opt" kcache)" \
  "$(deb_of "$T/debs-opt" kcache-demo-kernels-pocl)"
check_root "$T/root-opt" /opt/kcache opt

if ((failures > 0)); then
  echo "FAIL [package.deb]: $failures check(s) failed" >&2
  exit 1
fi
echo "PASS [package.deb]"
