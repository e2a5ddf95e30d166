package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSparse writes a safetensors file of one BF16 tensor [rows, 64]
// whose even columns are always zero and odd ones never (random values
// in [1, 2)): sparsity 1/2, and a per-column mask that costs nothing.
func writeSparse(t *testing.T, path string, rows int) {
	t.Helper()
	var bf []byte
	x := uint32(1)
	for i := 0; i < rows*64; i++ {
		var v uint16
		if i%2 == 1 {
			x = x*1664525 + 1013904223
			v = 0x3f80 | uint16(x>>25) // 1.0 to 2.0, 128 mantissas
		}
		bf = binary.LittleEndian.AppendUint16(bf, v)
	}
	hdr := fmt.Sprintf(`{"act":{"dtype":"BF16","shape":[%d,64],"data_offsets":[0,%d]}}`, rows, len(bf))
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	file = append(append(file, hdr...), bf...)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInspectSparse: inspect shows each tensor's zeros and sparse optimum
// beside the archive's bytes, for the checkpoint and its archive.
func TestInspectSparse(t *testing.T) {
	in := filepath.Join(t.TempDir(), "act.safetensors")
	writeSparse(t, in, 512)
	if code, _, errs := nzip(t, "compress", "-q", in); code != 0 {
		t.Fatal(errs)
	}
	for _, p := range []string{in, in + ".nzip"} {
		code, out, errs := nzip(t, "inspect", "-json", p)
		if code != 0 {
			t.Fatal(errs)
		}
		var rep inspectReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		tr := rep.Files[0].Tensors[0]
		// 16384 nonzero values of about 7 bits, mask free by column
		want := 16384 * 7.0 / 8
		if tr.Sparsity != 0.5 || math.Abs(tr.Optimum-want) > 0.02*want || rep.Files[0].OptimumRatio <= 1 {
			t.Fatalf("%s: sparsity %v, optimum %v bytes (want about %.0f), file %+v", p, tr.Sparsity, tr.Optimum, want, rep.Files[0])
		}
		code, out, _ = nzip(t, "inspect", p)
		if code != 0 || !strings.Contains(out, "ZEROS") || !strings.Contains(out, "50.0%") || !strings.Contains(out, "sparse optimum") {
			t.Fatalf("inspect text: %s", out)
		}
		if rep.Kind == "archive" && (rep.Blocks.Sparse == 0 || !strings.Contains(out, "sparse 1")) {
			t.Fatalf("archive without a sparse block: %+v\n%s", rep.Blocks, out)
		}
	}
}

// compress -no-sparse writes an archive of format version 7 without
// sparse blocks, larger than the default on sparse data, and both restore
// the file.
func TestCompressNoSparse(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "act.safetensors")
	writeSparse(t, in, 512)
	orig, _ := os.ReadFile(in)
	def, dense := filepath.Join(dir, "d.nzip"), filepath.Join(dir, "n.nzip")
	if code, _, errs := nzip(t, "compress", "-q", "-o", def, in); code != 0 {
		t.Fatal(errs)
	}
	if code, _, errs := nzip(t, "compress", "-q", "-no-sparse", "-o", dense, in); code != 0 {
		t.Fatal(errs)
	}
	for _, c := range []struct {
		path    string
		version int
		sparse  bool
	}{{def, 8, true}, {dense, 7, false}} {
		b, _ := os.ReadFile(c.path)
		if v := int(binary.LittleEndian.Uint16(b[8:])); v != c.version {
			t.Errorf("%s: format version %d, want %d", c.path, v, c.version)
		}
		code, out, errs := nzip(t, "inspect", "-json", c.path)
		if code != 0 {
			t.Fatal(errs)
		}
		var rep inspectReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if (rep.Blocks.Sparse > 0) != c.sparse {
			t.Errorf("%s: %d sparse blocks", c.path, rep.Blocks.Sparse)
		}
		if code, out, _ := nzip(t, "decompress", "-o", "-", c.path); code != 0 || out != string(orig) {
			t.Errorf("%s: does not restore the file (exit %d)", c.path, code)
		}
	}
	if a, b := fileSize(t, def), fileSize(t, dense); a >= b {
		t.Errorf("sparse archive %d bytes, -no-sparse %d", a, b)
	}
}
