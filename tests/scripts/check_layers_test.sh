#!/usr/bin/env bash
# scripts/check_layers.py passes kcache's src/ and tools/ and fails a tree
# whose includes run up the layers, naming each one.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
check="$here/scripts/check_layers.py"

python3 "$check" "$here/src" "$here/tools"

tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/src/{base,env,store,core,inputs,sign,key,upkeep} "$tree"/tools/kcache
src="$tree/src"
printf '#include "base/log.h"\n#include "store/tier.h"\n#include <kcache/cache.h>\n' \
  > "$src/core/cache.cpp"                                          # the facade's own
printf '#include "core/log.h"\n' > "$src/store/tier.h"            # up a floor
printf '#include "sign/signer.h"\n' > "$src/inputs/scan.cpp"       # a sibling
printf '#include <kcache/cache.h>\n' > "$src/sign/signer.h"        # the facade
printf '#include "env/env.h"\n' > "$src/base/log.h"                # up from the ground
printf '#include "store/tier.h"\n' > "$src/key/key_builder.cpp"    # a sibling on floor 5
printf '#include "key/key_builder.h"\n' > "$src/upkeep/failures.cpp"  # down: fine
printf '#include <kcache/cache.h>\n' > "$src/core/tier_list.h"     # a helper of the facade
printf '' > "$src/env/env.cpp"
printf '' > "$src/env/env.h"
printf '' > "$src/env/unique_fd.h"
printf '#include "env/env.h"\n#include "env/unique_fd.h"\n#include "own.h"\n' \
  > "$tree/tools/kcache/main.cpp"
printf '' > "$tree/tools/kcache/own.h"

set +e
out="$(python3 "$check" "$src" "$tree/tools")"
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ] || { echo "FAIL: expected exit 1, got $rc"; exit 1; }
for want in 'store/tier.h:1: store/ includes a higher floor' \
            'inputs/scan.cpp:1: inputs/ includes a sibling floor' \
            'key/key_builder.cpp:1: key/ includes a sibling floor' \
            'sign/signer.h:1: sign/ includes the facade' \
            'core/tier_list.h:1: core/ includes the facade' \
            'base/log.h:1: base/ includes a higher floor' \
            'kcache/main.cpp:1: the tool includes "env/env.h", whose env.cpp it does not link' \
            '7 include(s) run up the layers'; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: missing '$want'"; exit 1; }
done
for fine in 'core/cache.cpp' 'upkeep/failures.cpp' 'unique_fd.h' 'own.h'; do
  if grep -qF "$fine" <<<"$out"; then echo "FAIL: an allowed include was reported: $fine"; exit 1; fi
done
echo "PASS"
