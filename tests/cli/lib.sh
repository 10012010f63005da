# shellcheck shell=bash disable=SC2034
# Helpers for the kcache CLI scenarios; sourced by every tests/cli/*.sh.
#
# A scenario exits 0 when it passes, 1 when it fails (with what was expected
# and what was seen on stderr), 125 when it is skipped (with the reason).
# The tool is $KCACHE (CTest passes $<TARGET_FILE:kcache_tool>).
#
# fresh_env gives the scenario its own temporary folder $T and points every
# place kcache reads or writes into it:
#   KCACHE_CUSTOM_CACHE_DIR=$T/cache  (not created: kcache creates it)
#   KCACHE_SYSTEM_DB_PATH=$T/sys      (an empty folder)
#   HOME=$T/home                      (an empty folder)
#   XDG_CACHE_HOME=$T/xdg             (not created)
#   TMPDIR=$T/tmp                     (an empty folder; kcache's private
#                                     fallback folder would go there)
# and removes every other KCACHE_* variable, so the caller's environment
# cannot change the result. $T is removed on exit (KCACHE_TEST_KEEP=1 keeps
# it and prints where it is).
#
# run ARGS...    runs "$KCACHE ARGS..." and sets RC, OUT (stdout), ERR (stderr)
# compile ARGS...  "kcache compile --json" with the deterministic command
#                backend ("cp {in} {out}", compiler id test-cp, target
#                gfx906_60 unless ARGS give one); on success it sets TIER, KEY,
#                DB, TARGET, BYTES, ELAPSED, ENABLED from the JSON.
# compile_raw ARGS...  the same with only --json added.

set -u
set -o pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TEST_NAME="$(basename "$0" .sh)"

fail() {
  echo "FAIL [cli.${TEST_NAME}]: $*" >&2
  if [[ -n "${OUT:-}" || -n "${ERR:-}" ]]; then
    echo "--- last command: ${LAST_CMD:-}" >&2
    echo "--- exit status: ${RC:-}" >&2
    echo "--- stdout:" >&2
    printf '%s\n' "${OUT:-}" >&2
    echo "--- stderr:" >&2
    printf '%s\n' "${ERR:-}" >&2
  fi
  exit 1
}

skip() {
  echo "SKIP [cli.${TEST_NAME}]: $*"
  exit 125
}

# pass [WHAT]: the scenario's end, all of it passed (exits 0). A check in
# the middle that says what passed is `checked WHAT`, never `pass`: the
# lines after a pass would never run.
pass() {
  echo "PASS [cli.${TEST_NAME}]${1:+: $1}"
  exit 0
}

checked() {
  echo "ok [cli.${TEST_NAME}]: $*"
}

# expect_eq WHAT EXPECTED SEEN
expect_eq() {
  [[ "$2" == "$3" ]] || fail "$1: expected '$2', seen '$3'"
}

# expect_ne WHAT UNWANTED SEEN
expect_ne() {
  [[ "$2" != "$3" ]] || fail "$1: expected anything but '$2', seen '$3'"
}

# expect_rc EXPECTED (checks $RC of the last run)
expect_rc() {
  [[ "${RC}" == "$1" ]] || fail "exit status of '${LAST_CMD}': expected $1, seen ${RC}"
}

# expect_contains WHAT NEEDLE HAYSTACK
expect_contains() {
  [[ "$3" == *"$2"* ]] || fail "$1: expected to contain '$2', seen '$3'"
}

# expect_not_contains WHAT NEEDLE HAYSTACK
expect_not_contains() {
  [[ "$3" != *"$2"* ]] || fail "$1: expected not to contain '$2', seen '$3'"
}

# count_lines TEXT EXACT_LINE: how many lines of TEXT equal EXACT_LINE.
count_lines() {
  local n=0 line
  while IFS= read -r line; do
    [[ "$line" == "$2" ]] && n=$((n + 1))
  done <<<"$1"
  echo "$n"
}

