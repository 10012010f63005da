# shellcheck shell=bash disable=SC2034
# Sourced after lib.sh by the scenarios that attack the tool with inputs
# that once hung it or filled its memory: every run there is bounded, so a
# regression fails the scenario instead of hanging CTest or the machine.
#
# run_bounded LIMIT ARGS...  like run, but kcache is killed (SIGKILL) after
#                LIMIT seconds and may map at most 4 GiB (not under ASan or TSan,
#                which maps far more); sets RC, OUT, ERR, LAST_CMD and
#                ELAPSED_MS, and fails the scenario when it was killed.

command -v timeout >/dev/null || skip "timeout (coreutils) is needed to bound the runs"

# ldd's output is read whole first: with pipefail, `ldd | grep -q` fails at
# random when grep exits at its match and ldd dies writing the rest (SIGPIPE).
KCACHE_UNDER_SANITIZER=0
libraries="$(ldd "$KCACHE" 2>/dev/null || true)"
if [[ "$libraries" =~ lib(asan|tsan) ]]; then KCACHE_UNDER_SANITIZER=1; fi

run_bounded() {
  local limit=$1 start
  shift
  LAST_CMD="kcache $*"
  start=$(date +%s%N)
  (
    ((KCACHE_UNDER_SANITIZER)) || ulimit -v $((4 * 1024 * 1024))
    exec timeout -s KILL "$limit" "$KCACHE" "$@"
  ) >"$T/.stdout" 2>"$T/.stderr"
  RC=$?
  ELAPSED_MS=$((($(date +%s%N) - start) / 1000000))
  OUT="$(cat "$T/.stdout")"
  ERR="$(cat "$T/.stderr")"
  rm -f "$T/.stdout" "$T/.stderr"
  ((RC != 137)) || fail "'${LAST_CMD}' did not finish within ${limit} s (killed)"
}

# binary_count: how many binaries (not remembered failures) the user cache
# lists.
binary_count() {
  run list --json
  expect_rc 0
  json_py "$OUT" 'len([e for e in d if not e["failure"]])'
}
