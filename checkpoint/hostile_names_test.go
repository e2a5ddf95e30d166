package checkpoint

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"google.golang.org/protobuf/encoding/protowire"
)

// Hostile files that repeat one long name many times: small files that
// made the ONNX, TFLite and TF.js loaders build gigabytes of names. Each
// must give an ErrTooLarge FormatError (or load, where the repeats are
// harmless) while allocating in proportion to the file.

// hnAllocs returns the bytes allocated while f runs.
func hnAllocs(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// hnCheckAllocs fails when more than 64 bytes per byte of a file of size
// bytes, plus 4 MiB, were allocated.
func hnCheckAllocs(t *testing.T, size int, allocs uint64) {
	t.Helper()
	t.Logf("allocated %d bytes for a file of %d bytes", allocs, size)
	if limit := 64*uint64(size) + 4<<20; allocs > limit {
		t.Errorf("allocated %d bytes for a file of %d bytes, more than %d", allocs, size, limit)
	}
}

func TestHostileNamesONNX(t *testing.T) {
	long := strings.Repeat("G", 16<<10)
	const k = 2000
	tiny := pbMsg(nil).varint(2, 2).bytes(9, []byte{0}) // UINT8 tensor of 1 byte, no name
	repeat := func(m pbMsg, num protowire.Number, v pbMsg) pbMsg {
		for range k {
			m = m.bytes(num, v)
		}
		return m
	}
	model := func(g pbMsg) []byte { return pbMsg(nil).varint(1, 8).bytes(7, g) }

	// nameless initializers of a graph with a long name: "<graph>/initializer/<i>"
	inits := model(repeat(pbMsg(nil).str(2, long), 5, tiny))
	// nameless initializers of a nameless subgraph held by an attribute with
	// a long name: "graph/node0/<attr>/initializer/<i>"
	sub := repeat(nil, 5, tiny)
	nested := model(pbMsg(nil).bytes(1, pbNode("", "If", []string{"y"}, pbMsg(nil).str(1, long).bytes(6, sub))))
	// tensors of a node attribute with a long name: "graph/<node>/<attr>/<i>"
	attr := repeat(pbMsg(nil).str(1, long), 10, tiny)
	list := model(pbMsg(nil).bytes(1, pbNode("n", "Op", []string{"y"}, attr)))
	// a Constant node whose many "value" attributes all take its long output
	// name: "<output>#2", "<output>#3", ...
	var values []pbMsg
	for range k {
		values = append(values, pbMsg(nil).str(1, "value").bytes(5, tiny))
	}
	constant := model(pbMsg(nil).bytes(1, pbNode("", "Constant", []string{long}, values...)))

	for _, c := range []struct {
		name string
		b    []byte
	}{{"graph name", inits}, {"attribute path", nested}, {"attribute list", list}, {"constant output", constant}} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			allocs := hnAllocs(func() { _, err = Open(bytes.NewReader(c.b), int64(len(c.b))) })
			wantFormatError(t, err, ErrTooLarge, -1, "onnx", "names exceed")
			hnCheckAllocs(t, len(c.b), allocs)
		})
	}
}

