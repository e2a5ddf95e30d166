package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"neuralzip/dtype"
)

// The -update flag rewrites the fixtures in testdata/tfjs. It is declared
// in init, after every package-level variable, and only when no other test
// file of the package has declared it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite generated test files in testdata")
	}
}

func tfjsUpdate() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	v, _ := g.Get().(bool)
	return v
}

// ---- fixture generator ----

// tfjsW is one weight of a generated manifest and its bytes in the stream.
type tfjsW struct {
	Name         string         `json:"name"`
	Shape        []int64        `json:"shape"`
	DType        string         `json:"dtype"`
	Quantization map[string]any `json:"quantization,omitempty"`
	data         []byte
}

// tfjsG is one generated group: its weights are cut into files of the
// given sizes (the last file takes the rest, plus extra bytes).
type tfjsG struct {
	paths []string
	sizes []int // of every file but the last
	extra int   // bytes after the weights in the last file
	ws    []tfjsW
}

type tfjsManifestGroup struct {
	Paths   []string `json:"paths"`
	Weights []tfjsW  `json:"weights"`
}

func tfjsF32(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func tfjsSeq(n int, f func(i int) float32) []byte {
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = f(i)
	}
	return tfjsF32(vals...)
}

func tfjsStrings(ss ...string) []byte {
	var b []byte
	for _, s := range ss {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	return b
}

// tfjsFixtureGroups returns the weights of the fixture graph model: two
// groups, in a subdirectory; the first cut after 210 bytes so that "emb"
// straddles its two files in the middle of an element.
func tfjsFixtureGroups() []tfjsG {
	f16 := make([]byte, 16)
	for i := range 8 {
		binary.LittleEndian.PutUint16(f16[2*i:], uint16(0x3c00+0x40*i)) // 1, 1.0625, ...
	}
	u8 := make([]byte, 36)
	for i := range u8 {
		u8[i] = byte(7 * i)
	}
	u16 := make([]byte, 12)
	for i := range 6 {
		binary.LittleEndian.PutUint16(u16[2*i:], uint16(1000*i+1))
	}
	i32 := make([]byte, 20)
	for i := range 5 {
		binary.LittleEndian.PutUint32(i32[4*i:], uint32(int32(i-2)))
	}
	return []tfjsG{
		{
			paths: []string{"weights/group1-shard1of2.bin", "weights/group1-shard2of2.bin"},
			sizes: []int{210},
			ws: []tfjsW{
				{Name: "dense/kernel", Shape: []int64{4, 8}, DType: "float32", data: tfjsSeq(32, func(i int) float32 { return float32(i-16) * 0.125 })},
				{Name: "dense/bias", Shape: []int64{8}, DType: "float32", Quantization: map[string]any{"dtype": "float16", "original_dtype": "float32"}, data: f16},
				{Name: "conv/kernel", Shape: []int64{3, 3, 2, 2}, DType: "float32", Quantization: map[string]any{"dtype": "uint8", "scale": 0.01, "min": -0.5, "original_dtype": "float32"}, data: u8},
				{Name: "conv/bias", Shape: []int64{5}, DType: "int32", data: i32},
				{Name: "emb", Shape: []int64{10}, DType: "float32", data: tfjsSeq(10, func(i int) float32 { return float32(i) + 0.5 })},
				{Name: "flags", Shape: []int64{3}, DType: "bool", data: []byte{1, 0, 1}},
				{Name: "vocab", Shape: []int64{2}, DType: "string", data: tfjsStrings("ab", "xyz")},
				{Name: "after/scale", Shape: []int64{2}, DType: "float32", data: tfjsF32(-1.5, 2.25)},
			},
		},
		{
			paths: []string{"weights/group2-shard1of1.bin"},
			extra: 4,
			ws: []tfjsW{
				{Name: "head/kernel", Shape: []int64{2, 3}, DType: "float32", Quantization: map[string]any{"dtype": "uint16", "scale": 0.001, "min": -1, "original_dtype": "float32"}, data: u16},
				{Name: "head/bias", Shape: []int64{3}, DType: "float32", data: tfjsF32(0.25, -0.25, 3)},
				{Name: "empty", Shape: []int64{0, 4}, DType: "float32"},
				{Name: "cplx", Shape: []int64{2}, DType: "complex64", data: tfjsF32(1, -1, 0.5, 2)},
			},
		},
	}
}

// tfjsWrite returns model.json (the fields given, then the manifest) and
// the weight files of groups, by path.
func tfjsWrite(head string, groups []tfjsG) map[string][]byte {
	files := map[string][]byte{}
	var man []tfjsManifestGroup
	for _, g := range groups {
		var stream []byte
		for _, w := range g.ws {
			stream = append(stream, w.data...)
		}
		stream = append(stream, make([]byte, g.extra)...)
		for i, p := range g.paths {
			n := len(stream)
			if i < len(g.sizes) {
				n = g.sizes[i]
			}
			files[p] = stream[:n:n]
			stream = stream[n:]
		}
		man = append(man, tfjsManifestGroup{Paths: g.paths, Weights: g.ws})
	}
	mj, err := json.MarshalIndent(man, "  ", "  ")
	if err != nil {
		panic(err)
	}
	files["model.json"] = []byte("{\n  " + head + ",\n  \"weightsManifest\": " + string(mj) + "\n}\n")
	return files
}

// tfjsFixtures returns the files of testdata/tfjs, by slash path.
func tfjsFixtures() map[string][]byte {
	out := map[string][]byte{}
	graph := tfjsWrite(`"format": "graph-model",
  "generatedBy": "neuralzip checkpoint/tfjs_test.go",
  "convertedBy": "hand-written fixture",
  "modelTopology": {"node": [{"name": "dense/kernel", "op": "Const"}, {"name": "x", "op": "Placeholder"}], "versions": {"producer": 1}}`, tfjsFixtureGroups())
	for p, b := range graph {
		out[p] = b
	}
	layers := tfjsWrite(`"modelTopology": {"class_name": "Sequential", "config": {"name": "seq", "layers": [{"class_name": "Dense", "config": {"units": 2, "name": "dense_Dense1"}}]}, "keras_version": "tfjs-layers 4.22.0", "backend": "tensor_flow.js"},
  "format": "layers-model",
  "generatedBy": "TensorFlow.js tfjs-layers v4.22.0",
  "convertedBy": null`, []tfjsG{{
		paths: []string{"group1-shard1of1.bin"},
		ws: []tfjsW{
			{Name: "dense_Dense1/kernel", Shape: []int64{3, 2}, DType: "float32", data: tfjsSeq(6, func(i int) float32 { return float32(i) / 3 })},
			{Name: "dense_Dense1/bias", Shape: []int64{2}, DType: "float32", data: tfjsF32(0.1, -0.1)},
		},
	}})
	for p, b := range layers {
		out["layers/"+p] = b
	}
	return out
}

const tfjsTestdata = "testdata/tfjs"

// TestTFJSFixtures checks that testdata/tfjs holds what the generator
// writes; -update rewrites it.
func TestTFJSFixtures(t *testing.T) {
	files := tfjsFixtures()
	if tfjsUpdate() {
		must(t, os.RemoveAll(tfjsTestdata))
		for p, b := range files {
			path := filepath.Join(tfjsTestdata, filepath.FromSlash(p))
			must(t, os.MkdirAll(filepath.Dir(path), 0o755))
			must(t, os.WriteFile(path, b, 0o644))
		}
	}
	var found []string
	err := filepath.WalkDir(tfjsTestdata, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(tfjsTestdata, p)
		found = append(found, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatalf("%v (run go test ./checkpoint -run TestTFJSFixtures -update)", err)
	}
	var want []string
	for p := range files {
		want = append(want, p)
	}
	slices.Sort(want)
	slices.Sort(found)
	if !slices.Equal(found, want) {
		t.Fatalf("testdata/tfjs holds %v, want %v (run with -update)", found, want)
	}
	for p, b := range files {
		got, err := os.ReadFile(filepath.Join(tfjsTestdata, filepath.FromSlash(p)))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("testdata/tfjs/%s differs from the generator (run with -update)", p)
		}
	}
}

// ---- expectations ----

// tfjsWant is an expected tensor segment of a weight file.
type tfjsWant struct {
	name   string
	dt     dtype.DType
	typ    string
	shape  []int64
	offset int64
	length int64
}

// tfjsFixtureWant lists the tensors of each weight file of the fixture
// graph model once it is placed by the real file sizes.
func tfjsFixtureWant() map[string][]tfjsWant {
	return map[string][]tfjsWant{
		"weights/group1-shard1of2.bin": {
			{"dense/kernel", dtype.F32, "float32", []int64{4, 8}, 0, 128},
			{"dense/bias", dtype.F16, "float32 as float16", []int64{8}, 128, 16},
			{"conv/kernel", dtype.U8, "float32 as uint8", []int64{3, 3, 2, 2}, 144, 36},
			{"conv/bias", dtype.I32, "int32", []int64{5}, 180, 20},
			{"emb", dtype.F32, "float32", []int64{2}, 200, 8}, // bytes 208-209 opaque
		},
		"weights/group1-shard2of2.bin": {
			{"emb#1", dtype.F32, "float32", []int64{7}, 2, 28},
			{"flags", dtype.Bool, "bool", []int64{3}, 30, 3},
			// vocab: 13 opaque bytes
			{"after/scale", dtype.F32, "float32", []int64{2}, 46, 8},
		},
		"weights/group2-shard1of1.bin": {
			{"head/kernel", dtype.U16, "float32 as uint16", []int64{2, 3}, 0, 12},
			{"head/bias", dtype.F32, "float32", []int64{3}, 12, 12},
			{"empty", dtype.F32, "float32", []int64{0, 4}, 24, 0},
			{"cplx", dtype.C64, "complex64", []int64{2}, 24, 16},
			// 4 opaque bytes
		},
	}
}

// checkTFJSFile checks the layout of a weight file against want and
// against its bytes.
func checkTFJSFile(t *testing.T, f File, want []tfjsWant, data []byte) {
	t.Helper()
	l := f.Layout
	if l.Format != FormatTFJSWeights || l.Size != int64(len(data)) {
		t.Fatalf("%s: format %q size %d, want %q %d", f.Name, l.Format, l.Size, FormatTFJSWeights, len(data))
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	ts := l.Tensors()
	if len(ts) != len(want) {
		t.Fatalf("%s: %d tensors, want %d: %+v", f.Name, len(ts), len(want), ts)
	}
	for i, w := range want {
		s := ts[i]
		if s.Name != w.name || s.DType != w.dt || s.Type != w.typ || !slices.Equal(s.Shape, w.shape) || s.Offset != w.offset || s.Length != w.length {
			t.Errorf("%s: tensor %d is %+v, want %+v", f.Name, i, s, w)
		}
	}
}

// tfjsOpenPathEmulated does what OpenPath does for a TF.js model once
// model.go calls tfjsPlaceInShards.
func tfjsOpenPathEmulated(path string) (*Model, error) {
	f, err := openFile(path, nil)
	if err != nil {
		return nil, err
	}
	if err := tfjsPlaceInShards(&f); err != nil {
		return nil, err
	}
	m := &Model{Format: f.Layout.Format, Files: []File{f}}
	for _, c := range f.Layout.Companions {
		cf, err := openCompanion(filepath.Dir(path), f.Layout.Format, c)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, cf)
	}
	return m, nil
}

// tfjsOpeners returns the ways to open a model by path that place weights
// by the real file sizes: the emulation always, OpenPath once model.go
// calls tfjsPlaceInShards.
func tfjsOpeners() map[string]func(string) (*Model, error) {
	ops := map[string]func(string) (*Model, error){"emulated": tfjsOpenPathEmulated}
	if b, err := os.ReadFile("model.go"); err == nil && bytes.Contains(b, []byte("tfjsPlaceInShards(")) {
		ops["OpenPath"] = OpenPath
	}
	return ops
}

// tfjsCopyFixture copies testdata/tfjs into a temporary directory.
func tfjsCopyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for p, b := range tfjsFixtures() {
		path := filepath.Join(dir, filepath.FromSlash(p))
		must(t, os.MkdirAll(filepath.Dir(path), 0o755))
		must(t, os.WriteFile(path, b, 0o644))
	}
	return dir
}

