#!/usr/bin/env bash
# package.kernel_package: kcache_add_kernel_package used as an outside
# project uses it (README, "Kernel packages"): kcache installed into a
# temporary prefix, the project in kernel_package/ configured against it
# with only what the README shows (find_package, the function, the macro,
# a contact), one of its kernel packages built, then cpack:
#   - the project's own component still makes its .deb (the macro adds
#     the kernel packages to every component, not in place of them);
#   - the built kernel package's .deb holds /usr/share/kcache/db/<db>.kdb
#     and depends on libkcache0; the unbuilt one makes no (empty) .deb;
#   - its package, unpacked, serves a compile from the system tier;
#   - another library's package for the same target, made with DROP_IN,
#     holds <db>.kdb.d/<its name>.kdb: unpacked beside the first, both
#     serve their kernels, with no warning.
# Exit 0 pass, 1 fail, 125 skip. Environment (set by CTest):
# KCACHE_BUILD_DIR, KCACHE_CMAKE, KCACHE_CPACK, KCACHE_CMAKE_GENERATOR.
set -u
set -o pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PACKAGE_TEST=package.kernel_package
# shellcheck source=tests/install/package_lib.sh
source "$HERE/package_lib.sh"

: "${KCACHE_BUILD_DIR:?KCACHE_BUILD_DIR must name the kcache build folder}"
CMAKE="${KCACHE_CMAKE:-cmake}"
CPACK="${KCACHE_CPACK:-cpack}"
[[ -z "${KCACHE_SANITIZE:-}" ]] || skip "this build uses sanitizers (${KCACHE_SANITIZE}); the package tests run in the normal build"
command -v dpkg-deb >/dev/null || fail_now "dpkg-deb is not installed (apt-get install dpkg)"

for var in $(compgen -e); do
  [[ "$var" == KCACHE_* && "$var" != KCACHE_BUILD_DIR ]] && unset "$var"
done
T="$(mktemp -d "${TMPDIR:-/tmp}/kcache-kernel-package.XXXXXX")" || fail_now "mktemp -d failed"
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/home" "$T/sys" "$T/src"
export HOME="$T/home" XDG_CACHE_HOME="$T/xdg" KCACHE_CUSTOM_CACHE_DIR="$T/cache" KCACHE_SYSTEM_DB_PATH="$T/sys"

step install "$CMAKE" --install "$KCACHE_BUILD_DIR" --prefix "$T/prefix" ||
  fail_now "cmake --install $KCACHE_BUILD_DIR failed (build the kcache and kcache_tool targets first)"
kcache="$T/prefix/bin/kcache"
cp_args=(--backend command --command "cp {in} {out}" --compiler-id test-cp --target gfx906_60)

# A manifest of one kernel, as a program under KCACHE_RECORD writes it.
printf 'kernel void add(global int* a) { a[get_global_id(0)] += 1; }\n' >"$T/src/add.cl"
step record env KCACHE_RECORD="$T/m.jsonl" "$kcache" compile "${cp_args[@]}" \
  --source "$T/src/add.cl" --output "$T/compiled.bin" || fail_now "recording a kernel failed"
printf 'kernel void sub(global int* a) { a[get_global_id(0)] -= 1; }\n' >"$T/src/sub.cl"
step record_other env KCACHE_RECORD="$T/other.jsonl" "$kcache" compile "${cp_args[@]}" \
  --source "$T/src/sub.cl" --output "$T/other.bin" || fail_now "recording the other kernel failed"

generator=()
[[ -n "${KCACHE_CMAKE_GENERATOR:-}" ]] && generator=(-G "$KCACHE_CMAKE_GENERATOR")
step configure "$CMAKE" -S "$HERE/kernel_package" -B "$T/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="$T/prefix" -DMANIFEST="$T/m.jsonl" -DOTHER_MANIFEST="$T/other.jsonl" ||
  fail_now "configuring the outside project failed"
! grep -q "CMake Warning" "$T/configure.log" ||
  failed "configuring the outside project (LANGUAGES NONE) warned: $(cat "$T/configure.log")"
step build "$CMAKE" --build "$T/build" --target mylib-kernels-gfx906 otherlib-kernels-gfx906 ||
  fail_now "building the kernel packages mylib-kernels-gfx906 and otherlib-kernels-gfx906 failed"
step cpack "$CPACK" --config "$T/build/CPackConfig.cmake" -B "$T/debs" || fail_now "cpack failed"

