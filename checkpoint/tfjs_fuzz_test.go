package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	"neuralzip/dtype"
)

// FuzzTFJS opens model.json bytes. Seeds: the first 64 KiB of the real
// model.json files and their manifests alone, the fixtures and a few
// hostile manifests. An accepted file must give a valid layout whose
// companions describe valid weight files, and encoding/json must read the
// same manifest from it. The weights are then placed in generated weight
// files of 0-300 bytes (sizes taken from the input), which must give valid
// layouts or a FormatError.
func FuzzTFJS(f *testing.F) {
	dir := filepath.Join("..", "..", "shared", "models", "original")
	for _, c := range tfjsRealCases() {
		b, err := os.ReadFile(filepath.Join(dir, c.dir, c.json))
		if err != nil {
			continue
		}
		f.Add(b[:min(len(b), 64<<10)])
		if i := bytes.Index(b, []byte(`"weightsManifest"`)); i > 0 {
			m := append([]byte("{"), b[i:]...)
			f.Add(m[:min(len(m), 64<<10)])
		}
	}
	for p, b := range tfjsFixtures() {
		if filepath.Ext(p) == ".json" {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"weightsManifest":[{"paths":["a","b/c"],"weights":[{"name":"s","shape":[2],"dtype":"string"},{"name":"w","shape":[3,1],"dtype":"float32","quantization":{"dtype":"uint8","scale":1,"min":0}},{"name":"e","shape":[0],"dtype":"bool"}]}]}`))
	f.Add([]byte(`{"format":"layers-model","weightsManifest":[{"paths":["x.bin"],"weights":[{"name":"a","shape":[-1],"dtype":"float32"}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := openTFJS(bytes.NewReader(b), int64(len(b)))
		checkOpenResult(t, b, l, err)
		if err != nil {
			return
		}
		if l.Format != FormatTFJS || len(l.Tensors()) != 0 {
			t.Fatalf("layout %+v", l)
		}
		for _, c := range l.Companions {
			if c.Segments == nil || c.DataFormat != FormatTFJSWeights {
				t.Fatalf("companion %+v", c)
			}
			var end int64
			for _, s := range c.Segments {
				end = max(end, s.End())
			}
			if end <= 1<<20 {
				if _, err := describedLayout(FormatTFJS, c, end+3); err != nil {
					t.Fatalf("companion %q: %v", c.Name, err)
				}
			}
		}
		_, groups, err := readTFJS(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		tfjsCheckAgainstEncodingJSON(t, b, groups)
		tfjsFuzzPlace(t, b, groups)
	})
}

// tfjsCheckAgainstEncodingJSON decodes a model.json that readTFJS accepted
// with encoding/json and checks that both read the same manifest.
func tfjsCheckAgainstEncodingJSON(t *testing.T, b []byte, groups []tfjsGroup) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimPrefix(b, utf8BOM), &top); err != nil {
		t.Fatalf("accepted a model.json that encoding/json rejects: %v", err)
	}
	var man []map[string]json.RawMessage
	if raw, ok := top["weightsManifest"]; ok {
		if err := json.Unmarshal(raw, &man); err != nil {
			t.Fatalf("weightsManifest: %v", err)
		}
	}
	if len(man) != len(groups) {
		t.Fatalf("%d groups, encoding/json sees %d", len(groups), len(man))
	}
	for i, mg := range man {
		var paths []string
		var ws []map[string]json.RawMessage
		if json.Unmarshal(mg["paths"], &paths) != nil || json.Unmarshal(mg["weights"], &ws) != nil {
			t.Fatalf("group %d: encoding/json cannot read it", i)
		}
		g := groups[i]
		if !slices.Equal(paths, g.paths) || len(ws) != len(g.weights) {
			t.Fatalf("group %d: paths %q weights %d vs %q %d", i, paths, len(ws), g.paths, len(g.weights))
		}
		for k, mw := range ws {
			var name, dt string
			var shape []int64
			if json.Unmarshal(mw["name"], &name) != nil || json.Unmarshal(mw["dtype"], &dt) != nil || json.Unmarshal(mw["shape"], &shape) != nil {
				t.Fatalf("group %d weight %d: encoding/json cannot read it", i, k)
			}
			w := g.weights[k]
			stored := dt
			if q, ok := mw["quantization"]; ok && string(q) != "null" {
				var qm map[string]json.RawMessage
				if json.Unmarshal(q, &qm) != nil || json.Unmarshal(qm["dtype"], &stored) != nil {
					t.Fatalf("weight %q: quantization %s", name, q)
				}
			}
			if name != w.name || !slices.Equal(shape, w.shape) || tfjsDType(stored) != w.dt || (stored == "string") != (w.length < 0) {
				t.Fatalf("weight %q %v %s vs %+v", name, shape, stored, w)
			}
		}
	}
}

// tfjsFuzzPlace places the groups in weight files whose sizes come from
// the input's bytes, with random contents.
func tfjsFuzzPlace(t *testing.T, b []byte, groups []tfjsGroup) {
	fsys := fstest.MapFS{}
	sizes := map[string]int64{}
	k := 0
	for _, g := range groups {
		for _, p := range g.paths {
			n := 0
			if len(b) > 0 {
				n = int(b[k%len(b)]) + int(b[(k+7)%len(b)])/4
			}
			data := make([]byte, n)
			for i := range data {
				data[i] = b[(k+i)%len(b)]
			}
			k++
			if fs.ValidPath(p) {
				fsys[p] = &fstest.MapFile{Data: data}
				sizes[p] = int64(n)
			}
		}
	}
	comps, err := tfjsCompanions(groups, int64(len(b)), fsys)
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) {
			t.Fatalf("placement error %v (%T)", err, err)
		}
		return
	}
	for _, c := range comps {
		l, err := describedLayout(FormatTFJS, c, sizes[c.Name])
		if err != nil {
			t.Fatalf("companion %q of %d bytes: %v", c.Name, sizes[c.Name], err)
		}
		for _, s := range l.Tensors() {
			if s.DType == dtype.Invalid {
				t.Fatalf("tensor %+v without a type", s)
			}
		}
	}
}