// ---- tests ----

func TestTFJSOpenPath(t *testing.T) {
	files := tfjsFixtures()
	want := tfjsFixtureWant()
	for how, open := range tfjsOpeners() {
		t.Run(how, func(t *testing.T) {
			m, err := open(filepath.Join(tfjsTestdata, "model.json"))
			if err != nil {
				t.Fatal(err)
			}
			if m.Format != FormatTFJS || len(m.Files) != 4 {
				t.Fatalf("format %q with %d files", m.Format, len(m.Files))
			}
			mj := m.Files[0]
			if mj.Name != "model.json" || len(mj.Layout.Segments) != 1 || mj.Layout.Segments[0].IsTensor() || mj.Layout.Segments[0].Length != mj.Size {
				t.Fatalf("model.json: %+v", mj.Layout)
			}
			if err := mj.Layout.Validate(); err != nil {
				t.Fatal(err)
			}
			if mj.Layout.Metadata["format"] != "graph-model" || mj.Layout.Metadata["convertedBy"] != "hand-written fixture" {
				t.Errorf("metadata %v", mj.Layout.Metadata)
			}
			for _, f := range m.Files[1:] {
				w, ok := want[f.Name]
				if !ok {
					t.Fatalf("unexpected file %q", f.Name)
				}
				checkTFJSFile(t, f, w, files[f.Name])
			}
			// The tensors hold the weights' bytes: "emb" and "emb#1" are
			// elements 0-1 and 3-9.
			shard1, shard2 := files["weights/group1-shard1of2.bin"], files["weights/group1-shard2of2.bin"]
			emb := tfjsFixtureGroups()[0].ws[4].data
			if !bytes.Equal(shard1[200:208], emb[:8]) || !bytes.Equal(shard2[2:30], emb[12:]) {
				t.Error("emb parts do not hold the weight's elements")
			}
			if !bytes.Equal(shard2[46:54], tfjsF32(-1.5, 2.25)) {
				t.Error("after/scale is misplaced")
			}
		})
	}
}

