#!/usr/bin/env bash
# scripts/check_layers.py passes kcache's src/ and fails a tree whose
# includes run up the layers, naming each one.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
check="$here/scripts/check_layers.py"

python3 "$check" "$here/src"

tree="$(mktemp -d)"
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree"/{base,store,core,inputs,sign}
printf '#include "base/log.h"\n#include "store/tier.h"\n' > "$tree/core/cache.cpp"
printf '#include "core/log.h"\n' > "$tree/store/tier.h"            # up a floor
printf '#include "sign/signer.h"\n' > "$tree/inputs/scan.cpp"       # a sibling
printf '#include <kcache/cache.h>\n' > "$tree/sign/signer.h"        # the facade
printf '#include "env/env.h"\n' > "$tree/base/log.h"                # up from the ground

set +e
out="$(python3 "$check" "$tree")"
rc=$?
set -e
echo "$out"
[ "$rc" -eq 1 ] || { echo "FAIL: expected exit 1, got $rc"; exit 1; }
for want in 'store/tier.h:1: store/ includes a higher floor' \
            'inputs/scan.cpp:1: inputs/ includes a sibling floor' \
            'sign/signer.h:1: sign/ includes the facade' \
            'base/log.h:1: base/ includes a higher floor' \
            '4 include(s) run up the layers'; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: missing '$want'"; exit 1; }
done
if grep -q 'core/cache.cpp' <<<"$out"; then echo "FAIL: a downward include was reported"; exit 1; fi
echo "PASS"