// hnTFLite writes a TFLite FlatBuffer whose SubGraph.tensors has refs
// entries that point in turn to tables Tensor tables, Tensor table i using
// buffer i+1 (or buffer 1 for all when shareBuffer) and the string at
// names[i%len(names)] of the bytes strs, and whose Model.metadata has metas
// entries that all point to one Metadata table named by strs at names[0].
// Every buffer but 0 is one Buffer table with 4 bytes of data.
func hnTFLite(refs, tables int, shareBuffer bool, metas int, strs []byte, names []int) []byte {
	w := &gbuf{}
	patch := func(at int, target int) { binary.LittleEndian.PutUint32(w.b[at:], uint32(target-at)) }
	w.u32(0) // root offset
	w.b = append(w.b, "TFL3"...)
	vtable := func(tLen int, slots ...int) int { // slots: field offsets, 0 for absent
		at := len(w.b)
		w.u16(uint16(4 + 2*len(slots)))
		w.u16(uint16(tLen))
		for _, s := range slots {
			w.u16(uint16(s))
		}
		for len(w.b)%4 != 0 {
			w.u8(0)
		}
		return at
	}
	vtModel := vtable(16, 0, 0, 4, 0, 8, 0, 12) // subgraphs, buffers, metadata (4 bytes each)
	vtOne := vtable(8, 4)                       // SubGraph.tensors, Buffer.data
	vtEmpty := vtable(4)
	vtTensor := vtable(12, 0, 0, 4, 8) // buffer, name
	vtMeta := vtable(12, 8, 4)         // name, buffer
	table := func(vt int) int {
		at := len(w.b)
		w.u32(uint32(int32(at - vt)))
		return at
	}
	vector := func(n int) (first int) {
		w.u32(uint32(n))
		first = len(w.b)
		for range n {
			w.u32(0)
		}
		return first
	}

	// FlatBuffer offsets point forward: every table and vector follows
	// what refers to it, the strings come last.
	model := table(vtModel)
	binary.LittleEndian.PutUint32(w.b, uint32(model))
	w.u32(0) // subgraphs
	w.u32(0) // buffers
	w.u32(0) // metadata

	patch(model+4, len(w.b))
	subs := vector(1)
	sub := table(vtOne)
	patch(subs, sub)
	w.u32(0)
	patch(sub+4, len(w.b))
	ts := vector(refs)
	tensorAt := make([]int, tables)
	var nameRefs []int // name fields, and the string each wants
	var nameStr []int
	for i := range tables {
		tensorAt[i] = table(vtTensor)
		b := uint32(i + 1)
		if shareBuffer {
			b = 1
		}
		w.u32(b)
		nameRefs, nameStr = append(nameRefs, len(w.b)), append(nameStr, names[i%len(names)])
		w.u32(0)
	}
	for i := range refs {
		patch(ts+4*i, tensorAt[i%tables])
	}

	nBuf := tables + 1
	if shareBuffer {
		nBuf = 2
	}
	patch(model+8, len(w.b))
	bufs := vector(nBuf)
	empty := table(vtEmpty)
	buf := table(vtOne)
	w.u32(0)
	patch(buf+4, len(w.b))
	w.u32(4)
	w.u32(0) // 4 bytes of data
	patch(bufs, empty)
	for i := 1; i < nBuf; i++ {
		patch(bufs+4*i, buf)
	}

	if metas > 0 {
		patch(model+12, len(w.b))
		ms := vector(metas)
		meta := table(vtMeta)
		w.u32(0) // buffer 0
		nameRefs, nameStr = append(nameRefs, len(w.b)), append(nameStr, names[0])
		w.u32(0)
		for i := range metas {
			patch(ms+4*i, meta)
		}
	}

	strAt := len(w.b) // the strings, each preceded by its length at names[i]
	w.b = append(w.b, strs...)
	for i, at := range nameRefs {
		patch(at, strAt+nameStr[i])
	}
	return w.b
}

