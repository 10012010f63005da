#!/usr/bin/env bash
# Installs what kcache needs to build, test and run its demo on Debian 12.
# Runs apt-get through sudo when not root. Safe to run again.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config ccache clang-format
  # library dependencies
  libzstd-dev libxxhash-dev libssl-dev
  # POSIX ACLs: who else may write a package, a key or the cache folder
  libacl1-dev
  # package signatures: libsodium's header to build, the library to sign and check (dlopen)
  libsodium-dev
  # tool, tests, benchmarks
  libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev python3
  # fuzzing (tests/fuzz): clang with its libFuzzer and sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # OpenCL: headers for the build, the ICD loader and PoCL (a CPU platform) to run
  opencl-headers ocl-icd-opencl-dev pocl-opencl-icd clinfo
  # a real OpenCL program for the OpenCL layer's tests: CLBlast's own test programs
  clblast-tests
  # HIP: hipRTC (libamdhip64, ROCm 5.2) and comgr, to run the hip tests (not to build)
  libamdhip64-5
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "kcache: dependencies installed"
