#!/bin/sh
# make screenshots: builds the workbench and runs it under Xvfb with
# -screenshots, which opens the demo models, builds and compares a setup,
# runs three codecs, measures the lossy methods, then visits every screen in the light and the dark
# theme and captures the X screen with ImageMagick's import:
#   OUT/light-1-open.png ... OUT/dark-10-lossy.png (the Trajectory screen
# shows ../shared's training run when it is there)
#   scripts/screenshots.sh [OUT] [MODEL]   (default docs/screenshots, demo:silero-vad)
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-docs/screenshots}
MODEL=${2:-demo:silero-vad}
GO=${GO:-go}
scripts/fyne-deps.sh xvfb imagemagick
mkdir -p bin "$OUT"
$GO build -o bin/workbench ./app
# the window is 1320x860 (app/workbench.go); the screen matches it
LANG=${SCREENSHOT_LANG:-en_US.UTF-8} xvfb-run -a -s "-screen 0 1320x860x24" \
  bin/workbench -screenshots "$OUT" -open "$MODEL" 2>&1 | grep -v 'locale\|Cause: language\|At: .*lang/locale.go' || true
n=$(ls "$OUT"/light-*.png "$OUT"/dark-*.png 2>/dev/null | wc -l)
[ "$n" -eq 20 ] || { echo "screenshots: expected 20 PNGs in $OUT, found $n"; exit 1; }
echo "screenshots: $n PNGs in $OUT"