# count_prefix TEXT PREFIX: how many lines of TEXT start with PREFIX.
count_prefix() {
  local n=0 line
  while IFS= read -r line; do
    [[ "$line" == "$2"* ]] && n=$((n + 1))
  done <<<"$1"
  echo "$n"
}

# json_get JSON PATH: prints the value at PATH ("a.b.0.c"; "" is the root).
# Strings print raw, everything else as JSON. Fails the test when JSON does
# not parse or PATH is absent.
json_get() {
  local value
  value="$(python3 -S -E -c '
import json, sys
try:
    d = json.loads(sys.argv[1])
except Exception as e:
    print("not JSON: %s" % e, file=sys.stderr); sys.exit(3)
for part in [p for p in sys.argv[2].split(".") if p != ""]:
    try:
        d = d[int(part)] if isinstance(d, list) else d[part]
    except Exception:
        print("no %r in the JSON" % sys.argv[2], file=sys.stderr); sys.exit(4)
print(d if isinstance(d, str) else json.dumps(d, sort_keys=True))
' "$1" "$2" 2>&1)" || fail "json_get '$2': ${value}; the JSON was: $1"
  printf '%s\n' "$value"
}

# json_py JSON EXPR: prints the Python expression EXPR evaluated with d bound
# to the parsed JSON (str printed raw, the rest as JSON).
json_py() {
  local value
  value="$(python3 -S -E -c '
import json, sys
try:
    d = json.loads(sys.argv[1])
except Exception as e:
    print("not JSON: %s" % e, file=sys.stderr); sys.exit(3)
try:
    v = eval(sys.argv[2], {"d": d, "json": json})
except Exception as e:
    print("%s: %r" % (sys.argv[2], e), file=sys.stderr); sys.exit(4)
print(v if isinstance(v, str) else json.dumps(v, sort_keys=True))
' "$1" "$2" 2>&1)" || fail "json_py '$2': ${value}; the JSON was: $1"
  printf '%s\n' "$value"
}

# json_vars JSON NAME=PATH...: sets each bash variable NAME to the value at
# PATH (as json_get prints it), in one python run. NAME=?PATH gives "" when
# PATH is absent instead of failing.
json_vars() {
  local json="$1" code
  shift
  code="$(python3 -S -E -c '
import json, shlex, sys
try:
    d0 = json.loads(sys.argv[1])
except Exception as e:
    print("not JSON: %s" % e, file=sys.stderr); sys.exit(3)
for spec in sys.argv[2:]:
    name, path = spec.split("=", 1)
    optional = path.startswith("?")
    path = path.lstrip("?")
    d = d0
    try:
        for part in [p for p in path.split(".") if p != ""]:
            d = d[int(part)] if isinstance(d, list) else d[part]
    except Exception:
        if optional:
            d = ""
        else:
            print("no %r in the JSON" % path, file=sys.stderr); sys.exit(4)
    v = d if isinstance(d, str) else json.dumps(d, sort_keys=True)
    print("%s=%s" % (name, shlex.quote(v)))
' "$json" "$@" 2>&1)" || fail "json_vars $*: ${code}; the JSON was: ${json}"
  eval "$code"
}

# setting JSON NAME FIELD: a field ("value", "origin") of one setting of
# `kcache info --json`.
setting() {
  json_py "$1" "[s['$3'] for s in d['settings'] if s['name'] == '$2'][0]"
}

cleanup() {
  local rc=$?
  if [[ -n "${T:-}" && -d "${T}" ]]; then
    if [[ "${KCACHE_TEST_KEEP:-0}" == 1 ]]; then
      echo "kept ${T}" >&2
    else
      chmod -R u+rwX "${T}" 2>/dev/null
      rm -rf "${T}"
    fi
  fi
  exit "$rc"
}

