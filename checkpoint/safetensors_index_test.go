package checkpoint

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writeSharded writes a two-shard model and its index into dir and returns
// the index path.
func writeSharded(t *testing.T, dir string, weightMap string) string {
	t.Helper()
	s1 := makeST(nil, []stSpec{
		{Name: "a", DType: "F32", Shape: []int64{2}, Begin: 0, End: 8},
		{Name: "b", DType: "BF16", Shape: []int64{3}, Begin: 8, End: 14},
	}, make([]byte, 14))
	s2 := makeST(map[string]string{"format": "pt"}, []stSpec{
		{Name: "c", DType: "F16", Shape: []int64{1, 2}, Begin: 0, End: 4},
	}, make([]byte, 4))
	must(t, os.WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), s1, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), s2, 0o644))
	if weightMap == "" {
		weightMap = `{"c":"model-00002-of-00002.safetensors","a":"model-00001-of-00002.safetensors","b":"model-00001-of-00002.safetensors"}`
	}
	idx := `{"metadata":{"total_size":26,"note":"x"},"weight_map":` + weightMap + "}\n"
	path := filepath.Join(dir, "model.safetensors.index.json")
	must(t, os.WriteFile(path, []byte(idx), 0o644))
	return path
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSafetensorsIndex(t *testing.T) {
	dir := t.TempDir()
	path := writeSharded(t, dir, "")
	m, err := OpenPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != FormatSafetensorsIndex || len(m.Files) != 3 {
		t.Fatalf("format %q with %d files", m.Format, len(m.Files))
	}
	wantNames := []string{"model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
	wantTensors := []int{0, 2, 1}
	for i, f := range m.Files {
		st, err := os.Stat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != wantNames[i] || f.Size != st.Size() || f.Layout.Size != f.Size || len(f.Layout.Tensors()) != wantTensors[i] {
			t.Errorf("file %d: %+v", i, f)
		}
		if err := f.Layout.Validate(); err != nil {
			t.Errorf("file %d: %v", i, err)
		}
	}
	idx := m.Files[0].Layout
	if len(idx.Segments) != 1 || idx.Segments[0].IsTensor() || idx.Segments[0].Length != idx.Size {
		t.Errorf("index segments %+v", idx.Segments)
	}
	if strings.Join(idx.Shards, ",") != "model-00001-of-00002.safetensors,model-00002-of-00002.safetensors" {
		t.Errorf("shards %v", idx.Shards)
	}
	if idx.Metadata["total_size"] != "26" || idx.Metadata["note"] != "x" {
		t.Errorf("metadata %v", idx.Metadata)
	}
	if m.Files[2].Layout.Metadata["format"] != "pt" {
		t.Errorf("shard metadata %v", m.Files[2].Layout.Metadata)
	}

	// Open on the bytes alone gives the same index layout, and a plain
	// shard opened by path is a one-file model.
	b, _ := os.ReadFile(path)
	l := openBytes(t, b)
	if l.Format != FormatSafetensorsIndex || len(l.Shards) != 2 {
		t.Errorf("Open: %+v", l)
	}
	m1, err := OpenPath(m.Files[1].Path)
	if err != nil || m1.Format != "safetensors" || len(m1.Files) != 1 || m1.Files[0].Name != wantNames[1] {
		t.Errorf("OpenPath(shard) = %+v, %v", m1, err)
	}
}

func TestSafetensorsIndexErrors(t *testing.T) {
	t.Run("missing shard", func(t *testing.T) {
		dir := t.TempDir()
		path := writeSharded(t, dir, "")
		must(t, os.Remove(filepath.Join(dir, "model-00002-of-00002.safetensors")))
		_, err := OpenPath(path)
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `"model-00002-of-00002.safetensors"`) {
			t.Errorf("got %v, want a not-exist error naming the shard", err)
		}
	})
	t.Run("tensor not in shard", func(t *testing.T) {
		dir := t.TempDir()
		path := writeSharded(t, dir, `{"a":"model-00001-of-00002.safetensors","zz":"model-00002-of-00002.safetensors"}`)
		_, err := OpenPath(path)
		wantFormatError(t, err, ErrMalformed, -1, `tensor "zz" not found in shard "model-00002-of-00002.safetensors"`)
	})
	t.Run("shard not safetensors", func(t *testing.T) {
		dir := t.TempDir()
		path := writeSharded(t, dir, "")
		must(t, os.WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), []byte("not a checkpoint"), 0o644))
		_, err := OpenPath(path)
		wantFormatError(t, err, ErrMalformed, -1, "is unknown, not safetensors")
	})
	t.Run("shard malformed", func(t *testing.T) {
		dir := t.TempDir()
		path := writeSharded(t, dir, "")
		bad := makeST(nil, []stSpec{{Name: "c", DType: "F16", Shape: []int64{1, 2}, Begin: 0, End: 4}}, nil) // data missing
		must(t, os.WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"), bad, 0o644))
		_, err := OpenPath(path)
		wantFormatError(t, err, ErrTruncated, -1, `shard "model-00002-of-00002.safetensors"`)
	})
	for _, shard := range []string{"../x.safetensors", "sub/x.safetensors", `sub\x.safetensors`, "..", ".", "", "/abs.safetensors"} {
		t.Run("shard name "+shard, func(t *testing.T) {
			wm := `{"a":` + strconv.Quote(shard) + `}`
			idx := []byte(`{"weight_map":` + wm + `}`)
			_, err := Open(bytes.NewReader(idx), int64(len(idx)))
			wantFormatError(t, err, ErrMalformed, -1, "not a plain file name")
		})
	}
	for name, idx := range map[string]string{
		"weight_map not an object": `{"weight_map":[1,2]}`,
		"shard not a string":       `{"weight_map":{"a":1}}`,
		"weight_map null":          `{"weight_map":null}`,
		"invalid JSON":             `{"weight_map":{"a":"b.safetensors",}}`,
		"empty tensor name":        `{"weight_map":{"":"b.safetensors"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(bytes.NewReader([]byte(idx)), int64(len(idx)))
			wantFormatError(t, err, ErrMalformed, -1)
		})
	}
	t.Run("too large", func(t *testing.T) {
		f := bigFile{head: []byte(`{"weight_map":{`), size: 200 << 20}
		_, err := Open(f, f.size)
		wantFormatError(t, err, ErrTooLarge, 0, "limit")
	})
}
