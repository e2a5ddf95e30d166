package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"neuralzip/dtype"
)

func TestFormats(t *testing.T) {
	var names []string
	for _, f := range Formats() {
		names = append(names, f.Name)
		if len(f.Extensions) == 0 || f.Match == nil || f.Open == nil {
			t.Errorf("format %q is incomplete", f.Name)
		}
	}
	for _, want := range []string{"gguf", "safetensors", "safetensors-index", "rwkv", "tfjs", "onnx", "tflite", "pytorch", "npy", "npz"} {
		if !slices.Contains(names, want) {
			t.Errorf("format %q not registered (have %v)", want, names)
		}
	}
	// Formats returns a copy.
	first := Formats()[0].Name
	Formats()[0].Name = "changed"
	if Formats()[0].Name != first {
		t.Error("Formats exposes the registry")
	}
}

func TestRegisterPanics(t *testing.T) {
	before := len(Formats())
	for name, f := range map[string]Format{
		"duplicate":  {Name: "gguf", Match: matchGGUF, Open: openGGUF},
		"no name":    {Match: matchGGUF, Open: openGGUF},
		"no matcher": {Name: "x", Open: openGGUF},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			Register(f)
		})
	}
	if len(Formats()) != before {
		t.Error("a failed Register changed the registry")
	}
}

func TestUnknown(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 5000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	cases := map[string][]byte{
		"one byte":       {0},
		"eight bytes":    {1, 0, 0, 0, 0, 0, 0, 0},
		"text":           []byte("hello, world\n"),
		"json":           []byte(`{"format": "saved-model", "weights": []}`),
		"random":         random,
		"GGU":            []byte("GGU"),
		"brace not at 8": append([]byte{4, 0, 0, 0, 0, 0, 0, 0}, "[1] "...),
		"length too big": append([]byte{200, 0, 0, 0, 0, 0, 0, 0}, "{}"...),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			l := openBytes(t, b)
			if l.Format != FormatUnknown || len(l.Segments) != 1 || l.Segments[0].Length != int64(len(b)) || l.Size != int64(len(b)) {
				t.Errorf("got %+v", l)
			}
		})
	}
	l := openBytes(t, nil)
	if l.Format != FormatUnknown || l.Size != 0 || len(l.Segments) != 0 {
		t.Errorf("empty file: %+v", l)
	}
}

// TestSniffByContent checks that file names do not decide the format.
func TestSniffByContent(t *testing.T) {
	dir := t.TempDir()
	st := makeST(nil, []stSpec{{Name: "w", DType: "F32", Shape: []int64{1}, Begin: 0, End: 4}}, make([]byte, 4))
	must(t, os.WriteFile(filepath.Join(dir, "weights.bin"), st, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "fake.safetensors"), []byte("plain text, not tensors"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "fake.gguf"), []byte("GGU"), 0o644))
	for name, want := range map[string]string{"weights.bin": "safetensors", "fake.safetensors": FormatUnknown, "fake.gguf": FormatUnknown} {
		m, err := OpenPath(filepath.Join(dir, name))
		if err != nil || m.Format != want || m.Files[0].Layout.Format != want {
			t.Errorf("%s: %+v, %v; want %s", name, m, err, want)
		}
	}
	if _, err := OpenPath(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := OpenPath(dir); err == nil {
		t.Error("OpenPath(directory) succeeded")
	}
}

type errReader struct{ err error }

func (r errReader) ReadAt([]byte, int64) (int, error) { return 0, r.err }

func TestOpenReadErrors(t *testing.T) {
	boom := errors.New("boom")
	if _, err := Open(errReader{boom}, 100); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
	// A size larger than what the reader holds.
	if _, err := Open(bytes.NewReader([]byte("abc")), 10); !errors.Is(err, ErrTruncated) {
		t.Errorf("short reader: %v", err)
	}
	// A reader that ends inside the header, after the sniffed head.
	st := makeST(map[string]string{"pad": string(bytes.Repeat([]byte("x"), 3*HeadSize))}, nil, make([]byte, 4))
	short := io.NewSectionReader(bytes.NewReader(st), 0, 2*HeadSize)
	_, err := Open(short, int64(len(st)))
	wantFormatError(t, err, ErrTruncated, 2*HeadSize, "before its size")
	if _, err := Open(bytes.NewReader(nil), -1); err == nil {
		t.Error("negative size accepted")
	}
}

