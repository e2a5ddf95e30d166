# NeuralZip — build, test and benchmark.
#
#   make run     build the workbench (app/) and start it on a demo model
#   make demo    build nzip and run it on an example model (the CLI demo)
#   make test    everything CI checks (gofmt, vet, race, tests, fuzzing, wasm build)
#   make race-app  the workbench's tests (./app) under the race detector: not in
#                `make race` or `make test` (5 minutes on the shared 2-core machine)
#   make screenshots  PNGs of every workbench screen, light and dark (Xvfb)
#   make web     build the workbench for the browser into wasm/www (WebAssembly)
#   make serve   build it and serve it on http://127.0.0.1:8080/ (ADDR=...)
#   make bench   nzip bench on ../shared/models/bench (when present) + Go benchmarks
#   make fuzz    longer fuzzing of every target (FUZZTIME per target)
#   make assets  fetch the demo models again from npm (network)
#   make ptx     compile the CUDA kernels (gpu/kernels/decode.cu) to PTX
#   make gpu-check  decode the bench corpus on an NVIDIA GPU (CUDA backend), GB/s
#   make webgpu-test  the WGSL kernels in headless Chromium (SwiftShader), bit-exact
#   make nzip-beam  build bin/nzip-beam, the Apache Beam ingest (its own module)
#   make icount-check  the speed guard: instruction counts of compress and
#                   decompress against scripts/icount-budget.tsv (valgrind)
#   make icount-budget  write the counts measured into the budget file
#                   (REASON="why" for the lines that change)

GO        ?= go
SHARED    ?= ../shared
FUZZTIME  ?= 3s
LONGFUZZ  ?= 2m
BIN       := bin/nzip
PKGS_PURE := ./dtype/... ./segment/... ./codec/... ./checkpoint/... ./analysis/... ./assets/... ./trajectory/... ./app/core/... ./gpu/... ./infer/... ./store/...
WORKBENCH := bin/workbench
WEBDIR    := wasm/www
ADDR      ?= 127.0.0.1:8080
# brotli quality of app.wasm.br: 7 takes ~13 s (12.7 MB at 5 in 7 s, 12.4 MB at 7;
# 11 takes minutes)
BROTLI    ?= 7
GOWASMEXEC = $$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec
# packages tested under GOOS=js with node (the non-UI ones)
PKGS_ARM64 := ./dtype/... ./segment/... ./codec/... ./checkpoint/... ./trajectory/... ./analysis/... ./assets/... ./infer/... ./store/...
PKGS_JS   := ./dtype/... ./segment/... ./codec/... ./checkpoint/... ./analysis/... ./trajectory/... ./app/core/... ./gpu/... ./infer/... ./store/...

.PHONY: serve-deps bench-serve bench-serve-store load-serve bench-mount icount-check icount-budget valgrind-deps beam nzip-beam s3-server ptx ptx-check gpu-deps gpu-check webgpu-test all build run demo workbench fyne-deps screenshots test check-go fmt-check vet arrows unit race race-app noasm arm64-test fuzz-short fuzz wasm-build purego-build bench clean assets web serve js-test browser-test browser-deps

all: build

check-go:
	@command -v $(GO) >/dev/null 2>&1 || { \
	  echo "Go 1.26 is required: install it from https://go.dev/dl/ (or: apt-get install golang-1.26 where available)"; exit 1; }
	@$(GO) version | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])' || { echo "Go >= 1.26 required, found: $$($(GO) version)"; exit 1; }

build: check-go
	$(GO) build -o $(BIN) ./cmd/nzip

# The workbench (Fyne, needs cgo and the OpenGL/X11 headers: fyne-deps
# installs the Debian packages when they are missing).
run: workbench
	./$(WORKBENCH)

workbench: check-go fyne-deps
	$(GO) build -o $(WORKBENCH) ./app

fyne-deps:
	@./scripts/fyne-deps.sh

# PNGs of every screen in the light and dark theme (Xvfb + ImageMagick).
screenshots: check-go
	./scripts/screenshots.sh docs/screenshots

# The CLI example: the golden archive's model, or a real one from ../shared.
demo: build
	./scripts/demo.sh $(BIN) $(SHARED)

