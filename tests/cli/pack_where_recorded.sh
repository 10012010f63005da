#!/usr/bin/env bash
# A manifest line is packed from the folder its program ran in (issue 11):
# a kernel whose headers are found through a relative include folder
# (-I inc) and, NVRTC's way, in the working folder, recorded in one folder
# and packed from another, comes out with the key the program asked for,
# and the package then serves the program. A line recorded in a folder
# that is not here is compiled from the pack's own folder, and a note says
# so once.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

mkdir -p "$T/project/inc" "$T/elsewhere"
printf '#define SCALE 3.0f\n' >"$T/project/inc/scale.h"
printf '#define BIAS 1.0f\n' >"$T/project/bias.h"
cat >"$T/project/k.cu" <<'CU'
#include "scale.h"
#include "bias.h"
extern "C" __global__ void k(float* x) { x[threadIdx.x] = x[threadIdx.x] * SCALE + BIAS; }
CU
request=(--backend nvrtc --source k.cu --kernel k --target sm_80 -I inc)

cd "$T/project" || fail "cd $T/project"
KCACHE_RECORD="$T/m.jsonl" compile_raw "${request[@]}"
if ((RC != 0)); then
  grep -q "needs libnvrtc" <<<"$ERR" && skip_backend nvrtc "$ERR"
  fail "compiling with this machine's NVRTC: $ERR"
fi
asked="$KEY"
expect_contains "the program's folder is recorded" "\"cwd\":\"$T/project\"" "$(cat "$T/m.jsonl")"

# Packed from another folder, where neither inc/ nor bias.h is.
cd "$T/elsewhere" || fail "cd $T/elsewhere"
run pack --manifest "$T/m.jsonl" --target sm_80 --output "$T/pkg/sm_80.kdb"
expect_rc 0
expect_contains "the kernel is packed" "packed 1 kernel for sm_80" "$OUT"
expect_not_contains "the recorded key came out" "another key now" "$ERR"
run install "$T/pkg/sm_80.kdb" --prefix "$T/installed"
expect_rc 0

# The program, with a fresh user cache: served from the package.
cd "$T/project" || fail "cd $T/project"
KCACHE_CUSTOM_CACHE_DIR="$T/fresh" KCACHE_SYSTEM_DB_PATH="$T/installed/share/kcache/db" \
  compile_raw "${request[@]}"
expect_rc 0
expect_eq "the program's tier" system "$TIER"
expect_eq "the program's key" "$asked" "$KEY"

# Recorded in a folder that is not here: packed from the pack's folder
# (here the project's, where the headers are), said once.
sed "s#\"cwd\":\"$T/project\"#\"cwd\":\"$T/gone\"#" "$T/m.jsonl" >"$T/moved.jsonl"
run pack --manifest "$T/moved.jsonl" --target sm_80 --output "$T/pkg2/sm_80.kdb"
expect_rc 0
expect_contains "the folder not here is said" "kernels recorded in $T/gone, not a folder here, are compiled from this one" "$ERR"
expect_not_contains "the same key from the pack's folder" "another key now" "$ERR"
pass