// TestTFJSOpen checks what Open alone, without the weight files, makes of
// the fixtures: single-file groups are placed, the 210-byte cut of the
// first group cannot be inferred.
func TestTFJSOpen(t *testing.T) {
	files := tfjsFixtures()
	l := openBytes(t, files["model.json"])
	if l.Format != FormatTFJS || len(l.Companions) != 3 || l.Shards != nil {
		t.Fatalf("%+v", l)
	}
	want := tfjsFixtureWant()
	for _, c := range l.Companions {
		if c.DataFormat != FormatTFJSWeights || c.Format != "" || c.Segments == nil {
			t.Errorf("companion %+v", c)
		}
		switch c.Name {
		case "weights/group1-shard1of2.bin", "weights/group1-shard2of2.bin":
			if len(c.Segments) != 0 {
				t.Errorf("%s: %d segments, want none", c.Name, len(c.Segments))
			}
		case "weights/group2-shard1of1.bin":
			f := File{Name: c.Name, Size: int64(len(files[c.Name]))}
			var err error
			if f.Layout, err = describedLayout(FormatTFJS, c, f.Size); err != nil {
				t.Fatal(err)
			}
			checkTFJSFile(t, f, want[c.Name], files[c.Name])
		default:
			t.Errorf("unexpected companion %q", c.Name)
		}
	}

	// The layers model: modelTopology first, one file.
	ll := openBytes(t, files["layers/model.json"])
	if ll.Format != FormatTFJS || len(ll.Companions) != 1 || ll.Companions[0].Name != "group1-shard1of1.bin" || len(ll.Companions[0].Segments) != 2 {
		t.Fatalf("layers model: %+v", ll)
	}
	if ll.Metadata["format"] != "layers-model" || ll.Metadata["convertedBy"] != "" {
		t.Errorf("layers metadata %v", ll.Metadata)
	}
	// OpenPath needs nothing more for it.
	m, err := OpenPath(filepath.Join(tfjsTestdata, "layers", "model.json"))
	if err != nil || len(m.Files) != 2 || len(m.Files[1].Layout.Tensors()) != 2 || len(m.Files[1].Layout.Segments) != 2 {
		t.Fatalf("OpenPath(layers) = %+v, %v", m, err)
	}
}

