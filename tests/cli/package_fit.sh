#!/usr/bin/env bash
# Compatibility (issue 11): the system tier passes over a package packed by
# another toolchain, or installed under another database's name, saying so
# once; kcache info lists the installed packages, whether each applies to
# this machine, and why not.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

make_good_package                          # command backend, compiler id test-cp, gfx906_60
cp "$good" "$T/sys/gfx906_60.kdb"
cp "$good" "$T/sys/gfx906_64.kdb"          # renamed: another database's name

run info --json
expect_rc 0
python3 - "$OUT" <<'PY' || fail "kcache info --json packages: $OUT"
import json, sys
packages = {p["db"]: p for p in json.loads(sys.argv[1])["packages"]}
assert set(packages) == {"gfx906_60", "gfx906_64"}, packages
assert packages["gfx906_60"]["applies"] is True, packages["gfx906_60"]
assert "not checked for command (its targets are its command's own)" in packages["gfx906_60"]["note"], packages["gfx906_60"]
assert packages["gfx906_60"]["checked"] is False, packages["gfx906_60"]
assert packages["gfx906_64"]["checked"] is True, packages["gfx906_64"]
assert packages["gfx906_64"]["applies"] is False, packages["gfx906_64"]
assert "holds kernels for gfx906_60, not gfx906_64" in packages["gfx906_64"]["why_not"]
PY
run info
expect_contains "info lists packages" "gfx906_64.kdb: 1 kernel, does not apply: it holds kernels for gfx906_60" "$OUT"
expect_contains "what cannot be checked here may apply" "gfx906_60.kdb: 1 kernel, may apply: not checked for command (its targets are its command's own)" "$OUT"

# The package's own compiler: a system hit; another compiler id: compiled,
# with one warning saying why the package was passed over.
compile_ok --source src/add.cl --output out/hit.bin
expect_eq "own toolchain: tier" system "$TIER"
expect_not_contains "own toolchain: no warning" "Warning" "$ERR"
compile_raw --backend command --command "cp {in} {out}" --compiler-id test-cp-2 --target gfx906_60 \
  --source src/add.cl --output out/other.bin
expect_rc 0
expect_eq "another toolchain: tier" compiled "$TIER"
expect_contains "another toolchain: said" "gfx906_60.kdb is not used for this compiler: it was packed by another command toolchain (packed with 'test-cp', here 'test-cp-2')" "$ERR"
expect_eq "said once" 1 "$(grep -c 'is not used for this compiler' <<<"$ERR")"
pass
