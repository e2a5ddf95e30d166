//go:build !js

// (httptest servers cannot listen under GOOS=js)

package core

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/serve"
)

// hubServer serves an archive of the real file src as local/m with nzip
// serve's server; it returns the server's URL.
func hubServer(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("%s not present (../shared): %v", src, err)
	}
	in := codec.Input{Name: filepath.Base(src), R: bytes.NewReader(b), Size: int64(len(b))}
	if l, err := checkpoint.Open(bytes.NewReader(b), int64(len(b))); err == nil {
		in.Segments = l.Segments
	}
	var arc bytes.Buffer
	if _, err := codec.Encode(context.Background(), &arc, []codec.Input{in}, codec.EncodeOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.nzip")
	if err := os.WriteFile(p, arc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := serve.New(serve.Config{Log: log.New(io.Discard, "", 0)})
	if err := s.Add("local/m", p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Start(ctx)
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); cancel(); s.Close() })
	return ts.URL
}

// TestOpenURL: a model opened from nzip serve by its repository URL has the
// tensors of the original file, opening it reads a small part of the file,
// and a tensor read through it is the original's bytes.
func TestOpenURL(t *testing.T) {
	src := filepath.Join("..", "..", "..", "shared", "models", "bench", "real-bf16.safetensors")
	base := hubServer(t, src)
	want, err := OpenPath(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{base + "/local/m", base + "/local/m/resolve/main/real-bf16.safetensors"} {
		m, err := Open(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		hub := m.Files[0].R.(*hubFile).h
		if m.Path != u || m.Name != "real-bf16.safetensors" || m.Format != want.Format || len(m.Tensors) != len(want.Tensors) || m.Size != want.Size {
			t.Fatalf("%s: %q %q format %q, %d tensors, %d bytes; want format %q, %d tensors, %d bytes", u, m.Path, m.Name, m.Format, len(m.Tensors), m.Size, want.Format, len(want.Tensors), want.Size)
		}
		for i, tn := range m.Tensors {
			w := want.Tensors[i]
			if tn.Name != w.Name || tn.DType != w.DType || tn.Offset != w.Offset || tn.Bytes != w.Bytes {
				t.Fatalf("tensor %d: %+v, want %+v", i, tn, w)
			}
		}
		// the header only: the file is 10.3 MB, its header 175 KB
		if got := hub.Fetched(); got > m.Size/10 {
			t.Errorf("%s: opening fetched %d of %d bytes", u, got, m.Size)
		}
		// the largest tensor and a small one, read as the screens read them
		big, small := 0, 0
		for i, tn := range m.Tensors {
			if tn.Bytes > m.Tensors[big].Bytes {
				big = i
			}
			if tn.Bytes > 0 && tn.Bytes < 300 {
				small = i
			}
		}
		for _, d := range m.Data([]int{big, small}) {
			got := make([]byte, d.Length)
			if _, err := d.R.ReadAt(got, d.Offset); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, orig[d.Offset:d.Offset+d.Length]) {
				t.Errorf("%s: tensor %s differs from the original", u, d.Name)
			}
		}
		m.Close()
	}
	for _, u := range []string{base + "/local/none", base + "/local/m/resolve/main/none.bin", base + "/local", base + "/local/m/tree/main", "ftp://x/a/b"} {
		if _, err := Open(u, nil); err == nil {
			t.Errorf("%s opened", u)
		}
	}
}

// TestHubReads: reads of every length around the cache's blocks and the
// file's end return the original bytes, with io.EOF where the file ends.
func TestHubReads(t *testing.T) {
	src := filepath.Join("..", "..", "..", "shared", "models", "original", "stories260K.bf16.safetensors")
	base := hubServer(t, src)
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	h, name, err := openHub(context.Background(), base+"/local/m")
	if err != nil {
		t.Fatal(err)
	}
	f, err := h.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	ra := f.(io.ReaderAt)
	n := int64(len(orig))
	for _, c := range []struct{ off, len int64 }{
		{0, 8}, {hubBlock - 3, 7}, {hubBlock, hubBlock}, {1, 2*hubBlock + 5}, {n - 10, 10}, {n - 10, 20}, {n, 1}, {n - hubBlock - 1, hubBlock + 1},
	} {
		got := make([]byte, c.len)
		k, err := ra.ReadAt(got, c.off)
		end := min(c.off+c.len, n)
		if c.off >= n {
			end = c.off
		}
		if int64(k) != end-c.off || !bytes.Equal(got[:k], orig[c.off:end]) {
			t.Errorf("ReadAt(%d, %d): %d bytes, err %v", c.off, c.len, k, err)
		}
		if (end < c.off+c.len) != (err == io.EOF) {
			t.Errorf("ReadAt(%d, %d): err %v", c.off, c.len, err)
		}
	}
	all, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(all, orig) {
		t.Errorf("a sequential read: %d bytes, %v", len(all), err)
	}
	ents, err := h.ReadDir(".")
	if err != nil || len(ents) != 1 || ents[0].Name() != name {
		t.Errorf("ReadDir: %v %v", ents, err)
	}
}

func TestChooseWeights(t *testing.T) {
	for _, c := range []struct {
		files map[string]int64
		want  string
	}{
		{map[string]int64{"config.json": 900, "model.safetensors": 500, "tokenizer.json": 2000}, "model.safetensors"},
		{map[string]int64{"a.safetensors": 5, "b.safetensors": 9, "model.safetensors.index.json": 1}, "model.safetensors.index.json"},
		{map[string]int64{"README.md": 10, "notes.txt": 30}, "notes.txt"},
		{map[string]int64{"x.gguf": 10, "y.onnx": 30, "big.txt": 99}, "y.onnx"},
		{map[string]int64{}, ""},
	} {
		if got := chooseWeights(c.files); got != c.want {
			t.Errorf("%v: %q, want %q", c.files, got, c.want)
		}
	}
	if !IsURL("http://127.0.0.1:8080/a/b") || IsURL("/tmp/http:/x") || IsURL(AssetPrefix+"x") {
		t.Error("IsURL")
	}
}
