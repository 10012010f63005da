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
