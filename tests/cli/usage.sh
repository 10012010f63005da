#!/usr/bin/env bash
# Usage errors exit 2 with a "kcache: " message; --help and --version exit 0.
source "$(dirname "$0")/lib.sh"
fresh_env

run --version
expect_rc 0
[[ "$OUT" =~ ^kcache\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "kcache --version: expected 'kcache X.Y.Z ...', seen '$OUT'"
run --help
expect_rc 0
for sub in compile info list clear verify export; do
  expect_contains "kcache --help lists $sub" "$sub" "$OUT"
  run "$sub" --help
  expect_rc 0
  run --help
done

run
expect_rc 2
run no-such-subcommand
expect_rc 2
[[ "$ERR" == kcache:* ]] || fail "unknown subcommand: expected a 'kcache: ' message, seen '$ERR'"
expect_contains "an unknown command is named" "unknown command 'no-such-subcommand' (commands: compile," "$ERR"
# An option that names a file, given empty (what "$KEY" gives with KEY
# unset), is a usage error naming it, never taken as left out: merge
# --sign "" wrote an unsigned package.
mkdir -p "$T/empty"
empty_option() {  # empty_option OPTION ARGS...: kcache ARGS... "" is a usage error naming OPTION
  local option="$1"
  shift
  run "$@" ""
  expect_rc 2
  expect_contains "kcache $* '': said" "kcache: $option: is empty" "$ERR"
  expect_contains "kcache $* '': the command's help" "Run 'kcache $1 --help' for usage." "$ERR"
}
empty_option --sign merge x.kdb -o "$T/empty/y.kdb" --sign
empty_option --output merge x.kdb -o
empty_option --sign pack --manifest m --target gfx906_60 --output "$T/empty/p.kdb" --sign
empty_option --manifest pack --target gfx906_60 --output "$T/empty/p.kdb" --manifest
empty_option --work pack --manifest m --target gfx906_60 --output "$T/empty/p.kdb" --work
empty_option --key sign x.kdb --key
empty_option --trusted verify x.kdb --trusted
empty_option --output export -o
empty_option --output extract 0123 -o
empty_option --output compile "${CP_ARGS[@]}" --source src/add.cl --output
expect_eq "nothing written for an empty option" "" "$(ls -A "$T/empty")"
run compile --backend command --command "cp {in} {out}" --compiler-id test-cp --target gfx906_60
expect_rc 2
expect_contains "compile without --source" "--source" "$ERR"
run compile --source src/add.cl
expect_rc 2
expect_contains "compile without --backend" "--backend" "$ERR"
# A malformed --target is a usage error.
run compile "${CP_ARGS[@]}" --source src/add.cl --target "gfx906:bad feature!"
expect_rc 2
[[ "$ERR" == kcache:* ]] || fail "bad --target: expected a 'kcache: ' message, seen '$ERR'"
run list --no-such-flag
expect_rc 2
expect_eq "files in the cache dir after usage errors" 0 "$(file_count "$T/cache")"
pass
