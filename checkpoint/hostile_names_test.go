package checkpoint

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

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