func TestHostileNamesTFLite(t *testing.T) {
	long := make([]byte, 4, 4+16<<10)
	binary.LittleEndian.PutUint32(long, 16<<10)
	long = append(long, strings.Repeat("n", 16<<10)...)
	// overlapping strings: the string at 4i is 32768-i bytes long
	var overlap []byte
	var starts []int
	for i := range 4096 {
		overlap = binary.LittleEndian.AppendUint32(overlap, uint32(32768-i))
		starts = append(starts, 4*i)
	}
	overlap = append(overlap, make([]byte, 32768)...)

	t.Run("aliased tensor", func(t *testing.T) {
		// 20000 tensors that are one table, with a long name, and one buffer:
		// the name is needed once, for the tensor, and listed once as shared
		b := hnTFLite(20000, 1, true, 0, long, []int{0})
		var l *Layout
		var err error
		allocs := hnAllocs(func() { l, err = Open(bytes.NewReader(b), int64(len(b))) })
		if err != nil {
			t.Fatal(err)
		}
		name := strings.Repeat("n", 16<<10)
		if len(l.Segments) != 3 || l.Segments[1].Name != name || l.Metadata["tensors"] != "20000" ||
			l.Metadata["shared."+name] != strings.Repeat(name+", ", 7)+name+", and 19991 more" {
			t.Errorf("segments %d, tensors %s", len(l.Segments), l.Metadata["tensors"])
		}
		hnCheckAllocs(t, len(b), allocs)
	})
	for _, c := range []struct {
		name string
		b    []byte
	}{
		// distinct tensors and buffers with one long name: "<name>#2", ...
		{"repeated name", hnTFLite(2000, 2000, false, 0, long, []int{0})},
		// distinct tensors and buffers with overlapping long names
		{"overlapping names", hnTFLite(4096, 4096, false, 0, overlap, starts)},
		// metadata entries that are one table with a long name
		{"aliased metadata", hnTFLite(1, 1, false, 3000, long, []int{0})},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			allocs := hnAllocs(func() { _, err = Open(bytes.NewReader(c.b), int64(len(c.b))) })
			wantFormatError(t, err, ErrTooLarge, -1, "tflite", "names exceed")
			hnCheckAllocs(t, len(c.b), allocs)
		})
	}
}

// hnTFJS writes a model.json with one group of n weight files "0", "1", ...
// and one uint8 weight named name of shape [size].
func hnTFJS(n int, name string, size int64) []byte {
	var sb strings.Builder
	sb.WriteString(`{"format":"graph-model","weightsManifest":[{"paths":[`)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"` + strconv.FormatInt(int64(i), 36) + `"`)
	}
	sb.WriteString(`],"weights":[{"name":"` + name + `","shape":[` + strconv.FormatInt(size, 10) + `],"dtype":"uint8"}]}]}`)
	return []byte(sb.String())
}

func TestHostileNamesTFJS(t *testing.T) {
	const n = 2000
	long := strings.Repeat("w", 16<<10)
	t.Run("Open", func(t *testing.T) {
		// n files of 4 MiB as Open assumes them, one weight across all
		b := hnTFJS(n, long, n*tfjsShardSize)
		var err error
		allocs := hnAllocs(func() { _, err = Open(bytes.NewReader(b), int64(len(b))) })
		wantFormatError(t, err, ErrTooLarge, -1, "tfjs", "names exceed")
		hnCheckAllocs(t, len(b), allocs)
	})
	t.Run("OpenFS", func(t *testing.T) {
		// n files of 1 byte, one weight across all
		b := hnTFJS(n, long, n)
		fsys := fstest.MapFS{"model.json": {Data: b}}
		for i := range n {
			fsys[strconv.FormatInt(int64(i), 36)] = &fstest.MapFile{Data: []byte{0}}
		}
		_, err := OpenFS(fsys, "model.json")
		wantFormatError(t, err, ErrTooLarge, -1, "tfjs", "names exceed")
	})
	t.Run("short name", func(t *testing.T) {
		// a short name across 20000 files: no map or slice per file beyond
		// the companion and its tensor
		b := hnTFJS(20000, "w", 20000*tfjsShardSize)
		var l *Layout
		var err error
		allocs := hnAllocs(func() { l, err = Open(bytes.NewReader(b), int64(len(b))) })
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Companions) != 20000 || l.Companions[0].Segments[0].Name != "w" {
			t.Fatalf("%d companions", len(l.Companions))
		}
		t.Logf("allocated %d bytes for a file of %d bytes", allocs, len(b))
		if limit := uint64(100 * len(b)); allocs > limit {
			t.Errorf("allocated %d bytes for a file of %d bytes, more than %d", allocs, len(b), limit)
		}
	})
}