// TestTFJSDefaultShards checks the converter's default cut (every file but
// the last 4 MiB), which Open assumes and OpenPath finds.
func TestTFJSDefaultShards(t *testing.T) {
	const S = tfjsShardSize
	n := (S + 8) / 4 // "big" fills the first file and 8 bytes of the second
	man := fmt.Sprintf(`{"format":"graph-model","weightsManifest":[{"paths":["g-shard1of2.bin","g-shard2of2.bin"],"weights":[`+
		`{"name":"small","shape":[1],"dtype":"int32"},{"name":"big","shape":[%d],"dtype":"float32"},{"name":"tail","shape":[3],"dtype":"uint8"}]}]}`, n)
	l := openBytes(t, []byte(man))
	if len(l.Companions) != 2 {
		t.Fatalf("%+v", l.Companions)
	}
	wantSegs := map[string][]tfjsWant{
		"g-shard1of2.bin": {{"small", dtype.I32, "int32", []int64{1}, 0, 4}, {"big", dtype.F32, "float32", []int64{S/4 - 1}, 4, S - 4}},
		"g-shard2of2.bin": {{"big#1", dtype.F32, "float32", []int64{3}, 0, 12}, {"tail", dtype.U8, "uint8", []int64{3}, 12, 3}},
	}
	for _, c := range l.Companions {
		w := wantSegs[c.Name]
		if len(c.Segments) != len(w) {
			t.Fatalf("%s: %+v", c.Name, c.Segments)
		}
		for i, s := range c.Segments {
			if s.Name != w[i].name || s.DType != w[i].dt || !slices.Equal(s.Shape, w[i].shape) || s.Offset != w[i].offset || s.Length != w[i].length {
				t.Errorf("%s: %+v, want %+v", c.Name, s, w[i])
			}
		}
	}
	// The same from files: OpenPath finds the same cut.
	dir := t.TempDir()
	path := filepath.Join(dir, "model.json")
	must(t, os.WriteFile(path, []byte(man), 0o644))
	for name, size := range map[string]int64{"g-shard1of2.bin": S, "g-shard2of2.bin": 15} {
		f, err := os.Create(filepath.Join(dir, name))
		must(t, err)
		must(t, f.Truncate(size))
		must(t, f.Close())
	}
	for how, open := range tfjsOpeners() {
		m, err := open(path)
		if err != nil {
			t.Fatalf("%s: %v", how, err)
		}
		for _, f := range m.Files[1:] {
			if err := f.Layout.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := len(f.Layout.Tensors()); got != 2 {
				t.Errorf("%s: %s has %d tensors", how, f.Name, got)
			}
		}
	}
	// A group whose size disagrees with 4 MiB files is left undescribed by
	// Open.
	odd := strings.Replace(man, fmt.Sprintf("[%d]", n), "[10]", 1)
	for _, c := range openBytes(t, []byte(odd)).Companions {
		if len(c.Segments) != 0 {
			t.Errorf("%s: %+v", c.Name, c.Segments)
		}
	}
}

