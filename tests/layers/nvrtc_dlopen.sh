#!/usr/bin/env bash
# NVRTC opened by its path under `kcache run` (the dlsym layer, docs/design.md
# §10.3): a program that opens the library itself as cuda-python's loader does
# (tests/layers/nvrtc/dlopen_probe.py: ctypes, the toolkit's path, a wheel's
# nvidia/cuda_nvrtc/lib, functions looked up on the handle or in the global
# scope; a missing file, an RTLD_NOLOAD probe, dlclose and reopen, threads,
# the soname beside the path) sees what it sees without kcache, cold and
# warm; its compiles are counted and the warm run compiles nothing; the
# stand-in forwards to the very library the program opened;
# KCACHE_LAYER_DISABLE=1 turns it off. What cannot be served is said once
# and left to the real library: a version with no stand-in (a fake
# libnvrtc.so.7), a second file of a version already served
# (libnvrtc.alt.so.13 beside libnvrtc.so.13), a library opened with dlmopen.
# Run for every real NVRTC here: the toolkit's 13 (and libnvrtc.alt.so.13),
# Debian's 11.2, and those of KCACHE_TEST_NVRTC_PATH (NVRTC 12 on CI, opened
# from a wheel's folder).
# Environment (CTest): KCACHE, FAKE_NVRTC (the libnvrtc.so.7);
# KCACHE_TEST_NVRTC_PATH (optional): folders, ':'-separated, of more real
# libnvrtc versions.
fake="${FAKE_NVRTC:?FAKE_NVRTC must name the fake libnvrtc.so.7}"
extra_path="${KCACHE_TEST_NVRTC_PATH:-}"  # read before fresh_env drops KCACHE_*
probe_py="$(cd "$(dirname "$0")" && pwd)/nvrtc/dlopen_probe.py"  # before fresh_env changes folder
source "$(dirname "$0")/../cli/lib.sh"
source "$(dirname "$0")/probe_lib.sh"
fresh_env
require_enabled_build
probe_setup ""  # not run under the sanitizers (CMakeLists.txt)

# The program's own environment: no LD_LIBRARY_PATH (it opens NVRTC by path).
unset LD_LIBRARY_PATH

# probe NAME [ENV...] -- ARGS...: the probe without kcache; under_kcache
# NAME [ENV...] -- ARGS...: the same under `kcache run`.
probe() {
  local name="$1" env=()
  shift
  while [[ "$1" != -- ]]; do env+=("$1"); shift; done
  shift
  run_probe "$name" env "${env[@]}" python3 "$probe_py" "$@"
}
under_kcache() {
  local name="$1" env=()
  shift
  while [[ "$1" != -- ]]; do env+=("$1"); shift; done
  shift
  run_probe "$name" env "${env[@]}" "$KCACHE" run -- python3 "$probe_py" "$@"
}
# layer_warnings: the dlsym layer's warnings in the last run's stderr.
layer_warnings() { grep '^kcache: Warning \[Layer\]' "$T/$1.err" || true; }

# The real libraries, by the path a program names: the toolkit's (and its
# alternative build, served by the stand-in of its version), the loader
# cache's, those of KCACHE_TEST_NVRTC_PATH; one of each file.
candidates=(/usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda/lib64/libnvrtc.alt.so.13)
while read -r path; do candidates+=("$path"); done < <(
  /sbin/ldconfig -p 2>/dev/null | awk '/libnvrtc\.so\.(13|12|11\.2) .*x86-64/ {print $NF}')
extra_dirs=()
[[ -n "$extra_path" ]] && IFS=: read -r -a extra_dirs <<<"$extra_path"
for dir in "${extra_dirs[@]}"; do
  compgen -G "$dir/libnvrtc.so.*" >/dev/null ||
    fail "KCACHE_TEST_NVRTC_PATH names $dir, which holds no libnvrtc.so.*"
  for soname in libnvrtc.so.13 libnvrtc.so.12 libnvrtc.so.11.2; do
    [[ -f "$dir/$soname" ]] && candidates+=("wheel:$dir/$soname")
  done
