#!/usr/bin/env bash
# The hip backend for real (hipRTC from ROCm; no AMD GPU needed): a miss then
# a hit, lowered names, target features in the key, and gfx1100 (on which
# ROCm 5.2's hipRTC aborts its process) refused with exit 1, leaving no
# comgr-* folder behind. Skips when libamdhip64 is not installed (fails when
# KCACHE_REQUIRE_BACKENDS names hip).
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

# kcache's and the compiler's temporaries go here, so leftovers show.
export TMPDIR="$T/tmp"
mkdir -p "$TMPDIR"
comgr_in_tmp() { find /tmp -maxdepth 1 -name 'comgr-*' 2>/dev/null | wc -l | tr -d ' '; }
comgr_before="$(comgr_in_tmp)"

cat >src/kernels.hip <<'EOF'
template <int N>
__global__ void scale(float* x) { x[threadIdx.x] *= N; }
extern "C" __global__ void vadd(const float* a, const float* b, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}
EOF
HIP=(--backend hip --source src/kernels.hip --kernel 'scale<16>' --kernel vadd)

compile_raw "${HIP[@]}" --target gfx906 --output out/first.co
if ((RC != 0)); then
  if grep -q 'needs libamdhip64' <<<"$ERR"; then
    skip_backend hip "HIP is not available: $(head -n 2 <<<"$ERR")"
  fi
  fail "kcache compile --backend hip failed"
fi
tier1="$TIER" key1="$KEY" bytes1="$BYTES"
expect_eq "first compile: tier" compiled "$tier1"
expect_eq "first compile: target" gfx906 "$TARGET"
expect_eq "metadata.format" hsaco "$(json_get "$OUT" metadata.format)"
lowered="$(json_get "$OUT" metadata.lowered)"
expect_contains "metadata.lowered" "_Z5scaleILi16EEvPf scale<16>" "$lowered"
expect_contains "metadata.lowered" "vadd vadd" "$lowered"
expect_eq "ELF magic of --output" "7f454c46" "$(od -An -tx1 -N4 out/first.co | tr -d ' \n')"
expect_eq "e_machine of --output (EM_AMDGPU)" "e000" "$(od -An -tx1 -j18 -N2 out/first.co | tr -d ' \n')"
expect_eq "size of --output" "$bytes1" "$(stat -c %s out/first.co)"

compile_raw "${HIP[@]}" --target gfx906 --output out/second.co
expect_rc 0
expect_eq "second compile: tier" user "$TIER"
expect_eq "key of the hit vs the miss" "$key1" "$KEY"
cmp -s out/first.co out/second.co || fail "--output of the hit differs from the miss's"
expect_contains "lowered names of the hit" "_Z5scaleILi16EEvPf scale<16>" \
  "$(json_get "$OUT" metadata.lowered)"

# Target features are part of the target id, and so of the key.
compile_raw "${HIP[@]}" --target gfx90a
expect_rc 0
plain_key="$KEY"
compile_raw "${HIP[@]}" --target gfx90a:xnack-:sramecc+
expect_rc 0
expect_eq "target with features (canonical order)" "gfx90a:sramecc+:xnack-" "$TARGET"
expect_ne "key of gfx90a:sramecc+:xnack- vs gfx90a" "$plain_key" "$KEY"
compile_raw "${HIP[@]}" --target gfx1030
expect_rc 0
expect_eq "gfx1030: tier" compiled "$TIER"

run list --json
expect_rc 0
entries="$(json_py "$OUT" 'len(d)')"

# gfx1100: a clear failure, exit 1, nothing cached, nothing left behind.
run compile "${HIP[@]}" --target gfx1100 --output out/gfx1100.co --json
expect_rc 1
expect_contains "stderr for gfx1100" "kcache: " "$ERR"
expect_contains "stderr for gfx1100" "gfx1100" "$ERR"
expect_contains "stderr for gfx1100 lists what is supported" "gfx906" "$ERR"
expect_eq "stdout for gfx1100" "" "$OUT"
[[ ! -e out/gfx1100.co ]] || fail "--output was written for gfx1100"
run list --json
expect_eq "entries after gfx1100" "$entries" "$(json_py "$OUT" 'len(d)')"

# Malformed and foreign targets are usage errors.
run compile "${HIP[@]}" --target sm_90
expect_rc 2
run compile "${HIP[@]}" --target gfx1030:xnack+
expect_rc 2
expect_contains "stderr for gfx1030:xnack+" "xnack" "$ERR"

# An installed HIP package: its toolchain is checked, its GPU never asked,
# so it "may apply" and says so (an audit saw "applies to this machine"
# with no AMD GPU here).
run export --db gfx906 -o "$T/sys/gfx906.kdb"
expect_rc 0
KCACHE_SYSTEM_DB_PATH="$T/sys" run info
expect_contains "info: a HIP package may apply" \
  "may apply: no AMD GPU is asked here, so its target gfx906 is not checked" "$OUT"
KCACHE_SYSTEM_DB_PATH="$T/sys" run info --json
expect_eq "info --json: checked" false \
  "$(json_py "$OUT" '[p for p in d["packages"] if p["path"].endswith("gfx906.kdb")][0]["checked"]')"

# pack for an arch this ROCm does not know: a usage error before any
# folder is made or worker started (comgr's list is asked, never hipRTC).
KCACHE_RECORD="$T/hip.jsonl" compile_raw "${HIP[@]}" --target gfx906
expect_rc 0
run pack --manifest "$T/hip.jsonl" --target gfx942 --output "$T/pk/gfx942.kdb"
expect_rc 2
expect_contains "pack for an unknown HIP arch" "cannot compile for gfx942" "$ERR"
[[ ! -e "$T/pk" ]] || fail "pack for gfx942 made $T/pk"

leftovers="$(find "$TMPDIR" -mindepth 1)"
expect_eq "files left in TMPDIR" "" "$leftovers"
expect_eq "comgr-* folders in /tmp (before vs after)" "$comgr_before" "$(comgr_in_tmp)"
pass