func TestTFJSMatch(t *testing.T) {
	pad := strings.Repeat(" ", 2*HeadSize)
	big := `{"` + strings.Repeat("x", HeadSize) + `": 1, "weightsManifest": []}`
	for _, c := range []struct {
		name string
		in   string
		want string
	}{
		{"graph model", `{"format": "graph-model", "modelTopology": {}, "weightsManifest": []}`, FormatTFJS},
		{"format first, manifest beyond HeadSize", `{"format" :	"graph-model", "modelTopology": {"pad": "` + pad + `"}, "weightsManifest": [{"paths": ["a.bin"], "weights": [{"name": "w", "shape": [2], "dtype": "float32"}]}]}`, FormatTFJS},
		{"layers model", "\ufeff\n {\"modelTopology\": {\"class_name\": \"Sequential\"}, \"format\": \"layers-model\"}", FormatTFJS},
		{"format only", `{"format":"layers-model"}`, FormatTFJS},
		{"manifest only", `{"weightsManifest": null}`, FormatTFJS},
		{"other format", `{"format": "saved-model", "weights": []}`, FormatUnknown},
		{"format as a value", `{"name": "format", "graph-model": 1}`, FormatUnknown},
		{"keys beyond HeadSize", big, FormatUnknown},
		{"array", `[{"weightsManifest": []}]`, FormatUnknown},
		{"sharded safetensors index", `{"weight_map": {"a": "b.safetensors"}}`, FormatSafetensorsIndex},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := openBytes(t, []byte(c.in))
			if l.Format != c.want {
				t.Errorf("format %q, want %q", l.Format, c.want)
			}
		})
	}
}

// tfjsHuge returns n uint8 weights of 2^60-1 bytes each, "a0", "a1", ...
func tfjsHuge(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = fmt.Sprintf(`{"name":"a%d","shape":[1152921504606846975],"dtype":"uint8"}`, i)
	}
	return strings.Join(ws, ",")
}

