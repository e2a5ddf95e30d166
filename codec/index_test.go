package codec

import (
	"fmt"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// namesIndex is an index of one empty file whose tensors all have the
// given names (zero-length tensors at offset 0).
func namesIndex(names []string) *indexData {
	f := &FileInfo{Name: "f", Format: "unknown", Digest: DigestBLAKE3}
	for _, n := range names {
		f.Tensors = append(f.Tensors, TensorInfo{Name: n, DType: dtype.F32, Shape: []int64{0}})
	}
	return &indexData{version: Version, chunkValues: 1024, files: []*FileInfo{f}}
}

// A name may share a prefix with the one before it, so a small index
// could describe huge names: the decoder bounds their total before it
// allocates (maxNameBytes).
func TestIndexNameBomb(t *testing.T) {
	long := strings.Repeat("a", 64<<10)
	names := make([]string, 201)
	for i := range names {
		names[i] = long
	}
	raw := namesIndex(names).marshalNames(true) // as a hostile writer would
	if len(raw) > 80<<10 {
		t.Fatalf("test index is %d bytes; expected the names to share prefixes", len(raw))
	}
	_, err := unmarshalIndex(raw, 0, Version)
	if err == nil || !strings.Contains(err.Error(), "tensor names exceed") {
		t.Fatalf("want a names-limit error, got %v", err)
	}
	// The same names with fewer tensors stay within the bound and decode.
	x, err := unmarshalIndex(namesIndex(names[:10]).marshalNames(true), 0, Version)
	if err != nil {
		t.Fatal(err)
	}
	if got := x.files[0].Tensors[9].Name; got != long {
		t.Fatalf("name %d bytes, want %d", len(got), len(long))
	}
}

// An index whose prefix-coded names would exceed the decoder's bound is
// written with whole names instead, and reads back the same.
func TestIndexLongNamesWhole(t *testing.T) {
	base := strings.Repeat("layer.", 500)
	names := make([]string, 2000)
	for i := range names {
		names[i] = fmt.Sprintf("%s%05d", base, i)
	}
	x := namesIndex(names)
	prefixed := x.marshalNames(true)
	total := 0
	for _, n := range names {
		total += len(n)
	}
	if total <= maxNameBytes(len(prefixed)) {
		t.Fatalf("test names (%d bytes) fit the bound of a prefix-coded index (%d bytes): not a test of the fallback", total, len(prefixed))
	}
	raw := x.marshal()
	if len(raw) < total {
		t.Fatalf("index %d bytes, names %d: names were not stored whole", len(raw), total)
	}
	y, err := unmarshalIndex(raw, 0, Version)
	if err != nil {
		t.Fatal(err)
	}
	for i, tn := range y.files[0].Tensors {
		if tn.Name != names[i] {
			t.Fatalf("tensor %d: name %q, want %q", i, tn.Name, names[i])
		}
	}
	// Short names keep their prefix coding.
	short := namesIndex([]string{"model.layers.0.weight", "model.layers.0.bias", "model.layers.1.weight"})
	if a, b := len(short.marshal()), len(short.marshalNames(false)); a >= b {
		t.Fatalf("prefix-coded index %d bytes, whole names %d", a, b)
	}
}
