#!/bin/sh
# Installs what serve's client tests use when it is missing: Debian's curl
# and aria2, fuse3 (fusermount3, for nzip mount's tests without root; they
# also need /dev/fuse), and the npm package @huggingface/hub (npm ci in
# serve/testdata/hfjs, from its package-lock.json; node_modules is ignored).
# Without them those tests skip and say why.
set -eu
cd "$(dirname "$0")/.."
./scripts/apt-deps.sh serve-deps curl aria2 fuse3
if command -v npm >/dev/null 2>&1; then
  (cd serve/testdata/hfjs && npm ci --no-audit --no-fund --loglevel=error)
else
  echo "serve-deps: no npm: the @huggingface/hub test will skip"
fi