func TestTFJSHostile(t *testing.T) {
	group := func(paths, weights string) string {
		return `{"format":"graph-model","weightsManifest":[{"paths":` + paths + `,"weights":[` + weights + `]}]}`
	}
	w := func(name, shape, dt string) string {
		return `{"name":"` + name + `","shape":` + shape + `,"dtype":"` + dt + `"}`
	}
	ok := w("a", "[2]", "float32")
	for _, c := range []struct {
		name     string
		in       string
		sentinel error
		subs     []string
	}{
		{"path leaves directory", group(`["../x.bin"]`, ok), ErrMalformed, []string{`"../x.bin"`, "not a relative path"}},
		{"absolute path", group(`["/x.bin"]`, ok), ErrMalformed, []string{"not a relative path"}},
		{"URL path", group(`["https://cdn.example/x.bin"]`, ok), ErrMalformed, []string{"not a relative path"}},
		{"backslash path", group(`["a\\\\x.bin"]`, ok), ErrMalformed, []string{"not a relative path"}},
		{"dot path", group(`["./x.bin"]`, ok), ErrMalformed, []string{"not a relative path"}},
		{"path not a string", group(`[1]`, ok), ErrMalformed, []string{"path is not a string"}},
		{"negative dim", group(`["x.bin"]`, w("a", "[2,-1]", "float32")), ErrOutOfRange, []string{`weight "a": shape[1] (-1) is negative`}},
		{"fractional dim", group(`["x.bin"]`, w("a", "[1.5]", "float32")), ErrMalformed, []string{"not an integer"}},
		{"huge dim", group(`["x.bin"]`, w("a", "[99999999999999999999]", "float32")), ErrTooLarge, []string{"too large for int64"}},
		{"numel overflow", group(`["x.bin"]`, w("a", "[10000000000,10000000000,10000000000]", "float32")), ErrTooLarge, []string{`weight "a"`, "overflows int64"}},
		{"size overflow", group(`["x.bin"]`, w("a", "[2305843009213693952]", "float32")), ErrTooLarge, []string{"size of 2305843009213693952 float32 elements overflows"}},
		{"group size overflow", group(`["x.bin"]`, tfjsHuge(9)), ErrTooLarge, []string{"size of the group overflows", `"a8"`}},
		{"unknown dtype", group(`["x.bin"]`, w("a", "[2]", "int64")), ErrUnsupported, []string{`unknown dtype "int64"`}},
		{"unknown quantization", group(`["x.bin"]`, `{"name":"a","shape":[2],"dtype":"float32","quantization":{"dtype":"int4","scale":1}}`), ErrUnsupported, []string{`quantization dtype "int4"`}},
		{"quantization without dtype", group(`["x.bin"]`, `{"name":"a","shape":[2],"dtype":"float32","quantization":{"scale":1}}`), ErrMalformed, []string{"no dtype"}},
		{"missing shape", group(`["x.bin"]`, `{"name":"a","dtype":"float32"}`), ErrMalformed, []string{"missing shape"}},
		{"missing dtype", group(`["x.bin"]`, `{"name":"a","shape":[]}`), ErrMalformed, []string{"missing dtype"}},
		{"missing name", group(`["x.bin"]`, `{"shape":[],"dtype":"float32"}`), ErrMalformed, []string{"missing name"}},
		{"empty name", group(`["x.bin"]`, w("", "[1]", "float32")), ErrMalformed, []string{"empty name"}},
		{"duplicate field", group(`["x.bin"]`, `{"name":"a","shape":[1],"shape":[2],"dtype":"float32"}`), ErrMalformed, []string{`duplicate field "shape"`}},
		{"duplicate weight", group(`["x.bin"]`, ok+","+ok), ErrMalformed, []string{`duplicate weight "a"`}},
		{"duplicate path", `{"weightsManifest":[{"paths":["x.bin"],"weights":[]},{"paths":["x.bin"],"weights":[]}]}`, ErrMalformed, []string{`"x.bin" is listed twice`}},
		{"weights without files", group(`[]`, ok), ErrMalformed, []string{"names no weight files"}},
		{"group without weights", `{"weightsManifest":[{"paths":["x.bin"]}]}`, ErrMalformed, []string{`lacks "paths" or "weights"`}},
		{"manifest not an array", `{"weightsManifest":{"paths":[]}}`, ErrMalformed, []string{"not an array"}},
		{"group not an object", `{"weightsManifest":[[]]}`, ErrMalformed, []string{"not an object"}},
		{"duplicate manifest", `{"weightsManifest":[],"weightsManifest":[]}`, ErrMalformed, []string{`duplicate key "weightsManifest"`}},
		{"invalid JSON", `{"format":"graph-model","weightsManifest":[}`, ErrMalformed, nil},
		{"trailing data", `{"weightsManifest":[]} {}`, ErrMalformed, []string{"after the JSON object"}},
		{"invalid UTF-8", "{\"format\":\"graph-model\",\"x\":\"\xff\"}", ErrMalformed, []string{"offset 29", "UTF-8"}},
		{"deep topology", `{"modelTopology":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`, ErrTooLarge, []string{"nested"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(bytes.NewReader([]byte(c.in)), int64(len(c.in)))
			wantFormatError(t, err, c.sentinel, -1, c.subs...)
		})
	}
	t.Run("split name collision", func(t *testing.T) {
		n := (tfjsShardSize + 8) / 4
		in := fmt.Sprintf(`{"weightsManifest":[{"paths":["a.bin","b.bin"],"weights":[{"name":"w","shape":[%d],"dtype":"float32"},{"name":"w#1","shape":[1],"dtype":"float32"}]}]}`, n)
		_, err := Open(bytes.NewReader([]byte(in)), int64(len(in)))
		wantFormatError(t, err, ErrMalformed, -1, `"w#1" occurs twice in weight file "b.bin"`)
	})
	t.Run("too large", func(t *testing.T) {
		f := bigFile{head: []byte(`{"format":"graph-model",`), size: tfjsMaxSize + 1}
		_, err := Open(f, f.size)
		wantFormatError(t, err, ErrTooLarge, 0, "limit")
	})
}

