#!/usr/bin/env bash
# kcache install puts a package where the system tier finds it, under the
# name its metadata gives, checked whole first (a damaged one is refused
# and nothing is placed); kcache import copies a package's entries into
# the user cache.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

make_good_package
cp "$good" "$T/renamed.kdb"

# Into the system folder in use ($T/sys), under its own db name.
run install "$T/renamed.kdb"
expect_rc 0
expect_contains "install says where" "installed $T/sys/gfx906_60.kdb (1 kernel)" "$OUT"
cmp -s "$good" "$T/sys/gfx906_60.kdb" || fail "the installed package differs"
compile_ok --source src/add.cl --output out/installed.bin
expect_eq "after install: tier" system "$TIER"
cmp -s out/compiled.bin out/installed.bin || fail "the installed package's binary differs"
[[ -z "$(ls -A "$T/sys" | grep -v '^gfx906_60.kdb$')" ]] || fail "install left files behind: $(ls -A "$T/sys")"

# Under a prefix.
run install "$good" --prefix "$T/prefix"
expect_rc 0
[[ -s "$T/prefix/share/kcache/db/gfx906_60.kdb" ]] || fail "no package under the prefix"

# An empty --prefix (an unset variable in a script) is a usage error, not
# the system folder.
before="$(snapshot "$T/sys")"
run install "$good" --prefix ""
expect_rc 2
expect_contains "an empty --prefix is said" "--prefix is empty" "$ERR"
expect_eq "the system folder is unchanged" "$before" "$(snapshot "$T/sys")"

# Under umask 0: the folders made 0755 and the package 0644, which the
# system tier uses (a folder others could write would be refused).
(umask 000 && "$KCACHE" install "$good" --prefix "$T/umask0" >/dev/null) ||
  fail "install under umask 0 failed"
expect_eq "modes made under umask 0" "755 755 755 755 644" "$(stat -c %a "$T/umask0" \
  "$T/umask0/share" "$T/umask0/share/kcache" "$T/umask0/share/kcache/db" \
  "$T/umask0/share/kcache/db/gfx906_60.kdb" | tr '\n' ' ' | sed 's/ $//')"

# Into a folder another user could write: in place, but the system tier
# refuses it there, so install fails and says how to mend it.
mkdir -p "$T/open/share/kcache/db"
chmod 0777 "$T/open/share/kcache/db"
run install "$good" --prefix "$T/open"
expect_rc 1
expect_contains "the refusal is said" "the system tier will not use $T/open/share/kcache/db/gfx906_60.kdb: another user could have written it" "$ERR"
expect_contains "and how to mend it" "fix the owner, mode or ACL of what that names (chmod go-w)" "$ERR"
# Under trusted keys the signature vouches, not the folder: a package
# signed by a trusted key installed there is used, so install succeeds.
"$KCACHE" keygen -o "$T/release" >/dev/null || fail "keygen failed"
cp "$good" "$T/signed.kdb"
"$KCACHE" sign "$T/signed.kdb" --key "$T/release" >/dev/null || fail "sign failed"
export KCACHE_TRUSTED_KEYS="$T/release.pub"
run install "$T/signed.kdb" --prefix "$T/open"
expect_rc 0
expect_not_contains "signed, trusted: no refusal" "will not use" "$ERR"
unset KCACHE_TRUSTED_KEYS
chmod 0755 "$T/open/share/kcache/db"
run install "$good" --prefix "$T/open"
expect_rc 0
expect_not_contains "a package only its owner could write: no warning" "warning" "$ERR"

# A package file others could have written is installed as asked, and
# said: its copy in the system folder is the installer's own now.
cp "$good" "$T/open-to-all.kdb"
chmod 0666 "$T/open-to-all.kdb"
run install "$T/open-to-all.kdb" --prefix "$T/open"
expect_rc 0
expect_contains "install warns of a package others could have written" "kcache: warning: $T/open-to-all.kdb: another user could have written it (file $T/open-to-all.kdb is writable by others (mode 0666))" "$ERR"
rm "$T/open-to-all.kdb"