done
libraries=()
seen=" "
for candidate in "${candidates[@]}"; do
  file="${candidate#wheel:}"
  [[ -f "$file" ]] || continue
  real="$(readlink -f "$file")"
  [[ "$seen" == *" $real "* ]] && continue
  seen+="$real "
  if [[ "$candidate" == wheel:* ]]; then
    # A wheel's folder, as pip lays it out: the library and its builtins.
    wheel="$T/site-packages-$((${#libraries[@]}))/nvidia/cuda_nvrtc/lib"
    mkdir -p "$wheel"
    for lib in "$(dirname "$real")"/libnvrtc*; do ln -s "$lib" "$wheel/"; done
    file="$wheel/$(basename "$file")"
  fi
  libraries+=("$file")
done
((${#libraries[@]} > 0)) || skip_backend nvrtc "no real libnvrtc.so.13, .12 or .11.2 here"

# Each library with its functions looked up on its handle, and (but the
# alternative build) as cuda.bindings looks them up: in the global scope
# first, where the preloaded stand-ins are, which must not answer for an
# NVRTC the program has not loaded (another version: Debian's 11.8, a
# wheel's 12); the toolkit's 13 also by its soname in the same process.
cases=()
for library in "${libraries[@]}"; do
  cases+=("$library")
  case "$(basename "$library")" in
    libnvrtc.so.13) cases+=("$library --global --also libnvrtc.so.13") ;;
    libnvrtc.so.*) cases+=("$library --global") ;;
  esac
done
for case in "${cases[@]}"; do
  read -r library flags <<<"$case"
  label="$(basename "$library")${flags:+-global}"
  export KCACHE_CUSTOM_CACHE_DIR="$T/cache-$label"
  args=("$library" "$T/inc")
  [[ -n "$flags" ]] && read -r -a more <<<"$flags" && args+=("${more[@]}")

  probe "$label.base" -- "${args[@]}"
  ((RC == 0)) || fail "the probe fails without kcache on $library (rc $RC): $(tail -n 5 "$T/$label.base.out" "$T/$label.base.err")"
  grep -q '^first cubin compile: rc 0$' "$T/$label.base.out" ||
    fail "the probe's compile fails without kcache on $library: $(head -n 30 "$T/$label.base.out")"

  under_kcache "$label.cold" KCACHE_LOG_LEVEL=info -- "${args[@]}"
  ((RC == 0)) || fail "the probe fails under kcache run (cold) on $library: $ERR"
  same_as "$label.base" "$label.cold"
  ((compiles = $(stat_of compiles))) && ((compiles > 0)) ||
    fail "kcache run compiled nothing through kcache for $library (not served)"
  # The stand-in forwards to the library the program opened (a wheel's
  # NVRTC may be another build than the system's): that file, by whatever
  # name (looked up in the global scope, the preloaded stand-in is found
  # first and names the file as its own search found it).
  served="$(sed -n 's/.*compiles through \(.*\) are served.*/\1/p' "$T/$label.cold.err")"
  [[ -n "$served" && "$(readlink -f "$served")" == "$(readlink -f "$library")" ]] ||
    fail "the stand-in does not forward to $library: $(grep -h 'compiles through' "$T/$label.cold.err")"
  [[ -z "$(layer_warnings "$label.cold")" ]] || fail "warnings for $library: $(layer_warnings "$label.cold")"
  requests_cold="$(stat_of requests)"

  under_kcache "$label.warm" -- "${args[@]}"
  ((RC == 0)) || fail "the probe fails under kcache run (warm) on $library"
  same_as "$label.base" "$label.warm"
  [[ -z "$ERR" ]] || fail "kcache printed on the program's stderr without being asked: $ERR"
  expect_eq "compiles after the warm run on $library" "$compiles" "$(stat_of compiles)"
  # The cubin and the PTX, and the four threads' kernels (the same compiles
  # again in the process are memory hits).
  hits="$(stat_of user_hits)"
  ((hits >= 6)) || fail "the warm run on $library has $hits user-tier hits, not one per kernel it can serve (6)"
  ((requests_cold < $(stat_of requests))) || fail "the warm run on $library asked kcache nothing"

  before="$(stat_of requests)"
  under_kcache "$label.off" KCACHE_LAYER_DISABLE=1 -- "${args[@]}"
  ((RC == 0)) || fail "the probe fails with KCACHE_LAYER_DISABLE=1 on $library"
  same_as "$label.base" "$label.off"
  expect_eq "requests with KCACHE_LAYER_DISABLE=1 on $library" "$before" "$(stat_of requests)"
  checked "$library ${flags:-looked up on its handle} served"
done

# What kcache cannot serve is said once, and the program sees what it sees
# without kcache.
export KCACHE_CUSTOM_CACHE_DIR="$T/cache-refused"
refused="$T/refused.py"
cat >"$refused" <<'PY'
import ctypes, os, sys
RTLD_NOW, LM_ID_NEWLM = os.RTLD_NOW, -1
libdl = ctypes.CDLL(None)
libdl.dlmopen.restype = ctypes.c_void_p
libdl.dlmopen.argtypes = (ctypes.c_long, ctypes.c_char_p, ctypes.c_int)
libdl.dlsym.restype = ctypes.c_void_p
libdl.dlsym.argtypes = (ctypes.c_void_p, ctypes.c_char_p)
for mode, path in zip(sys.argv[1::2], sys.argv[2::2]):
    handle = libdl.dlmopen(LM_ID_NEWLM, path.encode(), RTLD_NOW) if mode == "dlmopen" else None
    if mode == "dlmopen" and not handle:
        print("dlmopen %s: failed" % path)
        continue
    for _ in range(3):  # looked up and called three times: one warning
        if mode == "dlmopen":
            version = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
                libdl.dlsym(handle, b"nvrtcVersion"))
        else:
            version = ctypes.CDLL(path).nvrtcVersion
        major, minor = ctypes.c_int(), ctypes.c_int()
        rc = version(ctypes.byref(major), ctypes.byref(minor))
    print("%s %s: rc %d %d.%d" % (mode, os.path.basename(path), rc, major.value, minor.value))
