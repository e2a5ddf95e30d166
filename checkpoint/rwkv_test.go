package checkpoint

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/dtype"
)

// rwkvFile builds a ggmf file: header then tensors (name, rwkv type, ggml
// dims innermost first, data length implied).
func rwkvFile(version uint32, tensors ...rwkvTensor) []byte {
	var b []byte
	for _, v := range []uint32{rwkvMagic, version, 256, 8, 1, 1} {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	for _, t := range tensors {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t.dims)))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(t.name)))
		b = binary.LittleEndian.AppendUint32(b, t.typ)
		for _, d := range t.dims {
			b = binary.LittleEndian.AppendUint32(b, d)
		}
		b = append(b, t.name...)
		b = append(b, make([]byte, t.bytes)...)
	}
	return b
}

type rwkvTensor struct {
	name  string
	typ   uint32
	dims  []uint32 // ggml order
	bytes int
}

func TestRWKVGenerated(t *testing.T) {
	f := rwkvFile(100,
		rwkvTensor{"emb.weight", 1, []uint32{8, 256}, 8 * 256 * 2},
		rwkvTensor{"ln0.weight", 0, []uint32{8}, 32},
		rwkvTensor{"blocks.0.att.key.weight", 9, []uint32{32, 8}, 8 * 34}, // Q8_0: 32 values per 34-byte block
	)
	l, err := Open(bytes.NewReader(f), int64(len(f)))
	if err != nil {
		t.Fatal(err)
	}
	if l.Format != formatRWKV {
		t.Fatalf("format %q", l.Format)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
	ts := l.Tensors()
	if len(ts) != 3 || ts[0].DType != dtype.F16 || ts[0].Shape[0] != 256 || ts[1].DType != dtype.F32 || ts[2].DType != dtype.Invalid || ts[2].Type != "Q8_0" {
		t.Fatalf("%+v", ts)
	}
}

func TestRWKVHostile(t *testing.T) {
	good := rwkvFile(100, rwkvTensor{"a", 0, []uint32{4}, 16})
	cases := map[string]struct {
		b    []byte
		want error
	}{
		"truncated data":   {good[:len(good)-1], ErrTruncated},
		"bad version":      {rwkvFile(7), ErrUnsupported},
		"unknown type":     {rwkvFile(100, rwkvTensor{"a", 5, []uint32{4}, 16}), ErrUnsupported},
		"too many dims":    {rwkvFile(100, rwkvTensor{"a", 0, make([]uint32, 9), 0}), ErrOutOfRange},
		"duplicate":        {rwkvFile(100, rwkvTensor{"a", 0, []uint32{1}, 4}, rwkvTensor{"a", 0, []uint32{1}, 4}), ErrMalformed},
		"huge dims":        {rwkvFile(100, rwkvTensor{"a", 0, []uint32{0xffffffff, 0xffffffff, 0xffffffff}, 0}), ErrOutOfRange},
		"huge data":        {rwkvFile(100, rwkvTensor{"a", 0, []uint32{0xffffff, 0xffff}, 0}), ErrTruncated},
		"trailing garbage": {append(append([]byte(nil), good...), 1, 2, 3), ErrTruncated},
	}
	for name, c := range cases {
		_, err := Open(bytes.NewReader(c.b), int64(len(c.b)))
		var fe *FormatError
		if !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Format != formatRWKV {
			t.Errorf("%s: got %v, want %v", name, err, c.want)
		}
	}
}

func TestRWKVReal(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "models", "original")
	for _, c := range []struct {
		file          string
		f32, f16, all int
		values        int64
	}{
		{"tiny-rwkv-4v0-660K-FP32.bin", 78, 0, 78, 661504},
		{"tiny-rwkv-4v0-660K-FP16.bin", 0, 0, 78, 661504},
	} {
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		l, err := Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if err := l.Validate(); err != nil {
			t.Fatal(err)
		}
		var values, f16vals int64
		for _, s := range l.Tensors() {
			n, _ := s.NumElements()
			values += n
			if s.DType == dtype.F16 {
				f16vals += n
			}
		}
		if len(l.Tensors()) != c.all || values != c.values {
			t.Errorf("%s: %d tensors, %d values", c.file, len(l.Tensors()), values)
		}
		if c.file == "tiny-rwkv-4v0-660K-FP16.bin" && f16vals != 655360 {
			t.Errorf("FP16 file: %d F16 values, want 655360", f16vals)
		}
	}
}

func FuzzRWKV(f *testing.F) {
	f.Add(rwkvFile(100, rwkvTensor{"emb.weight", 1, []uint32{8, 4}, 64}, rwkvTensor{"x", 0, []uint32{3}, 12}))
	if b, err := os.ReadFile(filepath.Join("..", "..", "shared", "models", "original", "tiny-rwkv-4v0-660K-FP16.bin")); err == nil {
		f.Add(b[:4096])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := openRWKV(bytes.NewReader(b), int64(len(b)))
		if err == nil {
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}