# What an install killed midway left (its temporary copy beside the
# package) goes with the next install of that package: only one not
# written to for a minute that no writer holds; another package's stays.
db_dir="$T/open/share/kcache/db"
printf 'half a package' >"$db_dir/.gfx906_60.kdb.kcache-tmp-00000000000000aa"
printf 'half a package' >"$db_dir/.gfx906_60.kdb.kcache-tmp-00000000000000bb"
printf 'half a package' >"$db_dir/.gfx906_60.kdb.kcache-tmp-00000000000000cc"
printf 'half a package' >"$db_dir/.gfx90a.kdb.kcache-tmp-00000000000000dd"
touch -d '2 hours ago' "$db_dir/.gfx906_60.kdb.kcache-tmp-00000000000000aa" \
  "$db_dir/.gfx906_60.kdb.kcache-tmp-00000000000000cc" "$db_dir/.gfx90a.kdb.kcache-tmp-00000000000000dd"
exec 9<"$db_dir/.gfx906_60.kdb.kcache-tmp-00000000000000cc"
flock 9  # as a live writer holds its copy
run install "$good" --prefix "$T/open"
expect_rc 0
exec 9<&-
expect_eq "only the abandoned copy went" \
  ".gfx906_60.kdb.kcache-tmp-00000000000000bb .gfx906_60.kdb.kcache-tmp-00000000000000cc .gfx90a.kdb.kcache-tmp-00000000000000dd gfx906_60.kdb" \
  "$(ls -A "$db_dir" | sort | tr '\n' ' ' | sed 's/ $//')"
rm -f "$db_dir"/.*kcache-tmp-*

# A damaged package is refused whole; what was installed stays.
python3 - "$good" "$T/damaged.kdb" <<'PY' || fail "could not damage a package"
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[64 + 100] ^= 0x20
open(sys.argv[2], "wb").write(data)
PY
run info "$T/damaged.kdb"
expect_rc 0
expect_contains "info reads the entries" "entries       its one entry fails its checks (never served" "$OUT"
run info "$good"
expect_contains "info of a sound package" "entries       all pass their checks" "$OUT"
before="$(snapshot "$T/prefix")"
run install "$T/damaged.kdb" --prefix "$T/prefix"
expect_rc 1
expect_contains "a damaged package is refused" "its one entry fails its checks; not installed" "$ERR"
expect_eq "the prefix is unchanged" "$before" "$(snapshot "$T/prefix")"
run install "$T/nothing.kdb" --prefix "$T/prefix"
expect_rc 1

# A package whose database name holds control characters (crafted: its
# metadata rewritten, its checksum made anew): info shows them escaped,
# install names no file after it.
python3 - "$good" "$T/escape.kdb" <<'PY' || fail "could not craft a package"
import ctypes, struct, sys
xxh = ctypes.CDLL("libxxhash.so.0")
class H128(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64)]
xxh.XXH3_128bits.restype = H128
xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
data = bytearray(open(sys.argv[1], "rb").read())
flags, count, index, meta, meta_size = struct.unpack_from("<IQQQI", data, 12)
assert flags == 0 and meta + meta_size == len(data), (flags, meta, meta_size, len(data))
metadata = bytes(data[meta:]).replace(b"db gfx906_60\n", b"db gfx906_60\x1b[2J\n")
assert len(metadata) == meta_size + 4
data = data[:meta] + metadata
struct.pack_into("<I", data, 12 + 28, len(metadata))
h = xxh.XXH3_128bits(bytes(data[0:48]) + bytes(data[index:]), len(data[0:48]) + len(data) - index)
data[48:64] = struct.pack(">QQ", h.hi, h.lo)
open(sys.argv[2], "wb").write(data)
PY
run info "$T/escape.kdb"
expect_rc 0
expect_contains "info escapes a control character" 'gfx906_60\x1b[2J' "$OUT"
[[ "$OUT" != *$'\e'* ]] || fail "info wrote a raw escape character: $OUT"
run install "$T/escape.kdb" --prefix "$T/escaped"
expect_rc 1
expect_contains "install names no file after it" "names no database it belongs to" "$ERR"
[[ ! -e "$T/escaped/share/kcache/db" ]] || [[ -z "$(ls -A "$T/escaped/share/kcache/db")" ]] ||
  fail "install wrote $(ls -A "$T/escaped/share/kcache/db")"