PY
refusals=(open "$fake")
toolkit=/usr/local/cuda/lib64/libnvrtc.so.13
[[ -f "$toolkit" ]] || toolkit="${libraries[0]}"
refusals+=(dlmopen "$toolkit")
alternative="$(dirname "$(readlink -f "$toolkit")")/libnvrtc.alt.so.13"
[[ "$toolkit" == *libnvrtc.so.13 && -f "$alternative" ]] && refusals+=(open "$toolkit" open "$alternative")
run_probe refused_base env python3 "$refused" "${refusals[@]}"
((RC == 0)) || fail "the refusals' program fails without kcache: $ERR"
run_probe refused env "$KCACHE" run -- python3 "$refused" "${refusals[@]}"
((RC == 0)) || fail "the refusals' program fails under kcache run: $ERR"
same_as refused_base refused
warned="$(layer_warnings refused)"
expect_eq "warnings for a version with no stand-in" 1 \
  "$(grep -c "NVRTC calls through $fake are not cached: kcache has no stand-in for its version" <<<"$warned")"
expect_eq "warnings for a library opened with dlmopen" 1 \
  "$(grep -c "NVRTC calls through $toolkit are not cached: it was loaded into a link namespace of its own" <<<"$warned")"
expected=2
if [[ " ${refusals[*]} " == *" $alternative "* ]]; then
  expect_eq "warnings for a second libnvrtc.so.13" 1 \
    "$(grep -c "NVRTC calls through $alternative are not cached: this process's libnvrtc.so.13 calls are served through $toolkit" <<<"$warned")"
  expected=3
else
  echo "note: no libnvrtc.alt.so.13 beside $toolkit; a second library of one version not tested"
fi
expect_eq "the layer's warnings" "$expected" "$(wc -l <<<"$warned")"
pass "tested: ${libraries[*]}"
