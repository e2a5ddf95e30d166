#!/bin/sh
# The tests of the packages the CLI is made of, built for Windows
# (GOOS=windows GOARCH=amd64) and run under Wine: a check of the Windows
# paths (LockFileEx, file names, renames) on this Linux machine. Not part
# of `make test` (it installs Wine and MinGW, ~1 GB); run it by hand when
# a change touches files, paths or locks.
#
# Two things Debian 12's Wine 8 lacks are worked around, for the test
# binaries only:
# - bcryptprimitives.dll (ProcessPrng, which Go's runtime needs to
#   start): a shim built with MinGW that calls RtlGenRandom;
# - the POSIX delete (FileDispositionInformationEx) that Go 1.26's
#   os.RemoveAll tries first: Wine answers STATUS_NOT_IMPLEMENTED, which
#   Go does not take as "use the fallback", so every TempDir cleanup
#   would fail. A build overlay adds that status to the fallback's cases
#   in the standard library's internal/syscall/windows.
#
# Usage: scripts/wine-test.sh [PKG...]   (default: every non-UI package;
# 2–3 min on 2 cores once Wine is installed)
set -eu
pkgs=${*:-./cmd/nzip ./trajectory ./checkpoint ./codec/... ./gpu/... ./app/core ./analysis/... ./dtype ./segment ./assets}
if ! [ -x /usr/lib/wine/wine64 ] || ! command -v x86_64-w64-mingw32-gcc >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q wine64 gcc-mingw-w64-x86-64 >/dev/null
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export WINEDEBUG=-all WINEPREFIX="$work/prefix"
cat >"$work/bcp.c" <<'C'
#include <windows.h>
#include <ntsecapi.h>
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!RtlGenRandom(data, n)) return FALSE;
		data += n; len -= n;
	}
	return TRUE;
}
C
printf 'LIBRARY bcryptprimitives\nEXPORTS\nProcessPrng\n' >"$work/bcp.def"
x86_64-w64-mingw32-gcc -shared -o "$work/bcryptprimitives.dll" "$work/bcp.c" "$work/bcp.def" -ladvapi32
/usr/lib/wine/wine64 wineboot -i >/dev/null 2>&1 || true
cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"

at="$(go env GOROOT)/src/internal/syscall/windows/at_windows.go"
python3 - "$at" "$work" <<'PY'
import json, sys
at, work = sys.argv[1], sys.argv[2]
s = open(at).read()
old = "STATUS_NOT_SUPPORTED:"
if s.count(old) != 1:
    sys.exit("wine-test: %s has changed; update the overlay" % at)
s = s.replace(old, "STATUS_NOT_SUPPORTED, NTStatus(0xC0000002):")
open(work + "/at_windows.go", "w").write(s)
json.dump({"Replace": {at: work + "/at_windows.go"}}, open(work + "/overlay.json", "w"))
PY

status=0
# every package with tests, as a directory (patterns such as ./gpu/... expand)
dirs=$(GOOS=windows go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' $pkgs)
for p in $dirs; do
	exe="$work/$(basename "$p").test.exe"
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go test -overlay "$work/overlay.json" -c -o "$exe" "$p"
	echo "== $p (windows/amd64 under Wine)"
	if (cd "$p" && /usr/lib/wine/wine64 "$exe" -test.short >"$work/out" 2>&1); then
		tail -3 "$work/out"
	else
		tail -60 "$work/out"
		status=1
	fi
done
exit $status
