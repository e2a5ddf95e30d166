#!/bin/sh
# Installs the Debian packages the Fyne workbench (app/) needs to build:
# a C compiler, pkg-config and the OpenGL/X11 headers. Does nothing when they
# are all there; installs the missing ones quietly when run as root (CI),
# otherwise says what to install. On systems without dpkg it only checks
# for a C compiler.
#   scripts/fyne-deps.sh [extra-package...]   (e.g. xvfb imagemagick)
set -eu
PKGS="gcc pkg-config libgl1-mesa-dev libx11-dev libxcursor-dev libxrandr-dev libxinerama-dev libxi-dev libxxf86vm-dev $*"
if ! command -v dpkg >/dev/null 2>&1; then
  command -v cc >/dev/null 2>&1 || { echo "fyne-deps: a C compiler and the OpenGL/X11 development headers are needed (see https://docs.fyne.io/started/)"; exit 1; }
  exit 0
fi
exec "$(dirname "$0")/apt-deps.sh" fyne-deps $PKGS
