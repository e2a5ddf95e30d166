package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// sharedDir returns the shared corpus directory, or skips the test.
func sharedDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared")
	if _, err := os.Stat(filepath.Join(dir, "models")); err != nil {
		tb.Skipf("shared corpus not found at %s (%v); real-file tests need /work/shared beside the module", dir, err)
	}
	return dir
}

// openBytes opens an in-memory file and checks the layout invariants.
func openBytes(tb testing.TB, b []byte) *Layout {
	tb.Helper()
	l, err := Open(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	if err := l.Validate(); err != nil {
		tb.Fatalf("Validate: %v", err)
	}
	return l
}

// wantFormatError checks that err is a *FormatError wrapping sentinel, at
// the given offset when off >= 0, and containing each of the substrings.
func wantFormatError(tb testing.TB, err error, sentinel error, off int64, subs ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("got no error, want %v", sentinel)
	}
	var fe *FormatError
	if !errors.As(err, &fe) {
		tb.Fatalf("error %q (%T) is not a *FormatError", err, err)
	}
	if !errors.Is(err, sentinel) {
		tb.Fatalf("error %q wraps %v, want %v", err, fe.Err, sentinel)
	}
	if off >= 0 && fe.Offset != off {
		tb.Fatalf("error %q at offset %d, want %d", err, fe.Offset, off)
	}
	if !strings.HasPrefix(err.Error(), "checkpoint: ") {
		tb.Fatalf("error %q does not start with the package name", err)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			tb.Fatalf("error %q does not mention %q", err, s)
		}
	}
}

// ---- safetensors builder ----

// stSpec is one tensor entry of a generated safetensors header. Raw, when
// set, replaces the whole entry value.
type stSpec struct {
	Name       string
	DType      string
	Shape      []int64
	Begin, End int64
	Raw        string
}

// makeST writes a safetensors file: the entries in the given order, the
// header padded with spaces to a multiple of 8, then data.
func makeST(meta map[string]string, specs []stSpec, data []byte) []byte {
	var h strings.Builder
	h.WriteByte('{')
	first := true
	if meta != nil {
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		h.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				h.WriteByte(',')
			}
			fmt.Fprintf(&h, "%s:%s", strconv.Quote(k), strconv.Quote(meta[k]))
		}
		h.WriteByte('}')
		first = false
	}
	for _, s := range specs {
		if !first {
			h.WriteByte(',')
		}
		first = false
		h.WriteString(strconv.Quote(s.Name) + ":")
		if s.Raw != "" {
			h.WriteString(s.Raw)
			continue
		}
		dims := make([]string, len(s.Shape))
		for i, d := range s.Shape {
			dims[i] = strconv.FormatInt(d, 10)
		}
		fmt.Fprintf(&h, `{"dtype":%q,"shape":[%s],"data_offsets":[%d,%d]}`, s.DType, strings.Join(dims, ","), s.Begin, s.End)
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	return makeSTRaw(h.String(), data)
}

// makeSTRaw writes the length prefix, the header text as given and data.
func makeSTRaw(header string, data []byte) []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

// ---- GGUF builder ----

// gbuf appends little-endian GGUF fields.
type gbuf struct{ b []byte }

func (g *gbuf) u8(v uint8)   { g.b = append(g.b, v) }
func (g *gbuf) u16(v uint16) { g.b = binary.LittleEndian.AppendUint16(g.b, v) }
func (g *gbuf) u32(v uint32) { g.b = binary.LittleEndian.AppendUint32(g.b, v) }
func (g *gbuf) u64(v uint64) { g.b = binary.LittleEndian.AppendUint64(g.b, v) }
func (g *gbuf) str(s string) { g.u64(uint64(len(s))); g.b = append(g.b, s...) }

// ggKV is one key/value; val writes the value after the type.
type ggKV struct {
	key string
	typ uint32
	val func(g *gbuf)
}

func kvU32(key string, v uint32) ggKV {
	return ggKV{key, ggufUint32, func(g *gbuf) { g.u32(v) }}
}

func kvStr(key, v string) ggKV {
	return ggKV{key, ggufString, func(g *gbuf) { g.str(v) }}
}

// ggTensor is a tensor of a generated GGUF file. dims are in ggml order
// (innermost first). data is its bytes; off, when not nil, overrides the
// offset that makeGGUF would choose, and data is then not written.
type ggTensor struct {
	name string
	dims []uint64
	typ  uint32
	data []byte
	off  *uint64
}

// makeGGUF writes a GGUF file whose tensors are placed in order, each at the
// next multiple of align in the data section, like gguf-py does. It returns
// the file and the absolute offset of each tensor.
func makeGGUF(version uint32, kvs []ggKV, ts []ggTensor, align int) ([]byte, []int64) {
	var g gbuf
	g.b = append(g.b, "GGUF"...)
	g.u32(version)
	g.u64(uint64(len(ts)))
	g.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		g.str(kv.key)
		g.u32(kv.typ)
		kv.val(&g)
	}
	rel := make([]uint64, len(ts))
	var pos uint64
	for i, t := range ts {
		pos = (pos + uint64(align) - 1) / uint64(align) * uint64(align)
		rel[i] = pos
		if t.off != nil {
			rel[i] = *t.off
		}
		pos += uint64(len(t.data))
		g.str(t.name)
		g.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			g.u64(d)
		}
		g.u32(t.typ)
		g.u64(rel[i])
	}
	for len(g.b)%align != 0 {
		g.u8(0)
	}
	start := len(g.b)
	abs := make([]int64, len(ts))
	for i, t := range ts {
		abs[i] = int64(start) + int64(rel[i])
		if t.off != nil {
			continue
		}
		for uint64(len(g.b)) < uint64(start)+rel[i] {
			g.u8(0)
		}
		g.b = append(g.b, t.data...)
	}
	return g.b, abs
}

// ---- float decoding, for checking real tensor bytes ----

func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		return float32(math.Ldexp(float64(mant), -24)) * float32(1-2*int(h>>15))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// decodeFloats decodes little-endian floats of a whole-byte float dtype.
func decodeFloats(tb testing.TB, dt dtype.DType, b []byte) []float64 {
	tb.Helper()
	var out []float64
	switch dt {
	case dtype.F32:
		for i := 0; i+4 <= len(b); i += 4 {
			out = append(out, float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))))
		}
	case dtype.F16:
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, float64(f16ToF32(binary.LittleEndian.Uint16(b[i:]))))
		}
	case dtype.BF16:
		for i := 0; i+2 <= len(b); i += 2 {
			out = append(out, float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[i:]))<<16)))
		}
	case dtype.F64:
		for i := 0; i+8 <= len(b); i += 8 {
			out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(b[i:])))
		}
	default:
		tb.Fatalf("decodeFloats: %v", dt)
	}
	return out
}

func TestF16ToF32(t *testing.T) {
	for h, want := range map[uint16]float32{0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 5.9604645e-08, 0x3555: 0.33325195} {
		if got := f16ToF32(h); got != want {
			t.Errorf("f16ToF32(%#04x) = %v, want %v", h, got, want)
		}
	}
	if !math.IsInf(float64(f16ToF32(0x7c00)), 1) || !math.IsNaN(float64(f16ToF32(0x7e00))) {
		t.Error("f16ToF32: inf/nan")
	}
}
