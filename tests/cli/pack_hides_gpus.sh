#!/usr/bin/env bash
# A pack of NVRTC kernels keeps NVRTC from the GPU driver (issue 11): NVRTC
# 13 starts the driver (cuInit) on its first compile in a process, though
# a cubin for a named arch owes nothing to a GPU, and 16 workers starting
# at once waited in the driver's locks (docs/benchmarks.md). The pack and
# its workers run with CUDA_VISIBLE_DEVICES empty when every line is
# NVRTC's, and as they were given otherwise, and load kcache's stand-in
# driver first; the keys are the program's. Seen two ways: the workers'
# environment, read while the pack is stopped (any NVRTC), and, where
# NVRTC starts the driver itself (13 and later), that the tests' stand-in
# driver (FAKE_CUDA_DIR), first on the library path, is never started by
# an NVRTC pack, and is, with the GPUs as given, by a pack of other lines.
# A relative --nvrtc-library names the file where pack runs, for any --jobs.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
[[ -f "${FAKE_CUDA_DIR:-}/libcuda.so.1" ]] || fail "FAKE_CUDA_DIR must hold the stand-in libcuda.so.1"

for i in 1 2 3 4 5 6; do
  printf 'extern "C" __global__ void k%d(float* x) { x[threadIdx.x] *= %d.0f; }\n' "$i" "$i" \
    >"$T/src/k$i.cu"
  KCACHE_RECORD="$T/m.jsonl" compile_raw --backend nvrtc --source "src/k$i.cu" --kernel "k$i" \
    --target sm_80
  if ((RC != 0)); then
    grep -q "needs libnvrtc" <<<"$ERR" && skip_backend nvrtc "$ERR"
    fail "compiling with this machine's NVRTC: $ERR"
  fi
done
record="$(find "$T/cache" -name 'nvrtc-*.facts' | head -n 1)"
library="$(sed -n 's/^library //p' "$record")"
[[ -f "$library" ]] || fail "the NVRTC record names no library: $(cat "$record")"
# A manifest of NVRTC's lines and a command line: the GPUs stay as given.
cp "$T/m.jsonl" "$T/mixed.jsonl"
KCACHE_RECORD="$T/mixed.jsonl" compile_ok --source src/add.cl --target sm_80