test: check-go fyne-deps gpu-deps serve-deps fmt-check vet arrows ptx-check unit icount-check race noasm arm64-test fuzz-short wasm-build purego-build js-test browser-test webgpu-test beam
	@echo "make test: all checks passed"

# serve's client tests: curl, aria2c and the npm package @huggingface/hub; fuse3 for mount's
serve-deps:
	@./scripts/serve-deps.sh

# nzip serve: a whole-file download through HTTP against decompress into a pipe
bench-serve: build
	./scripts/bench-serve.sh $(BIN) $(SHARED)

# nzip serve of a store: curl against nzip store get
bench-serve-store: build
	./scripts/bench-serve-store.sh $(BIN) $(SHARED)

# the long load test of nzip serve: 64 clients for 60 s, every byte compared, memory bounded
load-serve: build
	./scripts/load-serve.sh $(BIN) $(SHARED)

# nzip mount: a sequential read of a mounted archive against decompress into a pipe (FUSE)
bench-mount: build
	./scripts/bench-mount.sh $(BIN) $(SHARED)

# clang-14 (PTX) and g++ (the kernels as C++ in gpu's tests)
gpu-deps:
	@./scripts/gpu-deps.sh

ptx:
	./scripts/ptx.sh

# the committed PTX must be what decode.cu compiles to
ptx-check:
	./scripts/ptx.sh --check

gpu-check:
	./scripts/gpu-check.sh $(SHARED)

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# the house drawing: imports point down only (scripts/arrows.sh)
arrows:
	GO=$(GO) ./scripts/arrows.sh

# NZ_REQUIRE_AVX512: where the CPU has the AVX-512 features of the codec's
# fast paths, their twin tests must compare them, not skip
AVX512_ALL := $(shell for f in avx512f avx512bw avx512cd avx512vbmi avx512_vbmi2; do grep -qw $$f /proc/cpuinfo 2>/dev/null || exit 0; done; echo 1)

unit: s3-server
	NZ_REQUIRE_AVX512=$(AVX512_ALL) $(GO) test -count=1 ./...

# SeaweedFS's weed, the real S3 server of the s3:// store tests: built
# once from the Go proxy's module and cached (scripts/seaweedfs.sh). If it
# cannot be built here, those tests skip and say why.
s3-server:
	@./scripts/seaweedfs.sh >/dev/null || echo "s3-server: SeaweedFS could not be built: the s3:// store tests will skip"

# nzip-beam, the Apache Beam ingest (cmd/nzip-beam): its own module, so
# Beam and its dependencies stay out of nzip's build
nzip-beam: check-go
	cd cmd/nzip-beam && $(GO) build -o ../../bin/nzip-beam .

beam: check-go s3-server
	cd cmd/nzip-beam && $(GO) vet ./... && $(GO) test -count=1 ./...

race:
	$(GO) test -count=1 -race -short ./codec/... ./checkpoint/... ./trajectory/... ./app/core/... ./gpu/... ./infer/... ./store/... ./serve/... ./lossy/...

# The workbench's screens under the race detector: Fyne's test driver
# renders every screen, which -race makes slow (5 minutes of the shared
# 2-core machine, 3 of CPU), so `make race` leaves ./app out and this
# runs it (no display needed: the test driver draws in memory).
race-app: check-go fyne-deps
	$(GO) test -count=1 -race -timeout 30m ./app

# The speed guard (scripts/icount-check.sh): callgrind instruction counts
# of compress and decompress of fixed real inputs against the committed
# budgets; more than 3 % over a budget fails.
icount-check: check-go valgrind-deps
	./scripts/icount-check.sh $(SHARED)

icount-budget: check-go valgrind-deps
	./scripts/icount-check.sh -update $(SHARED)

valgrind-deps:
	@./scripts/valgrind-deps.sh

# the pure-Go twins of every assembly path
noasm:
	$(GO) test -count=1 -tags noasm ./codec/...

# the non-UI packages built for arm64 (pure Go there: no assembly of ours),
# run under qemu-user (scripts/qemu-deps.sh installs it); -short. app/core
# and gpu link dynamically (purego) and would need an arm64 libc: not here
arm64-test: check-go
	@./scripts/qemu-deps.sh
	GOARCH=arm64 $(GO) test -short -count=1 -exec qemu-aarch64 $(PKGS_ARM64)