func TestFormatError(t *testing.T) {
	e := &FormatError{Format: "safetensors", Offset: 8, Msg: "header length 1000000000000 exceeds file size 4096", Err: ErrTooLarge}
	if got, want := e.Error(), "checkpoint: safetensors: offset 8: header length 1000000000000 exceeds file size 4096"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrTooLarge) || errors.Is(e, ErrTruncated) {
		t.Error("errors.Is")
	}
	e.Offset = -1
	if got, want := e.Error(), "checkpoint: safetensors: header length 1000000000000 exceeds file size 4096"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestValidate(t *testing.T) {
	good := func() *Layout {
		return &Layout{Format: "x", Size: 20, Segments: []Segment{
			{Offset: 0, Length: 8},
			{Name: "a", DType: dtype.F32, Type: "F32", Shape: []int64{2}, Offset: 8, Length: 8},
			{Name: "e", DType: dtype.F32, Type: "F32", Shape: []int64{0}, Offset: 16, Length: 0},
			{Name: "q", Type: "Q4_K", Shape: []int64{256}, Offset: 16, Length: 4},
		}}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	breakers := map[string]func(l *Layout){
		"gap":              func(l *Layout) { l.Segments[1].Offset++ },
		"short":            func(l *Layout) { l.Size++ },
		"past size":        func(l *Layout) { l.Size = 18 },
		"empty opaque":     func(l *Layout) { l.Segments = slices.Insert(l.Segments, 1, Segment{Offset: 8}) },
		"opaque with type": func(l *Layout) { l.Segments[0].Type = "F32" },
		"opaque shape":     func(l *Layout) { l.Segments[0].Shape = []int64{} },
		"unnamed tensor":   func(l *Layout) { l.Segments[1].Name = "" },
		"duplicate name":   func(l *Layout) { l.Segments[2].Name = "a" },
		"wrong length":     func(l *Layout) { l.Segments[1].Shape = []int64{3} },
		"negative dim":     func(l *Layout) { l.Segments[3].Shape = []int64{-1} },
		"empty with elems": func(l *Layout) { l.Segments[3].Length = 0; l.Size = 16 },
		"negative length":  func(l *Layout) { l.Segments[3].Length = -4; l.Size = 12 },
		"no format":        func(l *Layout) { l.Format = "" },
		"shards unsorted":  func(l *Layout) { l.Shards = []string{"b", "a"} },
		"shards duplicate": func(l *Layout) { l.Shards = []string{"a", "a"} },
	}
	for name, f := range breakers {
		l := good()
		f(l)
		if err := l.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, l)
		}
	}
	var nilLayout *Layout
	if nilLayout.Validate() == nil {
		t.Error("nil layout accepted")
	}
}

// TestHostileAllocations checks that declared sizes far beyond the input are
// rejected before anything in proportion to them is allocated.
func TestHostileAllocations(t *testing.T) {
	gguf := func(nt, nkv, strLen uint64, size int64) bigFile {
		g := gbuf{b: []byte("GGUF")}
		g.u32(3)
		g.u64(nt)
		g.u64(nkv)
		g.u64(strLen)
		return bigFile{head: g.b, size: size}
	}
	st := func(n uint64, size int64) bigFile {
		return bigFile{head: append(binary.LittleEndian.AppendUint64(nil, n), '{'), size: size}
	}
	cases := map[string]bigFile{
		"safetensors 50 GiB header in 1 TiB": st(50<<30, 1<<40),
		"gguf 2^60 tensors":                  gguf(1<<60, 0, 0, 100),
		"gguf 2^60 key/values":               gguf(0, 1<<60, 0, 100),
		"gguf 1 TiB key":                     gguf(0, 1, 1<<40, 100),
		"gguf 1 TiB key in 2 TiB":            gguf(0, 1, 1<<40, 1<<41),
	}
	for name, f := range cases {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Open(f, f.size)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: no error", name)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%s: allocated %d bytes (%v)", name, n, err)
		}
	}
}
