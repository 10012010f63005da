#!/usr/bin/env bash
# c_api.c99_covers_header: every function kcache/c_api.h declares is called
# by c_api_c99_test.c, so the C99 program keeps using all of the C API as
# it grows. Usage: c99_covers_header.sh HEADER PROGRAM
set -euo pipefail
header="$1"
program="$2"
mapfile -t functions < <(grep -o 'KCACHE_EXPORT [^(]*(' "$header" | sed 's/.*[ *]\([a-z_0-9]*\)($/\1/' | sort -u)
((${#functions[@]} > 0)) || { echo "FAIL: no KCACHE_EXPORT function found in $header"; exit 1; }
missing=()
for f in "${functions[@]}"; do
  grep -q "\\b$f\\b" "$program" || missing+=("$f")
done
if ((${#missing[@]} > 0)); then
  echo "FAIL: $program does not call: ${missing[*]}"
  exit 1
fi
echo "PASS: $program calls all ${#functions[@]} functions of $header"
