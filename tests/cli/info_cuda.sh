#!/usr/bin/env bash
# kcache info on CUDA packages (issue 11): whether each applies to this
# machine's GPUs, asked of the driver. On the stand-in driver
# (tests/fakes/fake_libcuda.cpp: one sm_80 device of 108 multiprocessors)
# a package for sm_80_108 applies and one for sm_75_40 does not, saying
# why; with no driver answering, the target is said to be unchecked.
fake_driver="${FAKE_CUDA_DIR:-}"  # set by ctest, read before fresh_env
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build
[[ -n "$fake_driver" && -e "$fake_driver/libcuda.so.1" ]] ||
  fail "FAKE_CUDA_DIR names no stand-in driver ($fake_driver)"

printf 'extern "C" __global__ void scale(float* x) { x[threadIdx.x] *= 2.0f; }\n' >"$T/src/scale.cu"
for target in sm_80_108 sm_75_40; do
  compile_raw --backend nvrtc --source src/scale.cu --kernel scale --target "$target"
  if ((RC != 0)); then
    grep -q "needs libnvrtc" <<<"$ERR" && skip_backend nvrtc "$ERR"
    fail "compiling for $target: $ERR"
  fi
done
run export --output "$T/sys"
expect_rc 0

LD_LIBRARY_PATH="$fake_driver" run info --json
expect_rc 0
python3 - "$OUT" <<'PY' || fail "kcache info --json on the stand-in GPU: $OUT"
import json, sys
packages = {p["db"]: p for p in json.loads(sys.argv[1])["packages"]}
assert packages["sm_80_108"]["applies"] is True, packages["sm_80_108"]
assert packages["sm_75_40"]["applies"] is False, packages["sm_75_40"]
assert packages["sm_75_40"]["why_not"] == \
    "it is for sm_75_40, and this machine's CUDA devices are sm_80_108", packages["sm_75_40"]
PY
LD_LIBRARY_PATH="$fake_driver" run info
expect_contains "in words" "sm_75_40.kdb: 1 kernel, does not apply: it is for sm_75_40, and this machine's CUDA devices are sm_80_108" "$OUT"

# Without a driver (a machine with no GPU, as CI is): applies as far as the
# toolchain goes, the target said to be unchecked.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  run info --json
  expect_rc 0
  python3 - "$OUT" <<'PY' || fail "kcache info --json without a GPU: $OUT"
import json, sys
packages = {p["db"]: p for p in json.loads(sys.argv[1])["packages"]}
for db in ("sm_80_108", "sm_75_40"):
    assert packages[db]["applies"] is True, packages[db]
    assert "no CUDA device answers here, so its target %s is not checked" % db in packages[db]["note"], packages[db]
PY
fi
pass
