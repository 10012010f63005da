#!/usr/bin/env bash
# kcache list as a table people read (a header, aligned columns, kernel
# names, ages, human sizes; a remembered compile error in the same
# columns), its filters and sorts; kcache show KEY and kcache extract KEY.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
FAKE_CC=(--backend command --command "sh $SCRIPT_DIR/fake_cc.sh {in} {out}" --compiler-id fake-cc --target gfx906_60)
printf 'kernel void broken() { FAKE_COMPILE_ERROR }\n' >src/broken.cl
python3 -c "import sys; sys.stdout.write('// big\n' * 4000)" >src/big.cl

compile_ok --source src/add.cl --kernel add
add_key="$KEY"
compile_ok --source src/big.cl --kernel big
big_key="$KEY"
compile_ok --source src/mul.cl --kernel mul --target sm_90
compile_raw "${FAKE_CC[@]}" --source src/broken.cl
expect_rc 1

run list
expect_rc 0
header="$(head -1 <<<"$OUT")"
expect_eq "list: header fields" "DATABASE KEY BACKEND KIND SIZE AGE USED KERNELS" "$(tr -s ' ' <<<"$header")"
expect_eq "list: 4 rows and the header and the total" 6 "$(wc -l <<<"$OUT" | tr -d ' ')"
expect_contains "list: kernel names" " add" "$OUT"
expect_contains "list: human sizes" "KiB" "$OUT"
expect_contains "list: the total" "4 entries" "$OUT"
# Every row has as many columns as the header, the compile error included.
cols="$(sed -n '2,5p' <<<"$OUT" | awk '{print NF}' | sort -u | tr '\n' ' ')"
# (8 columns; the size has its unit after a space)
expect_eq "list: every row has 8 columns" "9 " "$cols"
expect_contains "list: the compile error's kind" " error " "$OUT"
expect_not_contains "list: no failure: backend" "failure:" "$OUT"
# The columns line up: KEY starts at the same place on every line.
starts="$(sed -n '1,5p' <<<"$OUT" | awk '{print index($0, $2)}' | sort -u | wc -l | tr -d ' ')"
expect_eq "list: columns are aligned" 1 "$starts"

run list --json
expect_eq "list --json: one failure" 1 "$(json_py "$OUT" 'sum(1 for e in d if e["failure"])')"
expect_eq "list --json: its backend" command "$(json_py "$OUT" '[e["backend"] for e in d if e["failure"]][0]')"
expect_eq "list --json: target" gfx906 "$(json_py "$OUT" "[e['target'] for e in d if e['key'] == '$add_key'][0]")"

run list --kernel ad --json
expect_eq "list --kernel ad" "$add_key" "$(json_py "$OUT" '" ".join(e["key"] for e in d)')"
run list --target sm_90 --json
expect_eq "list --target sm_90: entries" 1 "$(json_py "$OUT" 'len(d)')"
run list --target gfx906 --json
expect_eq "list --target gfx906 (an arch): entries" 3 "$(json_py "$OUT" 'len(d)')"
run list --backend nvrtc
expect_contains "list --backend nvrtc: none" "0 entries, 0 B on disk (of 4)" "$OUT"
run list --sort size --json
expect_eq "list --sort size: the largest first" "$big_key" "$(json_py "$OUT" 'd[0]["key"]')"
run list --newer-than 1h --json
expect_eq "list --newer-than 1h: all" 4 "$(json_py "$OUT" 'len(d)')"
run list --older-than 1h --json
expect_eq "list --older-than 1h: none" 0 "$(json_py "$OUT" 'len(d)')"
run list --older-than soon
expect_rc 2
expect_contains "list --older-than soon names the option" "--older-than" "$ERR"
run list --sort colour
expect_rc 2

# show: one entry whole, by a prefix of its key.
run show "${add_key:0:8}"
expect_rc 0
expect_contains "show: the whole key" "$add_key" "$OUT"
expect_contains "show: the kernel" "add" "$OUT"
expect_contains "show: the key material" "key material" "$OUT"
expect_contains "show: the material's lines" "backend command" "$OUT"
run show "${add_key:0:8}" --json
expect_eq "show --json: key" "$add_key" "$(json_get "$OUT" key)"
expect_contains "show --json: material" "backend command" "$(json_get "$OUT" material)"
run show ffffffffffff
expect_rc 1
expect_contains "show of a key that is not there" "no entry of key ffffffffffff" "$ERR"
run show xyz
expect_rc 2

# extract: the binary, byte for byte ("cp {in} {out}" makes it the source).
run extract "${add_key:0:8}" -o out/add.bin
expect_rc 0
cmp -s out/add.bin src/add.cl || fail "extract wrote other bytes than the binary"
checked "extract writes the binary"
ln -s "$T/elsewhere" out/link.bin
run extract "${add_key:0:8}" -o out/link.bin
expect_rc 1
[[ ! -e "$T/elsewhere" ]] || fail "extract wrote through a symbolic link"
checked "extract does not write through a link"
KCACHE_DISABLE_CACHE=1 run show "${add_key:0:8}"
expect_rc 1
expect_contains "show with the cache off" "disabled" "$ERR"

# One key in two databases (an arch's and a device's: the units are not
# part of the key): more digits cannot tell them apart, --db does.
compile_ok --source src/add.cl --kernel add --target gfx906 --output out/arch.bin
expect_eq "one key for the arch and the device" "$add_key" "$KEY"
run show "$add_key"
expect_rc 1
expect_contains "both databases named" "key $add_key is in 2 databases (gfx906, gfx906_60); name one with --db" "$ERR"
run show "$add_key" --db gfx906
expect_rc 0
expect_contains "show --db" "gfx906" "$OUT"
run extract "${add_key:0:8}" --db gfx906_60 -o out/device.bin
expect_rc 0
cmp -s out/device.bin src/add.cl || fail "extract --db wrote other bytes than the binary"
run show "$add_key" --db gfx90a
expect_rc 1
expect_contains "no entry in that database" "no entry of key $add_key in database gfx90a" "$ERR"
pass
