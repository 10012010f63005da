#!/usr/bin/env bash
# Installs what CI needs beyond scripts/install-deps.sh, on Debian 12
# (bookworm): NVRTC, so that the NVRTC tests and the CUDA demo's compile-only
# run compile for real instead of skipping. Not needed to build or to pass
# the README's test command (without NVRTC those tests skip, saying why).
#
# NVRTC comes from Debian's non-free component: libnvrtc11.2 (NVRTC 11.8,
# sm_35..sm_90, about 60 MB with libnvrtc-builtins11.8), installed, and
# Debian 13's libnvrtc12 (NVRTC 12.4), unpacked beside (see below). Neither
# brings CUDA headers, so tests that include <cuda_fp16.h> still skip. The non-free
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

# NVRTC 12 too, for the libnvrtc.so.12 stand-in's tests: Debian 13 (trixie)
# non-free's libnvrtc12, unpacked into its own folder, never installed (the
# machine's libraries and apt state stay bookworm's). apt fetches and checks
# it with a private source list, package lists and cache, so nothing of the
# machine's own apt configuration changes. The tests find it through
# KCACHE_TEST_NVRTC_PATH (.ci/run sets it to the folder printed below).
nvrtc12_root=${KCACHE_CI_NVRTC12_ROOT:-/opt/kcache-ci/nvrtc12}
apt_dir=$(mktemp -d)
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie non-free" \
  >"$apt_dir/sources.list"
apt_private=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Architectures=amd64
  -o APT::Sandbox::User=root)
apt-get "${apt_private[@]}" update -qq
# libnvrtc12 needs the builtins of its own minor release (libnvrtc-builtins12.N).
builtins=$(apt-cache "${apt_private[@]}" depends libnvrtc12 | sed -n 's/^ *Depends: \(libnvrtc-builtins[0-9.]*\)$/\1/p')
if [ -z "$builtins" ]; then
  echo "install-ci-extras.sh: trixie's libnvrtc12 names no libnvrtc-builtins package" >&2
  exit 1
fi
(cd "$apt_dir/debs" && apt-get "${apt_private[@]}" download -qq libnvrtc12 "$builtins")
$sudo rm -rf "$nvrtc12_root"
$sudo mkdir -p "$nvrtc12_root"
for deb in "$apt_dir"/debs/*.deb; do
  $sudo dpkg-deb -x "$deb" "$nvrtc12_root"
done
nvrtc12_dir="$nvrtc12_root/usr/lib/x86_64-linux-gnu"
if [ ! -e "$nvrtc12_dir/libnvrtc.so.12" ]; then
  echo "install-ci-extras.sh: no libnvrtc.so.12 in $nvrtc12_dir after unpacking" >&2
  exit 1
fi
echo "kcache: CI extras installed (NVRTC $(dpkg-query -W -f '${Version}' libnvrtc11.2);" \
  "NVRTC 12 $(dpkg-deb -f "$apt_dir"/debs/libnvrtc12_*.deb Version) in $nvrtc12_dir)"
