#!/bin/sh
# Installs what the browser test needs when it is missing: Debian's
# chromium and nodejs/npm (CI is a clean Debian 12 machine, as root).
set -eu
need=""
command -v node >/dev/null 2>&1 || need="$need nodejs"
command -v npm >/dev/null 2>&1 || need="$need npm"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || need="$need chromium"
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "browser test: missing Debian packages:$need (apt-get install$need as root)"; exit 1
fi
echo "installing$need"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $need >/dev/null
