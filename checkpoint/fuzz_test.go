package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// fuzzSeeds adds seeds to f: for each real file whose name ends in one of
// the suffixes, its header plus the first KiB of data (at most 64 KiB in
// all; 4 KiB of files this package does not read) and a copy cut in the
// middle of its header; then the generated files. Whole tensors would only
// slow the fuzzer down. Real files are skipped when the corpus is absent.
func fuzzSeeds(f *testing.F, suffixes ...string) {
	dir := filepath.Join("..", "..", "shared")
	var paths []string
	for _, c := range realCases() {
		paths = append(paths, filepath.Join(dir, c.path))
	}
	for _, pat := range []string{"models/original/*.onnx", "models/original/*.bin", "models/original/*.tflite"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		paths = append(paths, m...)
	}
	for _, p := range paths {
		ok := false
		for _, s := range suffixes {
			ok = ok || strings.HasSuffix(p, s)
		}
		if !ok {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		header := int64(len(b))
		if l, err := Open(bytes.NewReader(b), int64(len(b))); err == nil && l.Format != FormatUnknown {
			header = l.Segments[0].Length
			f.Add(b[:min(int64(len(b)), header+1024, 64<<10)])
		} else {
			f.Add(b[:min(len(b), 4<<10)])
		}
		f.Add(b[:min(header/2, 64<<10)])
	}
	for _, b := range generatedFiles() {
		f.Add(b)
	}
}

// generatedFiles returns small valid files of each format.
func generatedFiles() [][]byte {
	var out [][]byte
	out = append(out, makeST(map[string]string{"k": "v"}, []stSpec{
		{Name: "a", DType: "F32", Shape: []int64{2}, Begin: 0, End: 8},
		{Name: "s", DType: "BF16", Shape: []int64{}, Begin: 10, End: 12},
		{Name: "e", DType: "F16", Shape: []int64{0}, Begin: 12, End: 12},
		{Name: "f4", DType: "F4", Shape: []int64{3}, Begin: 12, End: 14},
	}, make([]byte, 20)))
	for _, v := range []uint32{2, 3} {
		b, _ := makeGGUF(v, fullKVs(), []ggTensor{
			{name: "w", dims: []uint64{4, 2}, typ: 0, data: make([]byte, 32)},
			{name: "q", dims: []uint64{32}, typ: 8, data: make([]byte, 34)},
			{name: "h", dims: []uint64{3}, typ: 1, data: make([]byte, 6)},
		}, 32)
		out = append(out, b)
	}
	out = append(out, []byte(`{"metadata":{"total_size":8},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}}`))
	return out
}

// checkOpenResult checks what any open function may return: a valid layout,
// or a *FormatError that wraps one of the sentinels.
func checkOpenResult(t *testing.T, b []byte, l *Layout, err error) {
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("error %q (%T) is not a *FormatError", err, err)
		}
		known := false
		for _, s := range []error{ErrTruncated, ErrOverlap, ErrOutOfRange, ErrTooLarge, ErrMalformed, ErrUnsupported} {
			known = known || errors.Is(err, s)
		}
		if !known || fe.Offset < -1 || !strings.HasPrefix(err.Error(), "checkpoint: ") {
			t.Fatalf("bad error %q", err)
		}
		return
	}
	if l.Size != int64(len(b)) {
		t.Fatalf("size %d, want %d", l.Size, len(b))
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("layout of %d bytes does not validate: %v", len(b), err)
	}
}

func FuzzOpen(f *testing.F) {
	fuzzSeeds(f, ".safetensors", ".gguf", ".onnx", ".bin", ".tflite")
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := Open(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
	})
}

func FuzzSafetensors(f *testing.F) {
	fuzzSeeds(f, ".safetensors")
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := openSafetensors(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
		if err == nil {
			n := int64(binary.LittleEndian.Uint64(b))
			if l.Format != "safetensors" || l.Segments[0].IsTensor() || l.Segments[0].Length != 8+n {
				t.Fatalf("header segment %+v, want [0,%d)", l.Segments[0], 8+n)
			}
			checkAgainstEncodingJSON(t, b[8:8+n], l)
		}
	})
}

func FuzzGGUF(f *testing.F) {
	fuzzSeeds(f, ".gguf")
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := openGGUF(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
		if err == nil && l.Format != "gguf" {
			t.Fatalf("format %q", l.Format)
		}
	})
}

// checkAgainstEncodingJSON decodes a header that openSafetensors accepted
// with encoding/json and checks that both read the same tensors and
// metadata.
func checkAgainstEncodingJSON(t *testing.T, hdr []byte, l *Layout) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &top); err != nil {
		t.Fatalf("accepted a header that encoding/json rejects: %v", err)
	}
	ts := l.Tensors()
	nmeta := 0
	if raw, ok := top["__metadata__"]; ok {
		nmeta = 1
		var meta map[string]string
		if err := json.Unmarshal(raw, &meta); err != nil || len(meta) != len(l.Metadata) {
			t.Fatalf("metadata %v vs %v (%v)", meta, l.Metadata, err)
		}
		for k, v := range meta {
			if l.Metadata[k] != v {
				t.Fatalf("metadata %q: %q vs %q", k, l.Metadata[k], v)
			}
		}
	}
	if len(top)-nmeta != len(ts) {
		t.Fatalf("%d tensors, encoding/json sees %d entries", len(ts), len(top)-nmeta)
	}
	dataStart := int64(8 + len(hdr))
	for _, s := range ts {
		var e map[string]json.RawMessage
		if err := json.Unmarshal(top[s.Name], &e); err != nil {
			t.Fatalf("tensor %q: %v", s.Name, err)
		}
		var dt string
		var shape, offs []int64
		if json.Unmarshal(e["dtype"], &dt) != nil || json.Unmarshal(e["shape"], &shape) != nil || json.Unmarshal(e["data_offsets"], &offs) != nil {
			t.Fatalf("tensor %q: encoding/json cannot read %s", s.Name, top[s.Name])
		}
		if d, _ := dtype.Parse(dt); d != s.DType || !equalShape(shape, s.Shape) || len(offs) != 2 ||
			s.Offset != dataStart+offs[0] || s.Length != offs[1]-offs[0] {
			t.Fatalf("tensor %q: %+v vs %s", s.Name, s, top[s.Name])
		}
	}
}
