#!/usr/bin/env bash
# A package packed on another machine (issue 11): what another machine
# with the same toolkit has is the same files in other places (other
# inodes, times, maybe another prefix). Here that machine is a copy of
# this one's NVRTC (the library and its builtins copied into another
# folder, its toolkit headers reached through another path): a kernel
# compiled with the copy, exported as a package, is a system-tier hit for
# the NVRTC found here, and kcache info says the package applies. Until
# the identity named files by their build-ids (design.md §1.4, "A compiler's
# build"), it named their inodes and times, and no package fitted another
# machine.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

printf 'extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= 3.0f; }\n' >"$T/src/scale.cu"

# This machine's NVRTC, as kcache finds it: its record names the library
# and the toolkit's include folder.
export KCACHE_CUSTOM_CACHE_DIR="$T/here"
compile_raw --backend nvrtc --source src/scale.cu --kernel scale --target sm_80
if ((RC != 0)); then
  grep -q "needs libnvrtc" <<<"$ERR" && skip_backend nvrtc "$ERR"
  fail "compiling with this machine's NVRTC: $ERR"
fi
here_key="$KEY"
record="$(find "$T/here" -name 'nvrtc-*.facts' | head -n 1)"
[[ -n "$record" ]] || fail "no NVRTC record was kept under $T/here"
library="$(sed -n 's/^library //p' "$record")"
toolkit="$(sed -n 's/^toolkit //p' "$record" | head -n 1)"
[[ -f "$library" ]] || fail "the record names no library: $(cat "$record")"

# The other machine: the library and its builtins copied (links kept as
# links), its toolkit folder ("<root>/include") a link to this one's.
other="$T/other-machine/cuda"
mkdir -p "$other/lib"
cp "$library" "$other/lib/"
for builtin in "$(dirname "$library")"/libnvrtc-builtins*.so*; do
  [[ "$builtin" == *.a ]] || cp -P "$builtin" "$other/lib/"
done
[[ -n "$toolkit" ]] && ln -s "$toolkit" "$other/include"
copy="$other/lib/$(basename "$library")"
[[ "$(stat -c %i "$copy")" != "$(stat -c %i "$library")" ]] || fail "the copy is the same file"

export KCACHE_CUSTOM_CACHE_DIR="$T/there"
LD_LIBRARY_PATH="$other/lib" compile_raw --backend nvrtc --nvrtc-library "$copy" \
  --source src/scale.cu --kernel scale --target sm_80 --output out/there.cubin
expect_rc 0
expect_eq "the copy compiles" compiled "$TIER"
expect_eq "the same build, the same key" "$here_key" "$KEY"
mkdir -p "$T/packages"
run export --output "$T/packages"
expect_rc 0
cp "$T/packages/sm_80.kdb" "$T/sys/sm_80.kdb"

# Back on this machine, a fresh user cache: the package serves the kernel.
export KCACHE_CUSTOM_CACHE_DIR="$T/fresh"
compile_raw --backend nvrtc --source src/scale.cu --kernel scale --target sm_80 \
  --output out/here.cubin
expect_rc 0
expect_eq "the package packed elsewhere serves it" system "$TIER"
expect_not_contains "no warning" "is not used for this compiler" "$ERR"
cmp -s "$T/out/there.cubin" "$T/out/here.cubin" || fail "the system tier served other bytes"
run info --json
expect_rc 0
python3 - "$OUT" <<'PY' || fail "kcache info --json: $OUT"
import json, sys
packages = {p["db"]: p for p in json.loads(sys.argv[1])["packages"]}
assert packages["sm_80"]["applies"] is True, packages["sm_80"]
PY

# Another build (the copy's build-id changed) is another toolchain: the
# package it makes does not fit this machine's.
python3 - "$copy" <<'PY' || fail "could not change the copy's build-id"
import struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
for i in range(phnum):
    p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
    at = p_offset
    while p_type == 4 and at + 12 <= p_offset + p_filesz:
        namesz, descsz, kind = struct.unpack_from("<III", data, at)
        desc = at + 12 + ((namesz + 3) & ~3)
        if kind == 3 and data[at + 12:at + 16] == b"GNU\0":
            data[desc] ^= 0xff
            open(path, "wb").write(data)
            sys.exit(0)
        at = desc + ((descsz + 3) & ~3)
sys.exit(1)
PY
export KCACHE_CUSTOM_CACHE_DIR="$T/rebuilt"
LD_LIBRARY_PATH="$other/lib" compile_raw --backend nvrtc --nvrtc-library "$copy" \
  --source src/scale.cu --kernel scale --target sm_80
expect_rc 0
expect_ne "another build, another key" "$here_key" "$KEY"
pass