fresh_env() {
  [[ -n "${KCACHE:-}" ]] || fail "KCACHE must name the kcache tool (CTest sets it)"
  [[ -x "${KCACHE}" ]] || fail "the kcache tool ${KCACHE} is not an executable file; build kcache_tool"
  command -v python3 >/dev/null || skip "python3 is needed for the JSON checks"
  local var
  for var in $(compgen -e); do
    [[ "$var" == KCACHE_* ]] && unset "$var"
  done
  T="$(mktemp -d "${TMPDIR:-/tmp}/kcache-cli-${TEST_NAME}.XXXXXX")" || fail "mktemp -d failed"
  trap cleanup EXIT
  mkdir -p "$T/sys" "$T/home" "$T/src" "$T/out" "$T/tmp"
  export TMPDIR="$T/tmp"
  export KCACHE_CUSTOM_CACHE_DIR="$T/cache"
  export KCACHE_SYSTEM_DB_PATH="$T/sys"
  export HOME="$T/home"
  export XDG_CACHE_HOME="$T/xdg"
  cd "$T" || fail "cd $T"
  # A source for the command backend; "cp {in} {out}" makes the binary a copy.
  printf 'kernel void add(global int* a) { a[get_global_id(0)] += 1; }\n' >"$T/src/add.cl"
  printf 'kernel void mul(global int* a) { a[get_global_id(0)] *= 2; }\n' >"$T/src/mul.cl"
}

# run ARGS...: runs the tool; sets RC, OUT, ERR, LAST_CMD. Never exits.
run() {
  LAST_CMD="kcache $*"
  local out_file="$T/.stdout" err_file="$T/.stderr"
  "$KCACHE" "$@" >"$out_file" 2>"$err_file"
  RC=$?
  OUT="$(cat "$out_file")"
  ERR="$(cat "$err_file")"
  rm -f "$out_file" "$err_file"
}

CP_ARGS=(--backend command --command "cp {in} {out}" --compiler-id test-cp)

# compile_raw ARGS...: runs "kcache compile --json ARGS" like run; on exit 0
# also sets TIER, KEY, DB, TARGET, BYTES, ELAPSED (the contract's fields,
# which must be there) and ENABLED (cache_enabled, "" when absent).
compile_raw() {
  TIER="" KEY="" DB="" TARGET="" BYTES="" ELAPSED="" ENABLED=""
  run compile --json "$@"
  if ((RC == 0)); then
    json_vars "$OUT" TIER=tier KEY=key DB=db TARGET=target BYTES=bytes ELAPSED=elapsed_ms \
      ENABLED=?cache_enabled
  fi
}

# compile ARGS...: compile_raw with the command backend ("cp {in} {out}",
# compiler id test-cp) and --target gfx906_60 unless ARGS give a --target.
compile() {
  local has_target=0 a
  for a in "$@"; do [[ "$a" == --target ]] && has_target=1; done
  if ((has_target)); then
    compile_raw "${CP_ARGS[@]}" "$@"
  else
    compile_raw "${CP_ARGS[@]}" --target gfx906_60 "$@"
  fi
}

# compile_ok ARGS...: compile, and fail unless it exited 0 with the JSON.
compile_ok() {
  compile "$@"
  expect_rc 0
}

# The version folder kcache appends: the version of `kcache --version`, which
# must equal `kcache info --json`'s.
kcache_version() {
  local line json v1 v2
  line="$("$KCACHE" --version)" || fail "kcache --version failed"
  v1="$(awk '{print $2}' <<<"$line")"
  [[ "$line" == "kcache $v1"* && -n "$v1" ]] || fail "kcache --version: expected 'kcache <version> ...', seen '$line'"
  json="$("$KCACHE" info --json)" || fail "kcache info --json failed"
  v2="$(json_get "$json" version)"
  expect_eq "version of 'kcache info --json' vs 'kcache --version'" "$v1" "$v2"
  printf '%s\n' "$v1"
}

# Skips when this build of kcache has the cache turned off (KCACHE_BUILD_DEV
# or an empty KCACHE_CACHE_DIR): the scenarios need a cache.
require_enabled_build() {
  local json enabled reason
  json="$("$KCACHE" info --json)" || fail "kcache info --json failed"
  json_vars "$json" enabled=enabled reason=?disabled_reason
  if [[ "$enabled" != true ]]; then
    skip "this kcache build has the cache disabled ($reason)"
  fi
}

