package codec

import (
	"slices"
	"testing"

	"neuralzip/codec/huff"
	"neuralzip/dtype"
)

// realTables are the token tables of real difference blocks (bf16 steps
// 500 → 550), as compact and as huff0 descriptions.
func realTables(tb testing.TB) (compact, huff0 [][]byte) {
	dir := trajDir(tb)
	prev, cur := readStep(tb, dir, 500, "bf16"), readStep(tb, dir, 550, "bf16")
	plans, _ := planBlocks(safetensorsSegments(cur), int64(len(cur)), DefaultChunkValues, nil)
	be := &blockEncoder{}
	var ht huff.Table
	for _, pl := range plans {
		if !pl.float || pl.dtype != dtype.BF16 {
			continue
		}
		be.encodeRefFloat(nil, cur[pl.off:pl.off+pl.length], prev[pl.off:pl.off+pl.length], dtype.BF16)
		e := be.ref
		for g := range e.ghist[:len(e.own)+1] {
			if ht.Build(&e.ghist[g]) != nil {
				continue
			}
			hd, _ := ht.AppendHeader(nil)
			compact = append(compact, huff.AppendCompactTable(nil, &ht))
			huff0 = append(huff0, hd)
		}
	}
	return compact, huff0
}

// BenchmarkTableRead reads the token tables of a real frame: compact
// descriptions against huff0's (FSE-coded weights), each building the
// decoding table.
func BenchmarkTableRead(b *testing.B) {
	compact, huff0 := realTables(b)
	var h huff.Decoder
	run := func(name string, descs [][]byte, read func([]byte) error) {
		b.Run(name, func(b *testing.B) {
			n := 0
			for _, c := range descs {
				n += len(c)
			}
			b.ReportMetric(float64(n)/float64(len(descs)), "B/table")
			for i := 0; i < b.N; i++ {
				for _, c := range descs {
					if err := read(c); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
	run("compact", compact, func(c []byte) error { _, err := h.ReadCompactTable(c, nil); return err })
	run("huff0", huff0, func(c []byte) error { _, err := h.ReadWeights(c); return err })
}

// TestCompactTableReal reads the compact descriptions of real token tables
// (bf16 steps 500 → 550): the same decoding tables as their huff0
// descriptions, in well under two thirds of the bytes.
func TestCompactTableReal(t *testing.T) {
	compact, huff0 := realTables(t)
	var h1, h2 huff.Decoder
	nc, nh := 0, 0
	for i := range compact {
		if _, err := h1.ReadCompactTable(compact[i], nil); err != nil {
			t.Fatalf("table %d: %v", i, err)
		}
		if _, err := h2.ReadWeights(huff0[i]); err != nil {
			t.Fatal(err)
		}
		if h1.TL != h2.TL || h1.NSym != h2.NSym || !slices.Equal(h1.Single[:1<<h1.TL], h2.Single[:1<<h2.TL]) {
			t.Fatalf("table %d: the two descriptions differ", i)
		}
		nc += len(compact[i])
		nh += len(huff0[i])
	}
	if len(compact) < 50 || 3*nc > 2*nh {
		t.Fatalf("%d tables: compact %d bytes, huff0 %d", len(compact), nc, nh)
	}
	t.Logf("%d tables: compact %d bytes, huff0 %d", len(compact), nc, nh)
}
