#!/bin/sh
# Installs qemu-user (qemu-aarch64), which make arm64-test runs the pure-Go
# packages' tests under. Only when missing; as root (CI) quietly, otherwise
# it prints the command.
set -eu
command -v dpkg >/dev/null 2>&1 || { echo "qemu-deps: install qemu-user (qemu-aarch64)"; exit 1; }
exec "$(dirname "$0")/apt-deps.sh" qemu-deps qemu-user
