#!/bin/sh
# Installs the Debian packages the GPU backend's checks need: clang-14
# (CUDA kernels to PTX, scripts/ptx.sh) and g++ (the kernels built as C++
# for the tests on machines without a GPU). Only the missing ones; as root
# (CI) quietly, otherwise it prints the command.
set -eu
PKGS="clang-14 g++"
command -v dpkg >/dev/null 2>&1 || { echo "gpu-deps: install clang 14 and g++"; exit 1; }
exec "$(dirname "$0")/apt-deps.sh" gpu-deps $PKGS
