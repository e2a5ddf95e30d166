package codec

import (
	"fmt"
	"testing"

	"neuralzip/dtype"
)

// checkProgram checks that every node with parts has the bytes of its
// parts.
func checkProgram(t testing.TB, nd ProgramNode, path string) {
	t.Helper()
	path += "/" + nd.Op
	if len(nd.Nodes) == 0 {
		return
	}
	var sum int64
	for _, c := range nd.Nodes {
		checkProgram(t, c, path)
		sum += c.Bytes
	}
	if sum != nd.Bytes {
		t.Fatalf("%s: %d bytes, its parts %d", path, nd.Bytes, sum)
	}
}

// TestBlockProgram: every block of archives with records, sparse, dense
// float and opaque blocks has a program whose root has the block's
// payload bytes and whose parts add up.
func TestBlockProgram(t *testing.T) {
	src, segs := recordsInput()
	sp := sparseValues(dtype.BF16, 5000, 80, false, 3)
	segs = append(segs, Segment{Name: "sparse", DType: dtype.BF16, Shape: []int64{50, 100}, Offset: int64(len(src)), Length: int64(len(sp))})
	src = append(src, sp...)
	ops := map[string]bool{}
	for _, best := range []bool{false, true} {
		arc := roundTrip(t, src, segs, EncodeOptions{Threads: 1, Best: best})
		rd, err := NewMemReader(arc)
		if err != nil {
			t.Fatal(err)
		}
		for fi, f := range rd.Files() {
			for bi, b := range f.Blocks() {
				nd, err := rd.BlockProgram(fi, bi)
				if err != nil {
					t.Fatalf("block %d (%v): %v", bi, b.Kind, err)
				}
				if nd.Bytes != b.Compressed {
					t.Fatalf("block %d: program of %d bytes, payload %d", bi, nd.Bytes, b.Compressed)
				}
				checkProgram(t, nd, fmt.Sprint(bi))
				ops[nd.Op] = true
			}
		}
		if _, err := rd.BlockProgram(0, len(rd.Files()[0].Blocks())); err == nil {
			t.Fatal("a block past the last has a program")
		}
	}
	for _, op := range []string{"records Q4_0", "records Q6_K", "sparse BF16", "float fields F32"} {
		if !ops[op] {
			t.Errorf("no %q block among %v", op, ops)
		}
	}
}

// fuzzProgram: BlockProgram of any payload returns (no panic); of one
// that decodes, a program whose parts add up to the payload.
func fuzzProgram(t *testing.T, payload []byte, kind BlockKind, d dtype.DType, length int, decoded bool) {
	nd, err := BlockProgram(BlockInfo{Kind: kind, DType: d, Length: int64(length), Compressed: int64(len(payload))}, payload)
	if !decoded {
		return
	}
	if err != nil {
		t.Fatalf("decodes, but BlockProgram: %v", err)
	}
	if nd.Bytes != int64(len(payload)) {
		t.Fatalf("program of %d bytes, payload %d", nd.Bytes, len(payload))
	}
	checkProgram(t, nd, "")
}
