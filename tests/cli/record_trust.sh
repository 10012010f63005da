#!/usr/bin/env bash
# The kernel manifest is held to the trust rule (issue 41): `kcache pack`
# turns its lines into compiler commands run as the user who packs, so a
# manifest another user could have written or replaced, or one reached
# through their link, is refused for recording (one warning, the compile
# still succeeds, the link's target untouched) and for pack (exit 1,
# nothing compiled), unless said to be shared on purpose
# (KCACHE_RECORD_SHARED=1, pack --trust-manifest). A new manifest is
# readable by its owner alone. pack runs no compiler program another user
# could have replaced without --trust-compiler. merge never writes over
# one of its inputs (it dropped a signature with exit 0).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

as_root=0
[[ "$(id -u)" == 0 ]] && as_root=1
other_uid=65534

# A new manifest: 0600 whatever the umask.
umask 022
export KCACHE_RECORD="$T/m.jsonl"
compile_ok --source src/add.cl --output out/a.bin
expect_eq "a new manifest's mode" 600 "$(stat -c %a "$T/m.jsonl")"
expect_eq "recorded" 1 "$(wc -l <"$T/m.jsonl")"

# A manifest others can write: refused, once, and the compile succeeds.
cp "$T/m.jsonl" "$T/open.jsonl"
chmod 0666 "$T/open.jsonl"
export KCACHE_RECORD="$T/open.jsonl"
compile_ok --source src/mul.cl --output out/b.bin
expect_eq "warnings for a manifest others can write" 1 "$(warning_count "$ERR")"
expect_contains "the warning says why" "file $T/open.jsonl is writable by others (mode 0666)" "$ERR"
expect_contains "the warning says how to share it" "KCACHE_RECORD_SHARED=1" "$ERR"
expect_eq "nothing added" 1 "$(wc -l <"$T/open.jsonl")"
# Shared on purpose: added to.
KCACHE_RECORD_SHARED=1 compile_ok --source src/mul.cl --output out/b2.bin
expect_eq "warnings when shared on purpose" 0 "$(warning_count "$ERR")"
expect_eq "added when shared on purpose" 2 "$(wc -l <"$T/open.jsonl")"

# pack: a manifest others can write is refused before anything is done.
run pack --manifest "$T/open.jsonl" --target gfx906_60 --output "$T/pkg/open.kdb"
expect_rc 1
expect_contains "pack says why" "another user could have written it (file $T/open.jsonl is writable by others (mode 0666))" "$ERR"
expect_contains "pack says how to pack it anyway" "--trust-manifest" "$ERR"
[[ -e "$T/pkg/open.kdb" ]] && fail "pack wrote a package from a refused manifest"
run pack --manifest "$T/open.jsonl" --target gfx906_60 --output "$T/pkg/open.kdb" --trust-manifest
expect_rc 0
[[ -s "$T/pkg/open.kdb" ]] || fail "pack --trust-manifest wrote no package"

# A folder others write in without the sticky bit: anyone could replace it.
mkdir -m 0777 "$T/open-folder"
chmod 0777 "$T/open-folder"
export KCACHE_RECORD="$T/open-folder/m.jsonl"
compile_ok --source src/add.cl --output out/c.bin
expect_contains "a folder others write in" "folder $T/open-folder is writable by others without the sticky bit" "$ERR"
[[ -e "$T/open-folder/m.jsonl" ]] && fail "a manifest was made in a folder others can write"
# With the sticky bit (as /tmp): the user's own file is theirs.
chmod 1777 "$T/open-folder"
compile_ok --source src/add.cl --output out/d.bin
expect_eq "warnings in a sticky folder" 0 "$(warning_count "$ERR")"
expect_eq "recorded in a sticky folder" 1 "$(wc -l <"$T/open-folder/m.jsonl")"

# The attack: another user plants a link in a sticky folder, pointing at a
# file of the victim's; recording must not append the victim's kernel
# sources to it.
if ((as_root)); then
  mkdir -m 1777 "$T/stick"
  chmod 1777 "$T/stick"
  echo 'victim line' >"$T/victim.txt"
  ln -s "$T/victim.txt" "$T/stick/m.jsonl"
  chown -h "$other_uid" "$T/stick/m.jsonl"
  export KCACHE_RECORD="$T/stick/m.jsonl"
  compile_ok --source src/add.cl --output out/e.bin
  expect_eq "the link's target" "victim line" "$(cat "$T/victim.txt")"
  expect_contains "the warning names the link" "link $T/stick/m.jsonl is owned by another user (uid $other_uid)" "$ERR"
  # A manifest another user owns, with a compiler command of theirs.
  cp "$T/m.jsonl" "$T/theirs.jsonl"
  chmod 0644 "$T/theirs.jsonl"
  chown "$other_uid" "$T/theirs.jsonl"
  run pack --manifest "$T/theirs.jsonl" --target gfx906_60 --output "$T/pkg/theirs.kdb"
  expect_rc 1
  expect_contains "pack names the owner" "is owned by another user (uid $other_uid)" "$ERR"
  checked "another user's link and manifest are refused (as root)"
fi
unset KCACHE_RECORD

# pack runs no compiler program another user could have replaced.
cat >"$T/cc.sh" <<'SH'
cp "$1" "$2"
SH
chmod 0755 "$T/cc.sh"
export KCACHE_RECORD="$T/script.jsonl"
run compile --json --backend command --command "sh cc.sh {in} {out}" --compiler-id f1 \
  --target gfx906_60 --source src/add.cl --output out/f.bin
expect_rc 0
unset KCACHE_RECORD
run pack --manifest "$T/script.jsonl" --target gfx906_60 --output "$T/pkg/script.kdb"
expect_rc 0
chmod 0666 "$T/cc.sh"
rm -rf "$T/pkg/script.kdb" "$T/pkg/script.kdb.pack"
run pack --manifest "$T/script.jsonl" --target gfx906_60 --output "$T/pkg/script.kdb"
expect_rc 1
expect_contains "pack names the program" "pack will not run $T/cc.sh (line 1's command compiler): file $T/cc.sh is writable by others (mode 0666)" "$ERR"
expect_contains "pack says how to run it anyway" "--trust-compiler" "$ERR"
[[ -e "$T/pkg/script.kdb" ]] && fail "pack wrote a package with a compiler others could replace"
run pack --manifest "$T/script.jsonl" --target gfx906_60 --output "$T/pkg/script.kdb" --trust-compiler
expect_rc 0
[[ -s "$T/pkg/script.kdb" ]] || fail "pack --trust-compiler wrote no package"
chmod 0755 "$T/cc.sh"

# merge never writes over one of its inputs; a signed input's signature
# does not carry over, and that is said.
mkdir -p "$T/keys"
run keygen --output "$T/keys/k"
expect_rc 0
cp "$T/pkg/open.kdb" "$T/pkg/signed.kdb"
run sign "$T/pkg/signed.kdb" --key "$T/keys/k"
expect_rc 0
cp "$T/pkg/signed.kdb" "$T/pkg/signed.before"
run merge "$T/pkg/signed.kdb" "$T/pkg/signed.kdb" -o "$T/pkg/signed.kdb"
expect_rc 2
expect_contains "merge says why" "is one of the packages merged" "$ERR"
cmp -s "$T/pkg/signed.kdb" "$T/pkg/signed.before" || fail "merge changed its own input"
run merge "$T/pkg/signed.kdb" "$T/pkg/script.kdb" -o "$T/pkg/merged.kdb"
expect_rc 0
expect_contains "merge says the signature is not carried" "$T/pkg/signed.kdb was signed" "$ERR"
pass
