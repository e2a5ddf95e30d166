package baseline

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"neuralzip/codec"
)

// Codec compresses whole files. Implementations are safe for concurrent use.
type Codec interface {
	// Name returns the name the codec was created with (see Names).
	Name() string
	// Compress codes the whole file src, whose layout is segs (ordered,
	// covering src; nil means the whole file is opaque bytes). Gaps between
	// segments are coded as opaque bytes. Overlapping or out-of-range
	// segments are an error wrapping ErrLayout.
	Compress(src []byte, segs []codec.Segment) ([]byte, error)
	// Decompress returns the original bytes exactly. Corrupt or truncated
	// input gives an error (wrapping ErrFormat or ErrCorrupt), never a panic
	// nor an allocation larger than the archive's cross-checked lengths allow.
	Decompress(comp []byte) ([]byte, error)
}

// Options configures a codec. The zero value is the default.
type Options struct {
	// Threads bounds the goroutines one Compress or Decompress call uses.
	// Zero means runtime.GOMAXPROCS(0); values above codec.MaxThreads are
	// clamped to it. The output never depends on it.
	Threads int
}

// threads returns the effective thread count.
func (o Options) threads() int {
	if o.Threads <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	t, _ := codec.ClampThreads(o.Threads)
	return t
}

func (o Options) validate() error {
	if o.Threads < 0 {
		return fmt.Errorf("baseline: Options.Threads is %d, must be >= 0", o.Threads)
	}
	return nil
}

// Errors. Every error this package returns starts with "baseline:".
var (
	// ErrUnknownCodec is returned by New for a name no codec answers to.
	ErrUnknownCodec = errors.New("baseline: unknown codec")

	// ErrFormat is returned by Decompress when the input does not start with
	// the codec's magic bytes and a version it reads.
	ErrFormat = errors.New("baseline: not an archive of this codec")

	// ErrCorrupt is wrapped by every *CorruptError.
	ErrCorrupt = errors.New("baseline: corrupt archive")

	// ErrLayout is returned by Compress when the segments do not describe
	// the input: negative, overlapping, unordered or past its end.
	ErrLayout = errors.New("baseline: invalid segment layout")
)

// CorruptError reports an archive that cannot be decoded, and where.
type CorruptError struct {
	Codec  string // codec family: "zstd", "gzip", "zipnn", "dfloat11"
	Offset int64  // byte offset in the archive where decoding failed
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("baseline: %s: corrupt archive at offset %d: %s", e.Codec, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) true.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// builtinNames are the baseline codecs, in the order Names lists them.
// Scripts depend on these exact names.
var builtinNames = []string{"zstd-1", "zstd-3", "zstd-19", "gzip", "zipnn", "dfloat11"}

var registry struct {
	sync.RWMutex
	names     []string
	factories map[string]func(Options) (Codec, error)
}

// Register makes a codec available to New under name and appends name to
// Names. It panics if name is empty, already taken (including the built-in
// names and the zstd-<level> family) or f is nil, like database/sql.Register.
func Register(name string, f func(Options) (Codec, error)) {
	if name == "" || f == nil {
		panic("baseline: Register with empty name or nil factory")
	}
	if slices.Contains(builtinNames, name) || name == "gzip-fast" || isZstdName(name) {
		panic("baseline: Register called twice for " + name)
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.factories == nil {
		registry.factories = make(map[string]func(Options) (Codec, error))
	}
	if _, dup := registry.factories[name]; dup {
		panic("baseline: Register called twice for " + name)
	}
	registry.factories[name] = f
	registry.names = append(registry.names, name)
}

// Names returns the codec names in a fixed order: the baselines "zstd-1",
// "zstd-3", "zstd-19", "gzip", "zipnn", "dfloat11", then the names added by
// Register in the order they were registered.
//
// New also accepts "zstd-<level>" for any level 1 to 22, the variants
// "zstd-<level>-lit" and "zstd-<level>-nolit", and "gzip-fast" (see the zstd
// and gzip codecs); they are not listed.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	return append(slices.Clone(builtinNames), registry.names...)
}

// New returns the codec called name, configured by opt.
func New(name string, opt Options) (Codec, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	switch name {
	case "gzip", "gzip-fast":
		return newGzip(name, opt), nil
	case "zipnn":
		return newZipNN(opt), nil
	case "dfloat11":
		return newDFloat11(opt), nil
	}
	if isZstdName(name) {
		level, lit, _ := parseZstdName(name)
		return newZstd(name, level, lit, opt)
	}
	registry.RLock()
	f := registry.factories[name]
	registry.RUnlock()
	if f == nil {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownCodec, name, strings.Join(Names(), ", "))
	}
	return f(opt)
}

func isZstdName(name string) bool {
	_, _, ok := parseZstdName(name)
	return ok
}

// parseZstdName parses "zstd-<level>[-lit|-nolit]". lit reports whether
// literal entropy coding is on; the plain name uses the default (on, like C
// zstd).
func parseZstdName(name string) (level int, lit, ok bool) {
	rest, found := strings.CutPrefix(name, "zstd-")
	if !found {
		return 0, false, false
	}
	lit = zstdDefaultLit
	if r, cut := strings.CutSuffix(rest, "-nolit"); cut {
		rest, lit = r, false
	} else if r, cut := strings.CutSuffix(rest, "-lit"); cut {
		rest, lit = r, true
	}
	level, err := strconv.Atoi(rest)
	if err != nil || level < 1 || level > 22 || strconv.Itoa(level) != rest {
		return 0, false, false
	}
	return level, lit, true
}