# Import: the entries into a fresh user cache, then hits from it.
rm -f "$T/sys/gfx906_60.kdb"
export KCACHE_CUSTOM_CACHE_DIR="$T/imported"
run import "$good"
expect_rc 0
expect_contains "import says how many" "imported 1 entry of $good" "$OUT"
run import "$good"
expect_rc 0
expect_contains "imported again: nothing stored again" "imported 0 entries of $good into $T/imported/" "$OUT"
expect_contains "imported again: said" "(1 already there)" "$OUT"
compile_ok --source src/add.cl --output out/imported.bin
expect_eq "after import: tier" user "$TIER"
cmp -s out/compiled.bin out/imported.bin || fail "the imported binary differs"
run import "$T/damaged.kdb"
expect_rc 1

# Merge: two packages of one database become one holding each kernel
# once; packages of two databases are refused, nothing written.
export KCACHE_CUSTOM_CACHE_DIR="$T/cache3"
printf '__kernel void two(__global float* x) { x[0] = 2; }\n' >"$T/src/two.cl"
compile_ok --source src/two.cl --output out/two.bin
mkdir -p "$T/export2"
run export --output "$T/export2"
expect_rc 0
run merge "$good" "$T/export2/gfx906_60.kdb" "$good" --output "$T/merged.kdb"
expect_rc 0
expect_contains "merge says what it wrote" "merged 3 packages into $T/merged.kdb (2 kernels)" "$OUT"
run info "$T/merged.kdb" --json
expect_rc 0
expect_eq "kernels in the merged package" 2 "$(json_py "$OUT" 'd[0]["kernels"]')"
compile_ok --source src/two.cl --output out/two.other.bin --target gfx90a
mkdir -p "$T/export3"
run export --db gfx90a --output "$T/export3/gfx90a.kdb"
expect_rc 0
run merge "$good" "$T/export3/gfx90a.kdb" --output "$T/mixed.kdb"
expect_rc 1
expect_contains "two databases are refused" "only packages of one database are merged" "$ERR"
[[ ! -e "$T/mixed.kdb" ]] || fail "a refused merge wrote $T/mixed.kdb"

# One damaged entry of two: import and merge take the other and say what
# they left out (exit 1), never silently.
python3 - "$T/merged.kdb" "$T/one-bad.kdb" <<'PY' || fail "could not damage an entry"
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[data.rfind(b"KCEN") + 100] ^= 0x20
open(sys.argv[2], "wb").write(data)
PY
export KCACHE_CUSTOM_CACHE_DIR="$T/cache-one-bad"
run import "$T/one-bad.kdb"
expect_rc 1
expect_contains "import takes the good one" "imported 1 entry of $T/one-bad.kdb" "$OUT"
expect_contains "import says what it left out" "1 entry fails its checks and was left out" "$ERR"
# verify says which, as import's message promises.
run verify "$T/one-bad.kdb"
expect_rc 1
expect_contains "verify PKG names the failing entry" "problem: entry " "$OUT"
expect_contains "and what fails" "checksum" "$OUT"
run verify "$T/one-bad.kdb" --json
expect_eq "verify --json names it" 1 \
  "$(json_py "$OUT" 'len([p for p in d[0]["problems"] if p.startswith("entry ")])')"
run merge "$T/one-bad.kdb" --output "$T/remerged.kdb"
expect_rc 1
expect_contains "merge writes the good one" "(1 kernel)" "$OUT"
expect_contains "merge says what it left out" "1 entry fails its checks and was left out" "$ERR"