# snapshot DIR: a listing of everything under DIR (DIR included) with type,
# mode, size, mtime and ctime, sorted; for "nothing was written" checks.
snapshot() {
  find "$1" -printf '%P|%y|%m|%s|%T@|%C@\n' | LC_ALL=C sort
}

# entry_keys DIR: "<db> <key>" for every entry present in the user-tier
# logs (<db>.ukdb) under DIR, one a line, sorted. Reads the logs as
# docs/formats.md §3 describes them (records back to back from byte 64,
# 8-aligned; a removal hides its key), independently of kcache's code.
entry_keys() {
  [[ -d "$1" ]] || return 0
  find "$1" -name '*.ukdb' -type f -print0 | xargs -0 -r python3 -c '
import os, struct, sys
for path in sys.argv[1:]:
    data = open(path, "rb").read()
    db = os.path.basename(path)[: -len(".ukdb")]
    present, at = {}, 64
    while at + 4 <= len(data):
        magic = data[at:at + 4]
        if magic == b"KCEN" and at + 88 <= len(data):
            m, t, s = struct.unpack_from("<III", data, at + 48)
            present[data[at + 16:at + 32].hex()] = True
            at += (88 + m + t + s + 7) // 8 * 8
        elif magic == b"KCRM":
            present.pop(data[at + 8:at + 24].hex(), None)
            at += 32
        else:
            break
    for key in present:
        print(db, key)
' | LC_ALL=C sort
}

# has_entry DIR DB KEY: whether the user dir DIR holds KEY in database DB.
has_entry() {
  grep -qx "$2 $3" <<<"$(entry_keys "$1")"
}

# warnings TEXT: the "kcache: Warning" lines of TEXT, but for the missing
# system package (every scenario with an empty $T/sys has that one).
warnings() {
  grep '^kcache: Warning' <<<"$1" | grep -v 'Missing system database file' || true
}

# warning_count TEXT: how many lines `warnings` prints.
warning_count() {
  local w
  w="$(warnings "$1")"
  if [[ -z "$w" ]]; then echo 0; else wc -l <<<"$w" | tr -d ' '; fi
}

# file_count DIR: how many files are under DIR (0 when it does not exist).
file_count() {
  if [[ -e "$1" ]]; then find "$1" -type f | wc -l | tr -d ' '; else echo 0; fi
}

# The backends that must start, captured when this file is sourced (before
# fresh_env drops every KCACHE_* variable): KCACHE_REQUIRE_BACKENDS, a comma
# list such as "opencl,hip,nvrtc" (CI sets it).
REQUIRED_BACKENDS="${KCACHE_REQUIRE_BACKENDS:-}"

# skip_backend BACKEND REASON: BACKEND cannot start. Skips (125), saying
# REASON, or fails (1) when KCACHE_REQUIRE_BACKENDS names BACKEND. Only for
# a missing backend: a missing GPU or service stays a plain skip.
skip_backend() {
  if [[ ",${REQUIRED_BACKENDS// /}," == *",$1,"* ]]; then
    fail "backend $1 is required (KCACHE_REQUIRE_BACKENDS=${REQUIRED_BACKENDS}) but cannot start: $2"
  fi
  skip "backend $1 cannot start: $2"
}

# A good package of src/add.cl for gfx906_60 at $good
# ($T/export/gfx906_60.kdb), made through the user cache (the compiled
# binary at out/compiled.bin), which is then left for a fresh one
# ($T/cache2): what follows is served by the system folder or compiled.
make_good_package() {
  compile_ok --source src/add.cl --output out/compiled.bin
  export_package "$T/export"
  good="$EXPORTED"
  export KCACHE_CUSTOM_CACHE_DIR="$T/cache2"
}

# export_package DIR: the user cache's gfx906_60 entries exported into
# DIR; $EXPORTED is the package's path.
export_package() {
  mkdir -p "$1"
  run export --output "$1"
  expect_rc 0
  EXPORTED="$1/gfx906_60.kdb"
  [[ -s "$EXPORTED" ]] || fail "export wrote no $EXPORTED"
}
