#!/usr/bin/env bash
# Fails, naming each file, when a tracked C or C++ file is not as
# clang-format (.clang-format) writes it. CI runs it; fix with
#   git ls-files '*.c' '*.cpp' '*.h' | xargs clang-format -i
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.cpp' '*.h' '*.hpp')
else  # a copy without .git: the sources, not build folders
  mapfile -t files < <(find include src tools tests bench examples \
    \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.hpp' \) -type f | sort)
fi
if ! clang-format --dry-run -Werror "${files[@]}"; then
  echo "check-format: the files above are not formatted (clang-format -i FILE)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
