# Shared by the package tests (sourced, after PACKAGE_TEST names the test):
# failing now or later, skipping, and running a step with its output kept.

failures=0

fail_now() {
  echo "FAIL [$PACKAGE_TEST]: $*" >&2
  exit 1
}
# A failure that does not stop the later checks.
failed() {
  echo "FAIL [$PACKAGE_TEST]: $*" >&2
  failures=$((failures + 1))
}
skip() {
  echo "SKIP [$PACKAGE_TEST]: $*"
  exit 125
}
# step LOGNAME COMMAND...: runs COMMAND with its output in $T/LOGNAME.log;
# on failure prints the log and returns non-zero.
step() {
  local log="$T/$1.log"
  shift
  echo "+ $*" >"$log"
  if ! "$@" >>"$log" 2>&1; then
    echo "--- $log:" >&2
    cat "$log" >&2
    return 1
  fi
}
