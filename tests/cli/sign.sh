#!/usr/bin/env bash
# Signed packages (issue 11): kcache keygen makes a key pair; pack --sign,
# merge --sign and sign write signed packages; verify --trusted says
# whether a package is signed by a trusted key and intact; with
# KCACHE_TRUSTED_KEYS the system tier serves only such packages, refusing
# the others with one warning each and compiling instead. Bad key files are
# usage errors (exit 2) found before anything is compiled or written.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

# Keys.
mkdir -p "$T/keys"
run keygen --output "$T/keys/release"
expect_rc 0
expect_contains "keygen names the key" "$T/keys/release.pub (key " "$OUT"
expect_eq "private key mode" 600 "$(stat -c %a "$T/keys/release")"
run keygen --output "$T/keys/release"
expect_rc 1
expect_contains "keygen keeps a key" "exists; give --force to replace it" "$ERR"
# A pair is never left half replaced: what is in the way of either half
# is found before either is written; a link is not written through.
cp "$T/keys/release" "$T/keys/release.before"
mkdir -p "$T/keys/blocked" "$T/keys/blocked/k.pub"
cp "$T/keys/release" "$T/keys/blocked/k"
run keygen --output "$T/keys/blocked/k" --force
expect_rc 1
expect_contains "a folder in the .pub's place" "k.pub is a folder" "$ERR"
cmp -s "$T/keys/blocked/k" "$T/keys/release.before" || fail "keygen replaced the private key of a pair it could not write"
ln -s "$T/keys/nowhere" "$T/keys/link"
run keygen --output "$T/keys/link"
expect_rc 1
expect_contains "a link in the key's place" "is a symbolic link" "$ERR"
[[ ! -e "$T/keys/nowhere" ]] || fail "keygen wrote through a link"
rm -r "$T/keys/blocked" "$T/keys/link" "$T/keys/release.before"
run keygen --output ""
expect_rc 2
expect_contains "keygen: an empty --output" "--output is empty" "$ERR"
run keygen --output "$T/keys/other"
expect_rc 0
key_id=$(sed -n 's/^kcache-ed25519-public [0-9a-f]* key \([0-9a-f]*\)$/\1/p' "$T/keys/release.pub")
[[ ${#key_id} == 16 ]] || fail "no key id in $T/keys/release.pub: $(cat "$T/keys/release.pub")"

# A signed package from pack.
export KCACHE_RECORD="$T/m.jsonl"
compile_ok --source src/add.cl --output out/add.bin
compile_ok --source src/mul.cl --output out/mul.bin
unset KCACHE_RECORD
mkdir -p "$T/pkg"
before_pack="$(snapshot "$T/pkg")"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg/gfx906_60.kdb" --sign "$T/keys/absent"
expect_rc 1
expect_contains "a missing key is said" "--sign: " "$ERR"
chmod 644 "$T/keys/release"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg/gfx906_60.kdb" --sign "$T/keys/release"
expect_rc 1
expect_contains "a key others can read is refused" "chmod 600" "$ERR"
chmod 600 "$T/keys/release"
expect_eq "nothing compiled or written for a bad key" "$before_pack" "$(snapshot "$T/pkg")"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg/gfx906_60.kdb" --sign "$T/keys/release"
expect_rc 0
expect_contains "pack says it signed" "; signed)" "$OUT"
signed="$T/pkg/gfx906_60.kdb"

run info "$signed" --json
expect_rc 0
python3 - "$OUT" "$key_id" <<'PY' || fail "kcache info of a signed package: $OUT"
import json, sys
info = json.loads(sys.argv[1])[0]
assert info["signer"] == sys.argv[2], info
assert info["signature_ok"] is True, info
assert info["kernels"] == 2, info
PY

run verify "$signed" --trusted "$T/keys/release.pub"
expect_rc 0
expect_contains "verify: signed and trusted" "ok, 2 kernels, signed by key $key_id, trusted" "$OUT"
# --trusted takes one key each time: packages may follow it.
run verify --trusted "$T/keys/release.pub" "$signed"
expect_rc 0
expect_contains "packages after --trusted" "ok, 2 kernels, signed by key $key_id, trusted" "$OUT"
run verify "$signed" --trusted "$T/keys/other.pub"
expect_rc 1
expect_contains "verify: another key" "signed by key $key_id, which is not a trusted key" "$OUT"
run verify "$signed" --trusted "$T/keys/missing.pub"
expect_rc 1
# A folder of keys is judged as KCACHE_TRUSTED_KEYS is: a file in it that
# is no key is said and passed over (it stopped verify, while the tier
# used the folder's good key).
mkdir -p "$T/keydir"
cp "$T/keys/release.pub" "$T/keydir/"
printf 'junk\n' >"$T/keydir/old.pub"
run verify "$signed" --trusted "$T/keydir"
expect_rc 0
expect_contains "verify --trusted DIR: the good key counts" "ok, 2 kernels, signed by key $key_id, trusted" "$OUT"
expect_contains "and the junk is said" "warning: --trusted: Trusted key file $T/keydir/old.pub is not used" "$ERR"
run verify --trusted "$T/keys/release.pub"
expect_rc 2

# Tampering: the signature, and an entry swapped for one with a valid
# checksum of its own (only the signed digest tells).
python3 - "$signed" "$T/pkg/bad-signature.kdb" <<'PY' || fail "could not damage a signature"
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[-5] ^= 0x01
open(sys.argv[2], "wb").write(data)
PY
run verify "$T/pkg/bad-signature.kdb" --trusted "$T/keys/release.pub"
expect_rc 1
expect_contains "verify: altered signature" "does not match its contents" "$OUT"
# Under another key: the broken signature alone, not a signer it names
# but does not prove.
run verify "$T/pkg/bad-signature.kdb" --trusted "$T/keys/other.pub"
expect_rc 1
expect_contains "verify: altered signature, another key" "does not match its contents" "$OUT"
expect_not_contains "no unproven signer named" "signed by key" "$OUT"
run verify "$T/pkg/bad-signature.kdb"
expect_rc 1

# sign signs a file in place, never through a link (which it would
# replace by a signed copy, the file it names left unsigned).
ln -s "$T/pkg/gfx906_60.kdb" "$T/pkg/link.kdb"
before="$(snapshot "$T/pkg")"
run sign "$T/pkg/link.kdb" --key "$T/keys/other"
expect_rc 1
expect_contains "sign refuses a link" "is a symbolic link" "$ERR"
expect_eq "nothing signed through a link" "$before" "$(snapshot "$T/pkg")"
[[ -L "$T/pkg/link.kdb" ]] || fail "sign replaced the link"
rm "$T/pkg/link.kdb"

# install takes only what the system tier would use: not a broken
# signature, and under trusted keys not an unsigned package nor one signed
# by another key; what was installed stays.
mkdir -p "$T/inst"
KCACHE_TRUSTED_KEYS="$T/keys/release.pub" run install "$signed" --prefix "$T/inst"
expect_rc 0
installed="$(snapshot "$T/inst")"
run install "$T/pkg/bad-signature.kdb" --prefix "$T/inst"
expect_rc 1
expect_contains "install: a broken signature" "its signature does not hold" "$ERR"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg-other/gfx906_60.kdb" \
  --sign "$T/keys/other"
expect_rc 0
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg-unsigned/gfx906_60.kdb"
expect_rc 0
for package in "$T/pkg-other/gfx906_60.kdb" "$T/pkg-unsigned/gfx906_60.kdb"; do
  KCACHE_TRUSTED_KEYS="$T/keys/release.pub" run install "$package" --prefix "$T/inst"
  expect_rc 1
  expect_contains "install under trusted keys: $package" "(KCACHE_TRUSTED_KEYS is set); not installed" "$ERR"
done
expect_eq "what was installed stays" "$installed" "$(snapshot "$T/inst")"

# import lets in only what the system tier would serve: the user cache
# serves with no signature left to check.
export KCACHE_CUSTOM_CACHE_DIR="$T/cache-import"
run import "$T/pkg/bad-signature.kdb"
expect_rc 1
expect_contains "import: a broken signature" "its signature does not match its contents (altered after signing, or forged); not imported" "$ERR"
for package in "$T/pkg-other/gfx906_60.kdb" "$T/pkg-unsigned/gfx906_60.kdb"; do
  KCACHE_TRUSTED_KEYS="$T/keys/release.pub" run import "$package"
  expect_rc 1
  expect_contains "import under trusted keys: $package" "(KCACHE_TRUSTED_KEYS is set); not imported" "$ERR"
done
run list
expect_not_contains "nothing imported" "gfx906_60" "$OUT"
KCACHE_TRUSTED_KEYS="$T/keys/release.pub" run import "$signed"
expect_rc 0
expect_contains "import under trusted keys: signed by one" "imported 2 entries" "$OUT"
run list
expect_contains "what was imported is listed" "gfx906_60" "$OUT"
run import "$T/pkg-unsigned/gfx906_60.kdb"
expect_rc 0
export KCACHE_CUSTOM_CACHE_DIR="$T/cache"

# An unsigned package of the same kernels, for the system tier below.
run export --output "$T/pkg/unsigned.kdb"
expect_rc 0
run verify "$T/pkg/unsigned.kdb" --trusted "$T/keys/release.pub"
expect_rc 1
expect_contains "verify: unsigned" "it is not signed" "$OUT"
run verify "$T/pkg/unsigned.kdb"
expect_rc 0
expect_contains "verify without keys: intact" "ok, 2 kernels, not signed" "$OUT"

# kcache sign signs one in place; merge --sign a joined one.
cp "$T/pkg/unsigned.kdb" "$T/pkg/later.kdb"
run sign "$T/pkg/later.kdb" --key "$T/keys/other"
expect_rc 0
run verify "$T/pkg/later.kdb" --trusted "$T/keys/other.pub"
expect_rc 0
run merge "$T/pkg/unsigned.kdb" "$signed" -o "$T/pkg/merged.kdb" --sign "$T/keys/release"
expect_rc 0
run verify "$T/pkg/merged.kdb" --trusted "$T/keys/release.pub" --trusted "$T/keys/other.pub"
expect_rc 0
run sign "$T/pkg/bad-signature.kdb" --key "$T/keys/nope"
expect_rc 1
# A script (mode 0755) named as the key: not a key, said first; not a
# private key others can read, which chmod would not mend.
printf '#!/bin/sh\necho hello\n' >"$T/script.sh"
chmod 755 "$T/script.sh"
run sign "$signed" --key "$T/script.sh"
expect_rc 1
expect_contains "a script as the key" "$T/script.sh is not a kcache private key file" "$ERR"
expect_not_contains "a script is no key others can read" "others can read" "$ERR"
# The public key named where the private one belongs: said as such.
run sign "$signed" --key "$T/keys/release.pub"
expect_rc 1
expect_contains "a public key to sign with" "is a public key; signing takes the private key ($T/keys/release," "$ERR"

# The system tier under KCACHE_TRUSTED_KEYS, from a fresh user cache each time.
check_tier() {  # check_tier NAME PACKAGE EXPECTED_TIER WARNING
  rm -f "$T/sys/"*.kdb
  cp "$2" "$T/sys/gfx906_60.kdb"
  export KCACHE_CUSTOM_CACHE_DIR="$T/cache-$1"
  compile_ok --source src/add.cl --output "out/$1.bin"
  expect_eq "$1: tier" "$3" "$TIER"
  cmp -s out/add.bin "out/$1.bin" || fail "$1: the binary differs"
  if [[ -n "$4" ]]; then
    expect_contains "$1: warning" "$4" "$ERR"
    expect_eq "$1: one warning" 1 "$(grep -c 'Warning' <<<"$ERR")"
  else
    expect_not_contains "$1: no warning" "Warning" "$ERR"
  fi
}
export KCACHE_TRUSTED_KEYS="$T/keys/release.pub"
check_tier signed "$signed" system ""
check_tier unsigned "$T/pkg/unsigned.kdb" compiled "is not used: it is not signed"
check_tier other-key "$T/pkg/later.kdb" compiled "which is not a trusted key"
check_tier altered "$T/pkg/bad-signature.kdb" compiled "does not match its contents"
export KCACHE_TRUSTED_KEYS="$T/keys"  # a folder of .pub files
check_tier folder "$T/pkg/later.kdb" system ""
# A signed package in a folder others can write in is served under keys.
chmod 1777 "$T/sys"
check_tier open-folder "$signed" system ""
unset KCACHE_TRUSTED_KEYS
check_tier open-folder-no-keys "$signed" compiled "another user could have written it"
chmod 755 "$T/sys"
# Without keys a signed package is still held to its signature: one
# altered after signing is refused, and info does not call it trusted.
check_tier altered-no-keys "$T/pkg/bad-signature.kdb" compiled "does not match its contents"
check_tier signed-no-keys "$signed" system ""
run info "$T/pkg/bad-signature.kdb"
expect_contains "info: the key a broken signature names is not confirmed" "BROKEN (it names key $key_id)" "$OUT"
run info "$T/pkg/bad-signature.kdb" --json
python3 -c 'import json,sys; i=json.loads(sys.argv[1])[0]; assert i["trusted"] is False and i["signature_ok"] is False, i' "$OUT" ||
  fail "info calls a package with a broken signature trusted: $OUT"
# An entry changed after signing, its own checksum made anew: the
# signature still holds, and only the entry's signed digest tells. With no
# trusted keys the system tier checks checksums, not signed digests: info
# says what it checks and that it would serve that entry (it said
# "signature holds", "trusted yes", and the entry "never served").
python3 - "$signed" "$T/pkg/not-as-signed.kdb" <<'PY' || fail "could not alter an entry"
import ctypes, struct, sys
xxh = ctypes.CDLL("libxxhash.so.0")
class H128(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64)]
xxh.XXH3_128bits.restype = H128
xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
data = bytearray(open(sys.argv[1], "rb").read())
index = struct.unpack_from("<Q", data, 24)[0]
offset, size = struct.unpack_from("<QQ", data, index + 16)
entry = data[offset:offset + size]
assert entry[:4] == b"KCEN" and entry[6] == 0, "an uncompressed entry"
entry[-1] ^= 0x01  # the payload's last byte
covered = bytes(entry[0:72]) + bytes(entry[88:])
h = xxh.XXH3_128bits(covered, len(covered))
entry[72:88] = struct.pack(">QQ", h.hi, h.lo)
data[offset:offset + size] = entry
open(sys.argv[2], "wb").write(data)
PY
run info "$T/pkg/not-as-signed.kdb"
expect_rc 0
expect_contains "info, an entry not as signed: the entries" "1 of its 2 entries is not as signed (served all the same: without trusted keys the system tier checks each entry's checksum, not its signed digest)" "$OUT"
expect_contains "info, an entry not as signed: the signature" "by key $key_id (the signature holds, but 1 of its 2 entries is not as signed)" "$OUT"
expect_contains "info, an entry not as signed: what trusted means" "yes, by its file's owner and mode alone: no trusted keys are set (KCACHE_TRUSTED_KEYS), so the system tier checks its signature once, not each entry against it, and would serve the 1 entry not as signed" "$OUT"
expect_not_contains "info, an entry not as signed: not never served" "never served" "$OUT"
run info "$T/pkg/not-as-signed.kdb" --json
json_vars "$OUT" nas=0.entries_not_as_signed keys_set=0.trusted_keys_set
expect_eq "info --json: entries not as signed" 1 "$nas"
expect_eq "info --json: no trusted keys" false "$keys_set"
KCACHE_TRUSTED_KEYS="$T/keys/release.pub" run info "$T/pkg/not-as-signed.kdb"
expect_contains "info under keys, an entry not as signed: refused whole" "(the system tier refuses the package whole)" "$OUT"
expect_contains "info under keys, an entry not as signed: not trusted" "no: it was altered after it was signed" "$OUT"
run info "$signed"
expect_contains "info of a signed package, no keys: what is checked" "yes, by its file's owner and mode alone: no trusted keys are set (KCACHE_TRUSTED_KEYS), so the system tier checks its signature once, not each entry against it" "$OUT"
KCACHE_TRUSTED_KEYS="$T/keys/release.pub" run info "$signed"
expect_contains "info of a signed package under keys" "yes: signed by a trusted key" "$OUT"

# A broken key file: every package refused, said once each.
printf 'garbage\n' >"$T/keys/broken.pub"
export KCACHE_TRUSTED_KEYS="$T/keys/broken.pub"
rm -f "$T/sys/"*.kdb
cp "$signed" "$T/sys/gfx906_60.kdb"
export KCACHE_CUSTOM_CACHE_DIR="$T/cache-broken-key"
compile_ok --source src/add.cl --output out/broken.bin
expect_eq "broken key: tier" compiled "$TIER"
expect_contains "broken key: said" "Trusted key file $T/keys/broken.pub is not used" "$ERR"
expect_contains "broken key: the package's refusal says no key could be used" "and no trusted key could be used" "$ERR"
run verify
expect_rc 1
# Set, yet naming no key (what "$KEYS:" gives with KEYS unset): refused
# all the same, never trust switched off.
export KCACHE_TRUSTED_KEYS=":"
export KCACHE_CUSTOM_CACHE_DIR="$T/cache-no-key"
compile_ok --source src/add.cl --output out/no-key.bin
expect_eq "no key named: tier" compiled "$TIER"
expect_contains "no key named: said" "names no key file" "$ERR"
# Blank is set too (an audit's ' ' served the package, and info showed
# the default).
export KCACHE_TRUSTED_KEYS=" "
export KCACHE_CUSTOM_CACHE_DIR="$T/cache-blank-key"
compile_ok --source src/add.cl --output out/blank-key.bin
expect_eq "blank keys: tier" compiled "$TIER"
expect_contains "blank keys: said" "names no key file" "$ERR"
run info
expect_contains "blank keys: info shows where it came from" "env KCACHE_TRUSTED_KEYS" "$OUT"
unset KCACHE_TRUSTED_KEYS

# pack --from-cache takes what the user cache holds instead of compiling.
export KCACHE_CUSTOM_CACHE_DIR="$T/cache"
run pack --manifest "$T/m.jsonl" --target gfx906_60 --output "$T/pkg/from-cache.kdb" --from-cache
expect_rc 0
expect_contains "from the user cache" "(0 compiled, 0 already in $T/pkg/from-cache.kdb.pack, 2 from the user cache" "$OUT"
run verify "$T/pkg/from-cache.kdb"
expect_rc 0

# Where libsodium cannot be used, a signed package's signature cannot be
# checked: import lets none of it in, as install does (its entries'
# signed digests would vouch for nothing).
[[ -d "${NO_SODIUM_DIR:-}" ]] || fail "NO_SODIUM_DIR must name the folder of the unusable libsodium"
export KCACHE_CUSTOM_CACHE_DIR="$T/no-sodium-cache"
LD_LIBRARY_PATH="$NO_SODIUM_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run import "$signed"
expect_rc 1
expect_contains "import without libsodium" "cannot be checked" "$ERR"
expect_contains "nothing imported" "not imported" "$ERR"
LD_LIBRARY_PATH="$NO_SODIUM_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" run install "$signed" --prefix "$T/no-sodium"
expect_rc 1
pass
