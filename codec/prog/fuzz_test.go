package prog

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/dtype"
)

var updateSeeds = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzRecords from the real files")

// fuzzBudget bounds the bytes one input may decode to (as in package
// codec: 64 KiB + 8 per input byte), so that a short payload naming many
// records does not hold the fuzzer.
func fuzzBudget(in int) int { return 64<<10 + 8*in }

// FuzzRecords: any payload and record count decode to an error or to
// records, never a panic; Layout reads any payload without a panic, and
// every payload that decodes, with its streams end to end; records that
// decode code again to a payload that decodes to them. The committed seeds (testdata/fuzz/FuzzRecords)
// are a few records of every type in the real GGUF files and 64 bytes
// of a real TF.js uint8 tensor
// (TestFuzzSeeds -update writes them).
func FuzzRecords(f *testing.F) {
	for _, s := range Schemas() {
		var e Encoder
		f.Add(e.Append(nil, quantLike(s, 6, 1), s), uint16(6))
	}
	f.Fuzz(func(t *testing.T, c []byte, n uint16) {
		s := Type(c)
		if s == nil || int(n)*s.Bytes > fuzzBudget(len(c)) {
			return
		}
		var d Decoder
		dst := make([]byte, int(n)*s.Bytes)
		_, ls, lerr := Layout(c, len(dst))
		if err := d.Decode(dst, c); err != nil {
			return
		}
		// what decodes, Layout reads, its streams tiling the payload
		if lerr != nil {
			t.Fatalf("decodes, but Layout: %v", lerr)
		}
		pos := 1
		for _, l := range ls {
			if l.Start != pos || l.End <= l.Start {
				t.Fatalf("stream %s at %d..%d, want from %d", l.Field.Name, l.Start, l.End, pos)
			}
			pos = l.End
		}
		if pos != len(c) {
			t.Fatalf("streams end at %d of %d", pos, len(c))
		}
		var e Encoder
		back := make([]byte, len(dst))
		if err := d.Decode(back, e.Append(nil, dst, s)); err != nil || !bytes.Equal(back, dst) {
			t.Fatalf("decoded records do not round-trip: %v", err)
		}
	})
}

// TestFuzzSeeds writes FuzzRecords' committed seeds with -update: the
// payload of the first 8 records of the first tensor of each type found
// in the real files.
func TestFuzzSeeds(t *testing.T) {
	if !*updateSeeds {
		t.Skip("writes seeds only with -update")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzRecords")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	done := map[*Schema]bool{}
	for _, name := range []string{"real-f32.mixed.gguf", "stories260K-base.Q4_0.gguf", "stories260K-base.Q4_1.gguf", "stories260K-base.Q5_1.gguf", "stories260K-base.IQ4_NL.gguf"} {
		data, segs := realTensors(t, name)
		for _, g := range segs {
			s := ByName(g.Type)
			if done[s] {
				continue
			}
			done[s] = true
			n := min(8, int(g.Length)/s.Bytes)
			var e Encoder
			c := e.Append(nil, data[g.Offset:g.Offset+int64(n*s.Bytes)], s)
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\n", c, n)
			if err := os.WriteFile(filepath.Join(dir, "real-"+s.Name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// I8: 64 bytes of the first uint8 tensor of a real TF.js model (as the
	// codec plans tensors of at least 4 KiB, but any length decodes)
	m, err := checkpoint.OpenPath(filepath.Join(shared, "..", "original", "handtrack", "handtrack.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range m.Files {
		for _, g := range mf.Layout.Segments {
			if g.DType != dtype.U8 || g.Length < 64 {
				continue
			}
			data, err := os.ReadFile(mf.Path)
			if err != nil {
				t.Fatal(err)
			}
			var e Encoder
			c := e.Append(nil, data[g.Offset:g.Offset+64], ByName("I8"))
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\n", c, 64)
			if err := os.WriteFile(filepath.Join(dir, "real-I8"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("handtrack: no uint8 tensor")
}