# every fuzz target for FUZZTIME, seeded from testdata and real files
fuzz-short:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

fuzz:
	FUZZTIME=$(LONGFUZZ) ./scripts/fuzz.sh

wasm-build:
	GOOS=js GOARCH=wasm $(GO) build $(PKGS_PURE)

# The workbench in the browser: app/ built for GOOS=js (Fyne's web driver)
# with wasm_exec.js, precompressed .br/.gz, next to the committed
# index.html, loader.js and icon.svg. no_emoji: without Fyne's colour emoji
# font (4.2 MB, 3.5 MB of the brotli download), which no text of the
# workbench uses (docs/browser.md).
web: check-go
	GOOS=js GOARCH=wasm $(GO) build -tags no_emoji -trimpath -ldflags='-s -w' -o $(WEBDIR)/app.wasm ./app
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" $(WEBDIR)/wasm_exec.js
	$(GO) run ./wasm/cmd/precompress -brotli $(BROTLI) -sizes $(WEBDIR)/sizes.json $(WEBDIR)/app.wasm $(WEBDIR)/wasm_exec.js

# serve wasm/www on this machine only (127.0.0.1)
serve: web
	$(GO) run ./wasm/cmd/serve -addr $(ADDR) -dir $(WEBDIR) -models assets/models

# the non-UI packages under GOOS=js GOARCH=wasm with node (-short: heavy
# tests skip)
js-test: check-go
	@command -v node >/dev/null 2>&1 || { echo "node is required for js-test: apt-get install nodejs"; exit 1; }
	GOOS=js GOARCH=wasm $(GO) test -short -count=1 -exec="$(GOWASMEXEC)" $(PKGS_JS)

# the browser test: Debian's chromium driven by playwright-core (npm ci in
# wasm/test); screenshots and metrics.json in wasm/test/screenshots
browser-deps:
	@./wasm/test/deps.sh

browser-test: browser-deps web
	$(GO) build -o bin/serve ./wasm/cmd/serve && $(GO) build -o bin/nzip ./cmd/nzip
	cd wasm/test && npm ci --no-audit --no-fund --loglevel=error
	NZ_SERVE=$(CURDIR)/bin/serve NZ_NZIP=$(CURDIR)/bin/nzip NZ_SHARED=$(SHARED) node wasm/test/workbench.test.mjs

# the WebGPU kernels (decode.wgsl) in Chromium's SwiftShader adapter,
# bit-exact against the files and the Go twin on the demo models and, when
# present, ../shared/models/bench
webgpu-test: browser-deps
	rm -rf bin/webgpu-test && mkdir -p bin/webgpu-test
	GOOS=js GOARCH=wasm $(GO) build -o bin/webgpu-test/app.wasm ./wasm/cmd/gputest
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" wasm/test/gpu/index.html bin/webgpu-test/
	$(GO) build -o bin/serve ./wasm/cmd/serve
	cd wasm/test && npm ci --no-audit --no-fund --loglevel=error
	NZ_SERVE=$(CURDIR)/bin/serve NZ_SHARED=$(SHARED) node wasm/test/webgpu.test.mjs bin/webgpu-test

# everything but the Fyne workbench, whose desktop driver needs cgo
purego-build:
	CGO_ENABLED=0 $(GO) build $$($(GO) list ./... | grep -v '^neuralzip/app$$')
	@# the CLI and its tests on the other systems it supports (the lock
	@# differs: flock on unix, LockFileEx on Windows)
	for os in windows darwin; do \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=amd64 $(GO) vet ./cmd/nzip ./codec/... ./checkpoint/... ./trajectory/... || exit 1; \
	done

bench: build
	@if [ -d $(SHARED)/models/bench ]; then \
	  $(BIN) bench $(SHARED)/models/bench/*.safetensors; \
	else echo "$(SHARED)/models/bench not present: skipping nzip bench"; fi
	$(GO) test -run '^$$' -bench . -benchtime 20x ./codec/

# fetch the demo models of assets/ again from npm and check their SHA-256
assets:
	./scripts/fetch-assets.sh

clean:
	rm -rf bin