# pack_stopped MANIFEST OUTPUT: packs with two jobs, CUDA_VISIBLE_DEVICES=0,
# the stand-in driver first on the library path; once both workers run,
# stops the pack (each worker then waits for its next line), sets
# WORKER_GPUS to what each worker's environment says of the GPUs, and lets
# it go on. Sets RC, OUT and ERR as run does.
pack_stopped() {
  CUDA_VISIBLE_DEVICES=0 LD_LIBRARY_PATH="$FAKE_CUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    KCACHE_FAKE_CUDA_INIT_LOG="$T/init.log" \
    "$KCACHE" pack --manifest "$1" --target sm_80 --output "$2" --jobs 2 >"$T/.out" 2>"$T/.err" &
  local pack=$! workers=() w tries
  for ((tries = 0; tries < 1000; tries++)); do
    workers=()
    # The list ends without a newline: read says so, having read it.
    read -r -a workers <"/proc/$pack/task/$pack/children" 2>/dev/null || true
    ((${#workers[@]} == 2)) && break
    kill -0 "$pack" 2>/dev/null || break
    sleep 0.01
  done
  kill -STOP "$pack" 2>/dev/null
  WORKER_GPUS=""
  for w in "${workers[@]}"; do
    WORKER_GPUS+="$(tr '\0' '\n' <"/proc/$w/environ" | grep '^CUDA_VISIBLE_DEVICES' || echo unset) "
  done
  kill -CONT "$pack" 2>/dev/null
  wait "$pack"
  RC=$?
  OUT="$(cat "$T/.out")"
  ERR="$(cat "$T/.err")"
  ((${#workers[@]} == 2)) || fail "the pack's two workers were not seen running: $OUT $ERR"
}

# Whether this NVRTC starts the driver itself (13 and later): a compile
# outside a pack, the stand-in driver first on the library path.
printf 'extern "C" __global__ void probe(float* x) { x[0] = 1; }\n' >"$T/src/probe.cu"
LD_LIBRARY_PATH="$FAKE_CUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  KCACHE_FAKE_CUDA_INIT_LOG="$T/init.log" "$KCACHE" compile --backend nvrtc \
  --source src/probe.cu --kernel probe --target sm_80 >/dev/null 2>"$T/.err" ||
  fail "compiling outside a pack: $(cat "$T/.err")"
starts_driver=0
[[ -s "$T/init.log" ]] && starts_driver=1
rm -f "$T/init.log"

pack_stopped "$T/m.jsonl" "$T/pkg/sm_80.kdb"
expect_rc 0
expect_contains "the kernels are packed" "packed 6 kernels for sm_80" "$OUT"
expect_not_contains "the recorded keys came out" "another key now" "$ERR"
expect_eq "what the workers of an NVRTC pack see of the GPUs" \
  "CUDA_VISIBLE_DEVICES= CUDA_VISIBLE_DEVICES= " "$WORKER_GPUS"
if ((starts_driver)); then
  # The pack's own stand-in (libkcache-no-gpu-driver.so, soname
  # libcuda.so.1), loaded before NVRTC, is the driver NVRTC gets: the one
  # on the library path is never started.
  expect_eq "cuInit calls of the driver on the library path, in an NVRTC pack" "" \
    "$(cat "$T/init.log" 2>/dev/null)"
  LD_LIBRARY_PATH="$FAKE_CUDA_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    KCACHE_FAKE_CUDA_INIT_LOG="$T/init.log" "$KCACHE" pack --manifest "$T/m.jsonl" \
    --target sm_80 --output "$T/one/sm_80.kdb" --jobs 1 >/dev/null 2>"$T/.err" ||
    fail "packing with one job: $(cat "$T/.err")"
  expect_eq "the same, --jobs 1" "" "$(cat "$T/init.log" 2>/dev/null)"
  checked "NVRTC starts the driver, and a pack's NVRTC got kcache's stand-in instead"
fi

rm -f "$T/init.log"
pack_stopped "$T/mixed.jsonl" "$T/pkg-mixed/sm_80.kdb"
expect_eq "what the workers of a pack with another backend see of the GPUs" \
  "CUDA_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=0 " "$WORKER_GPUS"
if [[ -s "$T/init.log" ]]; then
  expect_eq "what each cuInit saw, another backend in the pack" "" \
    "$(grep -v '^CUDA_VISIBLE_DEVICES=0$' "$T/init.log")"
fi

# --nvrtc-library by a relative path, from its folder: the same for one
# job and two (the workers compile from each line's folder).
cd "$(dirname "$library")" || fail "cd $(dirname "$library")"
for jobs in 1 2; do
  run pack --manifest "$T/m.jsonl" --target sm_80 --output "$T/rel$jobs/sm_80.kdb" --jobs "$jobs" \
    --nvrtc-library "./$(basename "$library")"
  expect_rc 0
  expect_contains "a relative --nvrtc-library, --jobs $jobs" "packed 6 kernels for sm_80" "$OUT"
done

# An arch named like one that this NVRTC does not support is a usage error
# before anything is made (it failed in every worker, leaving a .pack).
run pack --manifest "$T/m.jsonl" --target sm_9000 --output "$T/s9/sm_9000.kdb"
expect_rc 2
expect_contains "NVRTC's own list" "this NVRTC cannot compile for sm_9000; it supports" "$ERR"
[[ ! -e "$T/s9" ]] || fail "a pack for an arch NVRTC lacks made $(ls -A "$T/s9")"
pass
