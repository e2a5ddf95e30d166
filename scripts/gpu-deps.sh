#!/bin/sh
# Installs the Debian packages the GPU backend's checks need: clang-14
# (CUDA kernels to PTX, scripts/ptx.sh) and g++ (the kernels built as C++
# for the tests on machines without a GPU). Only the missing ones; as root
# (CI) quietly, otherwise it prints the command.
set -eu
PKGS="clang-14 g++"
command -v dpkg >/dev/null 2>&1 || { echo "gpu-deps: install clang 14 and g++"; exit 1; }
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "gpu-deps: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
elif command -v sudo >/dev/null 2>&1; then
  echo "gpu-deps: installing$missing (sudo)"
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "gpu-deps: missing Debian packages:$missing"
  echo "  install them with: apt-get install$missing"
  exit 1
fi
