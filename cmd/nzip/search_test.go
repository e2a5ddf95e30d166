package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nzip compress -search N: the archive decompresses to the input, is the
// same at 1 and 2 threads, -search 0 is the archive of no flag, and a
// negative budget is a usage error. setup build learns a prior (shown by
// setup show) unless -prior 0, and compress -setup -search uses it.
func TestCompressSearch(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.safetensors")
	orig := writeSafetensors(t, in, 40000)
	arc := func(name string, args ...string) []byte {
		t.Helper()
		out := filepath.Join(dir, name)
		if code, _, errs := nzip(t, append(append([]string{"compress", "-q", "-o", out}, args...), in)...); code != 0 {
			t.Fatalf("compress %v: %d %s", args, code, errs)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		back := filepath.Join(dir, name+".out")
		if code, _, errs := nzip(t, "decompress", "-q", "-o", back, out); code != 0 {
			t.Fatalf("decompress %v: %d %s", args, code, errs)
		}
		if got, _ := os.ReadFile(back); !bytes.Equal(got, orig) {
			t.Fatalf("compress %v: roundtrip differs", args)
		}
		return b
	}
	plain := arc("plain.nzip")
	if !bytes.Equal(arc("s0.nzip", "-search", "0"), plain) {
		t.Fatal("-search 0 is not the default archive")
	}
	s1 := arc("s1.nzip", "-search", "4", "-threads", "1")
	if !bytes.Equal(arc("s2.nzip", "-search", "4", "-threads", "2"), s1) {
		t.Fatal("-search 4: archives differ between 1 and 2 threads")
	}
	code, _, errs := nzip(t, "compress", "-o", filepath.Join(dir, "x.nzip"), "-search", "4", in)
	if code != 0 || !strings.Contains(errs, "search: 2 tensors") {
		t.Fatalf("compress -search summary: %d %q", code, errs)
	}
	if code, _, errs := nzip(t, "compress", "-search", "-1", in); code != 2 || !strings.Contains(errs, "-search -1") {
		t.Fatalf("-search -1: %d %q", code, errs)
	}

	sp := filepath.Join(dir, "p.nzsetup")
	buildSetup(t, sp, "-k", "2", in)
	code, out, errs := nzip(t, "setup", "show", "-json", sp)
	var rep setupReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("show: %d %v %s", code, err, errs)
	}
	if len(rep.Prior) == 0 {
		t.Fatal("setup build learned no prior")
	}
	roots := 0
	for _, p := range rep.Prior {
		if p.Parent == "" && p.Count > 0 {
			roots++
		}
	}
	if roots != 2 {
		t.Fatalf("prior of %d searches, want 2 (the two tensors): %+v", roots, rep.Prior)
	}
	if _, out, _ := nzip(t, "setup", "show", sp); !strings.Contains(out, "search prior") {
		t.Fatalf("setup show lacks the prior:\n%s", out)
	}
	np := filepath.Join(dir, "np.nzsetup")
	buildSetup(t, np, "-k", "2", "-prior", "0", in)
	b, _ := os.ReadFile(np)
	if len(b) < 10 || b[8] != 2 {
		t.Fatalf("-prior 0: setup file version %d, want 2", b[8])
	}
	arc("setup.nzip", "-setup", sp, "-search", "3")
}
