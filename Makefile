# NeuralZip — build, test and benchmark.
#
#   make run     build the workbench (app/) and start it on a demo model
#   make demo    build nzip and run it on an example model (the CLI demo)
#   make test    everything CI checks (gofmt, vet, race, tests, fuzzing, wasm build)
#   make screenshots  PNGs of every workbench screen, light and dark (Xvfb)
#   make bench   nzip bench on ../shared/models/bench (when present) + Go benchmarks
#   make fuzz    longer fuzzing of every target (FUZZTIME per target)
#   make assets  fetch the demo models again from npm (network)

GO        ?= go
SHARED    ?= ../shared
FUZZTIME  ?= 3s
LONGFUZZ  ?= 2m
BIN       := bin/nzip
PKGS_PURE := ./dtype/... ./codec/... ./checkpoint/... ./analysis/... ./assets/... ./app/core/...
WORKBENCH := bin/workbench

.PHONY: all build run demo workbench fyne-deps screenshots test check-go fmt-check vet unit race noasm fuzz-short fuzz wasm-build purego-build bench clean assets

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

test: check-go fyne-deps fmt-check vet unit race noasm fuzz-short wasm-build purego-build
	@echo "make test: all checks passed"

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

race:
	$(GO) test -count=1 -race -short ./codec/... ./checkpoint/... ./app/core/...

# the pure-Go twins of every assembly path
noasm:
	$(GO) test -count=1 -tags noasm ./codec/...

# every fuzz target for FUZZTIME, seeded from testdata and real files
fuzz-short:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

fuzz:
	FUZZTIME=$(LONGFUZZ) ./scripts/fuzz.sh

wasm-build:
	GOOS=js GOARCH=wasm $(GO) build $(PKGS_PURE)

# everything but the Fyne workbench, whose desktop driver needs cgo
purego-build:
	CGO_ENABLED=0 $(GO) build $$($(GO) list ./... | grep -v '^neuralzip/app$$')

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
