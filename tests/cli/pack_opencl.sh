#!/usr/bin/env bash
# pack with OpenCL's lines (PoCL on a CPU): the device compiles for its own
# target alone, which only its runtime names. A pack for its target
# writes a package the system tier then serves; one for a target the
# device is not is a usage error (exit 2) before any folder is made or
# worker started, as NVRTC's misfits are (cli.pack), the device named;
# beside another backend's lines they are left out, and said.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

KCACHE_RECORD="$T/m.jsonl" compile_raw --backend opencl --source src/add.cl --kernel add \
  --output out/first.bin
if ((RC != 0)); then
  if grep -Eiq 'no OpenCL (platform|device)|libOpenCL|cannot load|not available' <<<"$ERR"; then
    skip_backend opencl "no usable OpenCL platform: $(head -n 3 <<<"$ERR")"
  fi
  fail "kcache compile --backend opencl failed"
fi
device="$TARGET"
# A second kernel, so that --jobs 2 below starts workers after the pack
# itself asked the runtime for its device.
KCACHE_RECORD="$T/m.jsonl" compile_raw --backend opencl --source src/mul.cl --kernel mul \
  --output out/mul.bin
expect_rc 0

for target in gfx906_60 sm_90 "${device}x"; do
  for jobs in 1 2; do
    run pack --manifest "$T/m.jsonl" --target "$target" --output "$T/other/$target.kdb" --jobs "$jobs"
    expect_rc 2
    expect_contains "$target: why" "kcache: --target $target: no line of --manifest $T/m.jsonl can be compiled for it (the OpenCL device is $device" "$ERR"
    [[ ! -e "$T/other" ]] || fail "a pack refused for its target made $(find "$T/other")"
  done
done

# Beside another backend's lines (one manifest a program recorded), the
# OpenCL lines are not for gfx906_60: left out, said, and the rest packed
# with exit 0 (they failed in their workers before, exit 1), by workers
# that leave out the same lines.
cp "$T/m.jsonl" "$T/mixed.jsonl"
KCACHE_RECORD="$T/mixed.jsonl" compile_raw "${CP_ARGS[@]}" --source src/mul.cl --target gfx906_60
expect_rc 0
for jobs in 1 2; do
  run pack --manifest "$T/mixed.jsonl" --target gfx906_60 --output "$T/mixed/gfx906_60.kdb" \
    --jobs "$jobs"
  expect_rc 0
  expect_contains "mixed, --jobs $jobs: the command line packed" "packed 1 kernel for gfx906_60" "$OUT"
  expect_contains "mixed, --jobs $jobs: the OpenCL lines said" \
    "note: 2 lines of backend opencl left out: the OpenCL device is $device" "$ERR"
done

run pack --manifest "$T/m.jsonl" --target "$device" --output "$T/pkg/$device.kdb" --jobs 2
expect_rc 0
expect_contains "packed" "packed 2 kernels for $device" "$OUT"
run install "$T/pkg/$device.kdb"
expect_rc 0
export KCACHE_CUSTOM_CACHE_DIR="$T/fresh"
compile_raw --backend opencl --source src/add.cl --kernel add --output out/second.bin
expect_rc 0
expect_eq "served from the package" system "$TIER"
cmp -s out/first.bin out/second.bin || fail "the package's binary differs from the compiled one"
pass
