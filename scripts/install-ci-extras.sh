#!/usr/bin/env bash
# Installs what CI needs beyond scripts/install-deps.sh, on Debian 12
# (bookworm): NVRTC, so that the NVRTC tests and the CUDA demo's compile-only
# run compile for real instead of skipping. Not needed to build or to pass
# the README's test command (without NVRTC those tests skip, saying why).
#
# NVRTC comes from Debian's non-free component: libnvrtc11.2 (NVRTC 11.8,
# sm_35..sm_90, about 60 MB with libnvrtc-builtins11.8). It brings no CUDA
# headers, so tests that include <cuda_fp16.h> still skip. The non-free
# component is added in its own file (deb822), for bookworm and
# bookworm-updates, when apt cannot find the package otherwise; nothing
# else of the machine's sources changes. Runs apt-get through sudo when not
# root. Safe to run again.
set -euo pipefail

packages=(libnvrtc11.2)
sources=/etc/apt/sources.list.d/kcache-debian-non-free.sources

# shellcheck source=/dev/null
. /etc/os-release
if [ "${VERSION_CODENAME:-}" != bookworm ]; then
  echo "install-ci-extras.sh: this is ${PRETTY_NAME:-an unknown system}, not Debian 12 (bookworm)" >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

candidate() { apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p'; }

if [ -z "$(candidate "${packages[0]}")" ] || [ "$(candidate "${packages[0]}")" = "(none)" ]; then
  $sudo tee "$sources" >/dev/null <<'EOF'
# Added by kcache's scripts/install-ci-extras.sh: Debian's non-free
# component, for NVRTC (libnvrtc11.2).
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  $sudo apt-get update -qq
fi
$sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

# kcache's nvrtc backend looks for libnvrtc.so.13, .12, then .11.2 on the
# loader's path (src/compiler/nvrtc/nvrtc_compiler.cpp): this one must be
# found that way.
# (grep reads all of ldconfig's list: with -q it would stop at the match,
# ldconfig would die of SIGPIPE, and pipefail would call that a failure.)
if ! /sbin/ldconfig -p | grep 'libnvrtc\.so\.11\.2 ' >/dev/null; then
  echo "install-ci-extras.sh: libnvrtc.so.11.2 is not on the loader's path after the install" >&2
  exit 1
fi
echo "kcache: CI extras installed (NVRTC $(dpkg-query -W -f '${Version}' libnvrtc11.2))"