// TestTFJSHostileFiles checks weight files that do not fit their manifest.
func TestTFJSHostileFiles(t *testing.T) {
	for how, open := range tfjsOpeners() {
		t.Run(how+"/missing file", func(t *testing.T) {
			dir := tfjsCopyFixture(t)
			must(t, os.Remove(filepath.Join(dir, "weights", "group1-shard2of2.bin")))
			_, err := open(filepath.Join(dir, "model.json"))
			if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `"weights/group1-shard2of2.bin"`) {
				t.Errorf("got %v, want a not-exist error naming the file", err)
			}
		})
		t.Run(how+"/file too small", func(t *testing.T) {
			dir := tfjsCopyFixture(t)
			must(t, os.Truncate(filepath.Join(dir, "weights", "group1-shard2of2.bin"), 50))
			_, err := open(filepath.Join(dir, "model.json"))
			wantFormatError(t, err, ErrTruncated, -1, `weight "after/scale" needs bytes [256,264)`, "hold 260 bytes")
		})
		t.Run(how+"/single file too small", func(t *testing.T) {
			dir := tfjsCopyFixture(t)
			must(t, os.Truncate(filepath.Join(dir, "weights", "group2-shard1of1.bin"), 23))
			_, err := open(filepath.Join(dir, "model.json"))
			wantFormatError(t, err, ErrTruncated, -1, `weight "head/bias"`)
		})
		t.Run(how+"/huge shape", func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "model.json")
			must(t, os.WriteFile(path, []byte(`{"format":"graph-model","weightsManifest":[{"paths":["w.bin"],"weights":[{"name":"w","shape":[1000000,1000000],"dtype":"float32"}]}]}`), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "w.bin"), make([]byte, 64), 0o644))
			_, err := open(path)
			wantFormatError(t, err, ErrTruncated, -1, `weight "w" needs bytes [0,4000000000000)`, "hold 64 bytes")
		})
		t.Run(how+"/file bigger", func(t *testing.T) {
			dir := tfjsCopyFixture(t)
			p := filepath.Join(dir, "weights", "group1-shard2of2.bin")
			must(t, os.Truncate(p, 100))
			m, err := open(filepath.Join(dir, "model.json"))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range m.Files {
				if f.Name == "weights/group1-shard2of2.bin" {
					segs := f.Layout.Segments
					last := segs[len(segs)-1]
					if len(f.Layout.Tensors()) != 3 || last.IsTensor() || last.Offset != 54 || last.Length != 46 {
						t.Errorf("%+v", segs)
					}
				}
			}
		})
		t.Run(how+"/string past the end", func(t *testing.T) {
			dir := tfjsCopyFixture(t)
			p := filepath.Join(dir, "weights", "group1-shard2of2.bin")
			b, _ := os.ReadFile(p)
			binary.LittleEndian.PutUint32(b[33:], 1<<31) // the length of "ab"
			must(t, os.WriteFile(p, b, 0o644))
			_, err := open(filepath.Join(dir, "model.json"))
			wantFormatError(t, err, ErrTruncated, -1, `string 0 of weight "vocab"`)
		})
		t.Run(how+"/file is a directory", func(t *testing.T) {
			dir := tfjsCopyFixture(t)
			p := filepath.Join(dir, "weights", "group2-shard1of1.bin")
			must(t, os.Remove(p))
			must(t, os.Mkdir(p, 0o755))
			_, err := open(filepath.Join(dir, "model.json"))
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("got %v", err)
			}
		})
	}
	t.Run("strings from an fs.FS", func(t *testing.T) {
		// Many strings, read through the buffered stream across two files.
		var strs []string
		for i := range 5000 {
			strs = append(strs, strings.Repeat("s", i%37))
		}
		data := append(tfjsStrings(strs...), tfjsF32(7)...)
		cut := len(data) / 3
		in := fmt.Sprintf(`{"weightsManifest":[{"paths":["a","b"],"weights":[{"name":"s","shape":[%d],"dtype":"string"},{"name":"x","shape":[],"dtype":"float32"}]}]}`, len(strs))
		_, groups, err := readTFJS(bytes.NewReader([]byte(in)), int64(len(in)))
		if err != nil {
			t.Fatal(err)
		}
		fsys := fstest.MapFS{"a": {Data: data[:cut]}, "b": {Data: data[cut:]}}
		comps, err := tfjsCompanions(groups, int64(len(in)), fsys)
		if err != nil {
			t.Fatal(err)
		}
		if len(comps) != 2 || len(comps[0].Segments) != 0 || len(comps[1].Segments) != 1 {
			t.Fatalf("%+v", comps)
		}
		if s := comps[1].Segments[0]; s.Name != "x" || s.Offset != int64(len(data)-cut-4) || s.Length != 4 {
			t.Errorf("%+v", s)
		}
	})
}

