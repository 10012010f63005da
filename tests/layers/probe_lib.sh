# shellcheck shell=bash
# Helpers of the layer scenarios (tests/layers/*.sh), sourced after
# tests/cli/lib.sh: each scenario runs a probe program, which knows nothing
# of kcache, without a layer and under it, and compares what it printed.
#
# probe_setup SANITIZE  what every probe run needs, after fresh_env:
#                    a sanitized probe's runtime first (the layer after it),
#                    PoCL's own cache off (what is fast is kcache's doing),
#                    no kernel launched under ThreadSanitizer (PoCL's device
#                    threads trip it on their own: the probes then build and
#                    query only), and $T/inc/probe.h, which the probes
#                    include through -I
# run_probe NAME COMMAND...  runs COMMAND (a probe, with its environment)
#                    from $T, its stdout in $T/NAME.out and stderr in
#                    $T/NAME.err; sets RC, OUT, and ERR less the platform
#                    compiler's count of its warnings and a sanitizer's
#                    account of the leak suppressions it used
# same_as BASE NAME  fails unless the two runs printed the same
# stat_of FIELD      the count FIELD of the cache folder in use
# count_of DIR FIELD the count FIELD of the cache folder DIR

probe_setup() {
  [[ "$1" == *address* ]] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
  [[ "$1" == *thread* ]] && export LAYER_PROBE_NO_RUN=1
  export POCL_KERNEL_CACHE=0 POCL_CACHE_DIR="$T/pocl"
  mkdir -p "$T/inc"
  echo '#define OFFSET 7' >"$T/inc/probe.h"
}

run_probe() {
  local name="$1"
  shift
  (cd "$T" && "$@") >"$T/$name.out" 2>"$T/$name.err"
  RC=$?
  OUT="$(cat "$T/$name.out")"
  ERR="$(grep -Ev ' generated\.$|^-+$|^Suppressions used:|^ +count +bytes +template$|^ +[0-9]+ +[0-9]+ ' \
    "$T/$name.err")"
  LAST_CMD="probe $name: $*"
}

same_as() {
  diff "$T/$1.out" "$T/$2.out" >"$T/diff" ||
    fail "the program saw something else ($2) than without kcache ($1):
$(head -n 60 "$T/diff")"
}

stat_of() {
  run stats --json
  expect_rc 0
  json_get "$OUT" "counts.$1"
}

count_of() {
  KCACHE_CUSTOM_CACHE_DIR="$1" stat_of "$2"
}
