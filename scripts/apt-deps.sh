#!/bin/sh
# Installs the Debian packages that are missing, for the *-deps.sh scripts:
# quietly as root (CI), with sudo where there is one, otherwise it prints
# the command and fails.
#   scripts/apt-deps.sh TAG package...
set -eu
tag=$1
shift
missing=""
for p in "$@"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "$tag: installing$missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
elif command -v sudo >/dev/null 2>&1; then
  echo "$tag: installing$missing (sudo)"
  # shellcheck disable=SC2086
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "$tag: missing Debian packages:$missing"
  echo "  install them with: apt-get install$missing"
  exit 1
fi
