#!/bin/sh
# fake_cc.sh IN OUT [OPTIONS...]: a compiler for the CLI scenarios.
# Fails with a log on stderr (exit 1) when the source holds the marker
# FAKE_COMPILE_ERROR; otherwise writes the source, then a line with the
# options, to OUT (so different options give different binaries).
in=$1
out=$2
shift 2
if grep -q FAKE_COMPILE_ERROR "$in"; then
  echo "fake_cc: $in:1: error: FAKE_COMPILE_ERROR marker found" >&2
  exit 1
fi
cat "$in" >"$out" && printf 'options: %s\n' "$*" >>"$out"
