package segment_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/dtype"
	"neuralzip/segment"
)

func TestNumElements(t *testing.T) {
	for _, c := range []struct {
		dims []int64
		n    int64
		ok   bool
	}{
		{nil, 1, true},
		{[]int64{}, 1, true},
		{[]int64{2, 3}, 6, true},
		{[]int64{0, -1}, 0, false},              // a negative dimension is invalid even after a zero
		{[]int64{1 << 40, 1 << 40, 0}, 0, true}, // a zero wins over an overflow
		{[]int64{1 << 40, 1 << 40}, 0, false},
	} {
		if n, ok := (segment.Segment{Shape: c.dims}).NumElements(); n != c.n || ok != c.ok {
			t.Errorf("%v: %d %v, want %d %v", c.dims, n, ok, c.n, c.ok)
		}
	}
	if s := (segment.Segment{Offset: 8, Length: 12}); s.End() != 20 || s.IsTensor() {
		t.Errorf("%+v: End %d, IsTensor %v", s, s.End(), s.IsTensor())
	}
	if !(segment.Segment{Name: "w"}).IsTensor() {
		t.Error("a named segment is not a tensor")
	}
}

// TestLoadersToCodec: the segments of a loader's layout go to codec.Encode
// as they are, for several formats, and every tensor of the layout is a
// tensor of the archive with the same name, types, shape and range, every
// opaque range none, and the file comes back byte for byte.
func TestLoadersToCodec(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"w.safetensors": safetensors(),
		"a.npy":         npy(),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		filepath.Join(dir, "w.safetensors"),
		filepath.Join(dir, "a.npy"),
		"../assets/models/silero_vad_legacy.onnx",
		"../assets/models/selfie_segmentation.tflite",
		"../assets/models/blazeface-front/blazeface-front.json",
	}
	formats := map[string]bool{}
	for _, p := range paths {
		m, err := checkpoint.OpenPath(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, f := range m.Files {
			formats[f.Layout.Format] = true
			src, err := os.ReadFile(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			var segs []codec.Segment = f.Layout.Segments
			arc, err := codec.CompressBytes(context.Background(), src, segs, codec.EncodeOptions{})
			if err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
			out, err := codec.DecompressBytes(context.Background(), arc, codec.DecodeOptions{})
			if err != nil || !bytes.Equal(out, src) {
				t.Fatalf("%s: round trip: %v", f.Name, err)
			}
			rd, err := codec.NewMemReader(arc)
			if err != nil {
				t.Fatal(err)
			}
			got := rd.Files()[0].Tensors
			want := f.Layout.Tensors()
			if len(got) != len(want) {
				t.Fatalf("%s: %d tensors in the archive, %d in the layout", f.Name, len(got), len(want))
			}
			for i, w := range want {
				g := got[i]
				if w.DType != dtype.Invalid {
					w.Type = "" // the index keeps the format's type name only for types dtype lacks
				}
				if g.Name != w.Name || g.DType != w.DType || g.Type != w.Type || !slices.Equal(g.Shape, w.Shape) || g.Offset != w.Offset || g.Length != w.Length {
					t.Errorf("%s: tensor %d is %+v in the archive, %+v in the layout", f.Name, i, g, w)
				}
			}
		}
	}
	for _, f := range []string{"safetensors", "npy", "onnx", "tflite", "tfjs"} {
		if !formats[f] {
			t.Errorf("no %s file among %v", f, formats)
		}
	}
}

// safetensors is a small safetensors file: a BF16 matrix, an empty tensor
// and an F32 vector after a header.
func safetensors() []byte {
	h := `{"w":{"dtype":"BF16","shape":[4,8],"data_offsets":[0,64]},"e":{"dtype":"F32","shape":[0],"data_offsets":[64,64]},"v":{"dtype":"F32","shape":[16],"data_offsets":[64,128]}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(b, h...)
	for i := range 128 {
		b = append(b, byte(i*37))
	}
	return b
}

// npy is a small .npy file of a 2×8 little-endian F16 array.
func npy() []byte {
	h := "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 8), }"
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8))
	b = append(b, h...)
	for i := range 32 {
		b = append(b, byte(i*11))
	}
	return b
}