debs="$(cd "$T/debs" && ls ./*.deb 2>/dev/null | tr '\n' ' ')"
own="$(find "$T/debs" -maxdepth 1 -name 'mylib-mylib_*.deb' -print -quit)"
kernels="$(find "$T/debs" -maxdepth 1 -name 'mylib-kernels-gfx906_*.deb' -print -quit)"
[[ -n "$own" ]] || failed "the project's own component made no .deb (made: $debs)"
[[ -n "$kernels" ]] || fail_now "no mylib-kernels-gfx906 .deb (made: $debs)"
[[ -z "$(find "$T/debs" -maxdepth 1 -name 'mylib-unbuilt*.deb' -print -quit)" ]] ||
  failed "a kernel package never built made a .deb (made: $debs)"
grep -q "kernel package mylib-unbuilt-gfx906 left out: not built" "$T/cpack.log" ||
  failed "cpack did not say why mylib-unbuilt-gfx906 was left out: $(cat "$T/cpack.log")"
[[ "$(dpkg-deb -f "$kernels" Depends)" == *"libkcache0 (>="* ]] ||
  failed "mylib-kernels-gfx906 Depends '$(dpkg-deb -f "$kernels" Depends)' lacks libkcache0"
kdb="$(dpkg-deb -c "$kernels" | awk '{print $6}' | grep '^\./usr/share/kcache/db/gfx906_60\.kdb$' || true)"
[[ -n "$kdb" ]] || fail_now "mylib-kernels-gfx906 holds no ./usr/share/kcache/db/gfx906_60.kdb: $(dpkg-deb -c "$kernels")"

# Unpacked, its package serves the kernel from the system tier.
dpkg-deb -x "$kernels" "$T/root" || fail_now "dpkg-deb -x $kernels failed"
KCACHE_SYSTEM_DB_PATH="$T/root/usr/share/kcache/db" KCACHE_CUSTOM_CACHE_DIR="$T/fresh" \
  "$kcache" compile "${cp_args[@]}" --source "$T/src/add.cl" --output "$T/served.bin" --json \
  >"$T/served.json" 2>"$T/served.err" || fail_now "compile against the package failed: $(cat "$T/served.err")"
grep -q '"tier":"system"' "$T/served.json" || failed "not served from the package: $(cat "$T/served.json")"
cmp -s "$T/compiled.bin" "$T/served.bin" || failed "the package's binary differs from the compiled one"

# Another library's package for gfx906_60, a drop-in: unpacked into the
# same root (dpkg would install both: no file is in both), both serve.
other="$(find "$T/debs" -maxdepth 1 -name 'otherlib-kernels-gfx906_*.deb' -print -quit)"
[[ -n "$other" ]] || fail_now "no otherlib-kernels-gfx906 .deb (made: $debs)"
drop_in="$(dpkg-deb -c "$other" | awk '{print $6}' | grep '\.kdb$' || true)"
[[ "$drop_in" == "./usr/share/kcache/db/gfx906_60.kdb.d/otherlib-kernels-gfx906.kdb" ]] ||
  fail_now "otherlib-kernels-gfx906 holds '$drop_in', not the drop-in ./usr/share/kcache/db/gfx906_60.kdb.d/otherlib-kernels-gfx906.kdb"
dpkg-deb -x "$other" "$T/root" || fail_now "dpkg-deb -x $other failed"
for kernel in add:compiled sub:other; do
  KCACHE_SYSTEM_DB_PATH="$T/root/usr/share/kcache/db" KCACHE_CUSTOM_CACHE_DIR="$T/fresh2" \
    "$kcache" compile "${cp_args[@]}" --source "$T/src/${kernel%%:*}.cl" --output "$T/both.bin" \
    --json >"$T/both.json" 2>"$T/both.err" || fail_now "compile of ${kernel%%:*} against both failed"
  grep -q '"tier":"system"' "$T/both.json" ||
    failed "${kernel%%:*} not served from the system tier with both packages: $(cat "$T/both.json")"
  cmp -s "$T/${kernel##*:}.bin" "$T/both.bin" || failed "${kernel%%:*}: the served binary differs"
  [[ ! -s "$T/both.err" ]] || failed "${kernel%%:*} with both packages warned: $(cat "$T/both.err")"
done
((failures == 0)) || exit 1
echo "PASS [$PACKAGE_TEST]"
