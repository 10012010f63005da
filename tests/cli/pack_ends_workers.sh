#!/usr/bin/env bash
# A pack's workers, and the compilers they run, end with the pack however
# it ends (issue 11): SIGTERM, SIGINT or SIGHUP to the pack alone, or
# SIGKILL; with --jobs 1 too (its compile ran in the pack's own process,
# and a kill left the compiler running). They were left compiling before (a compile may take minutes),
# beside the pack run again to go on. Here each compile writes its pid and
# waits; once two run, the pack is signalled, and every process it started
# must be gone.
source "$(dirname "$0")/lib.sh"
fresh_env
require_enabled_build

printf 'kernel void sub(global int* a) { a[get_global_id(0)] -= 1; }\n' >"$T/src/sub.cl"
export KCACHE_RECORD="$T/m.jsonl"
for name in add mul sub; do compile_ok --source "src/$name.cl"; done
unset KCACHE_RECORD
cat >"$T/waits.sh" <<EOF
#!/bin/sh
echo \$\$ >>"$T/pids"
exec sleep 600
EOF
chmod +x "$T/waits.sh"
python3 - "$T/m.jsonl" "$T/waits.jsonl" "$T/waits.sh" <<'PY' || fail "could not write the waiting lines"
import json, sys
with open(sys.argv[2], "w") as out:
    for text in open(sys.argv[1]):
        line = json.loads(text)
        line["compiler"]["id"] = line["compiler"]["id"].replace("cp {in} {out}", sys.argv[3] + " {in} {out}")
        out.write(json.dumps(line) + "\n")
PY

# alive PID: the process is there and not a zombie (an init that does not
# reap leaves those).
alive() {
  local state
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [[ -n "$state" && "$state" != Z ]]
}

declare -A status_of=([TERM]=143 [INT]=130 [HUP]=129 [KILL]=137)
for jobs in 2 1; do
for signal in TERM INT HUP KILL; do
  rm -rf "$T/pids" "$T/pkg"
  "$KCACHE" pack --manifest "$T/waits.jsonl" --target gfx906_60 --output "$T/pkg/w.kdb" --jobs "$jobs" \
    >"$T/.out" 2>"$T/.err" &
  pack=$!
  for ((tries = 0; tries < 3000; tries++)); do
    [[ -f "$T/pids" && "$(wc -l <"$T/pids")" -ge "$jobs" ]] && break
    alive "$pack" || break
    sleep 0.01
  done
  [[ -f "$T/pids" && "$(wc -l <"$T/pids")" -ge "$jobs" ]] ||
    fail "$jobs compiles were not seen running: $(cat "$T/.err")"
  workers=()
  read -r -a workers <"/proc/$pack/task/$pack/children" || true
  ((${#workers[@]} == jobs)) || fail "the pack's $jobs workers were not seen: ${workers[*]}"
  started=("${workers[@]}" $(cat "$T/pids"))
  kill "-$signal" "$pack"
  wait "$pack"
  RC=$?
  expect_eq "the pack's exit status after SIG$signal" "${status_of[$signal]}" "$RC"
  left=()
  for ((tries = 0; tries < 1000; tries++)); do
    left=()
    for pid in "${started[@]}"; do alive "$pid" && left+=("$pid"); done
    ((${#left[@]} == 0)) && break
    sleep 0.01
  done
  if ((${#left[@]} > 0)); then
    listing="$(ps -o pid=,pgid=,args= -p "$(IFS=,; echo "${left[*]}")" 2>&1)"
    kill -9 "${left[@]}" 2>/dev/null
    fail "after SIG$signal to the pack (--jobs $jobs), what it started still runs: $listing"
  fi
  checked "--jobs $jobs, SIG$signal: the pack's workers and compiles ended with it"
done
done
pass