// tfjsRealCase is a TF.js model of the shared corpus and the counts its
// README gives.
type tfjsRealCase struct {
	dir, json string
	tensors   map[dtype.DType]int   // tensors by stored type
	values    map[dtype.DType]int64 // elements by stored type
}

func tfjsRealCases() []tfjsRealCase {
	return []tfjsRealCase{
		{"faceres-deep", "faceres-deep.json", map[dtype.DType]int{dtype.F32: 127, dtype.I32: 1}, map[dtype.DType]int64{dtype.F32: 3489403, dtype.I32: 2}},
		{"movenet-thunder", "movenet-thunder.json", map[dtype.DType]int{dtype.F16: 149, dtype.I32: 31}, map[dtype.DType]int64{dtype.F16: 6238344, dtype.I32: 106}},
		{"handtrack", "handtrack.json", map[dtype.DType]int{dtype.U8: 272, dtype.I32: 347}, map[dtype.DType]int64{dtype.U8: 2960393, dtype.I32: 1111}},
	}
}

func TestTFJSReal(t *testing.T) {
	dir := sharedDir(t)
	for _, c := range tfjsRealCases() {
		t.Run(c.dir, func(t *testing.T) {
			path := filepath.Join(dir, "models", "original", c.dir, c.json)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("corpus file missing: %v", err)
			}
			m, err := OpenPath(path)
			if err != nil {
				t.Fatal(err)
			}
			if m.Format != FormatTFJS || len(m.Files) != 2 {
				t.Fatalf("format %q with %d files", m.Format, len(m.Files))
			}
			for _, f := range m.Files {
				if err := f.Layout.Validate(); err != nil {
					t.Fatalf("%s: %v", f.Name, err)
				}
			}
			if m.Files[0].Layout.Metadata["format"] != "graph-model" || len(m.Files[0].Layout.Tensors()) != 0 {
				t.Errorf("model.json layout %+v", m.Files[0].Layout.Metadata)
			}
			wf := m.Files[1]
			if wf.Name != strings.TrimSuffix(c.json, ".json")+".bin" || wf.Layout.Format != FormatTFJSWeights {
				t.Fatalf("weight file %q, %q", wf.Name, wf.Layout.Format)
			}
			tensors := map[dtype.DType]int{}
			values := map[dtype.DType]int64{}
			var floats []Segment
			for _, s := range wf.Layout.Tensors() {
				n, _ := s.NumElements()
				tensors[s.DType]++
				values[s.DType] += n
				if s.DType == dtype.F32 || s.DType == dtype.F16 {
					floats = append(floats, s)
				}
			}
			if fmt.Sprint(tensors) != fmt.Sprint(c.tensors) || fmt.Sprint(values) != fmt.Sprint(c.values) {
				t.Errorf("tensors %v values %v, want %v %v", tensors, values, c.tensors, c.values)
			}
			// One weight file, written without gaps: no opaque bytes.
			for _, s := range wf.Layout.Segments {
				if !s.IsTensor() {
					t.Errorf("opaque segment %+v", s)
				}
			}
			// Open alone, from the bytes of model.json, places them the same.
			b, err := os.ReadFile(path)
			must(t, err)
			l := openBytes(t, b)
			if len(l.Companions) != 1 || len(l.Companions[0].Segments) != len(wf.Layout.Tensors()) {
				t.Errorf("Open: %d companions", len(l.Companions))
			}
			if len(floats) > 0 {
				data, err := os.ReadFile(wf.Path)
				must(t, err)
				checkFloats(t, data, floats, nil)
			}
		})
	}
}

// TestTFJSRealEmulated checks the real models through the placement by real
// file sizes too.
func TestTFJSRealEmulated(t *testing.T) {
	dir := sharedDir(t)
	for _, c := range tfjsRealCases() {
		path := filepath.Join(dir, "models", "original", c.dir, c.json)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		a, err1 := OpenPath(path)
		b, err2 := tfjsOpenPathEmulated(path)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", c.dir, err1, err2)
		}
		if fmt.Sprint(a.Files[1].Layout.Segments) != fmt.Sprint(b.Files[1].Layout.Segments) {
			t.Errorf("%s: OpenPath and the placement by file sizes differ", c.dir)
		}
	}
}

func BenchmarkTFJSOpen(b *testing.B) {
	dir := sharedDir(b)
	for _, c := range tfjsRealCases() {
		data, err := os.ReadFile(filepath.Join(dir, "models", "original", c.dir, c.json))
		if err != nil {
			continue
		}
		b.Run(c.dir, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Open(bytes.NewReader(data), int64(len(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
