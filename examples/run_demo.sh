#!/usr/bin/env bash
# The demo's main job: the kernel library run twice against one fresh kcache
# cache. The first run compiles every kernel (cold), the second loads every
# kernel from the cache (warm); the second prints the total speed-up.
#
#   examples/run_demo.sh [CACHE_DIR] [-- DEMO_OPTIONS...]
#
# CACHE_DIR: an empty or new folder to use as the cache (kept afterwards, so
# `kcache list` can show it); without it a temporary one is made and removed.
# DEMO_OPTIONS go to both runs, e.g. `-- --quick`.
# The demo binary is $KCACHE_DEMO, or build/examples/kcache_demo in the repo.
set -euo pipefail

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=SCRIPTDIR/demo_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/demo_lib.sh"

demo=${KCACHE_DEMO:-$repo_root/build/examples/kcache_demo}
demo_require_binary run_demo.sh "$demo" kcache_demo KCACHE_DEMO "$repo_root"
demo_parse_arguments "$@"
demo_make_work_dir kcache-demo
demo_pick_cache_dir run_demo.sh
demo_use_only_cache "$cache_dir"
demo_run_cold_and_warm run_demo.sh "$demo" "${demo_options[@]}"
