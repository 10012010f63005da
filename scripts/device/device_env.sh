# Sourced by the device scripts that run the Release build carried as
# build-device: from the repository root, `out` ($OUT, else gpu-out, made),
# `b` (build-device), and libkcache with the libraries it needs (deps/) on
# LD_LIBRARY_PATH, so a preloaded stand-in finds them in any process.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
b=$PWD/build-device
export LD_LIBRARY_PATH=$b/src:$b/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
