package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"neuralzip/codec"
)

// Programs (issue 48, "Seeing and choosing programs"): the Tensors
// screen shows a tensor's program — how the codec codes it, as a tree of
// operators down to each stream's coder, with the bytes of every node —
// and what each other program the codec can write for it would cost.
// The tensor is coded alone (its bytes as a file of one tensor) with the
// workbench's settings, so its sizes can differ by a few bytes from its
// share of the whole model's archive, where small tensors share blocks.

// ProgramNode is one node of a tensor's program: codec.ProgramNode, with
// the blocks of one shape merged (Blocks counts them at block roots).
type ProgramNode struct {
	Op     string
	Coder  string
	Blocks int // block roots: how many blocks of this shape were merged
	Values int64
	Width  int
	Bytes  int64
	Nodes  []ProgramNode
}

// BitsPerValue is the node's coded bits per value or symbol (0 when it
// codes none).
func (n *ProgramNode) BitsPerValue() float64 {
	if n.Values <= 0 {
		return 0
	}
	return 8 * float64(n.Bytes) / float64(n.Values)
}

// Label is the node's name as the tree shows it: its operator, block
// count and symbol width.
func (n *ProgramNode) Label() string {
	s := n.Op
	if n.Blocks > 1 {
		s += fmt.Sprintf(" ×%d blocks", n.Blocks)
	}
	if n.Width > 0 {
		s += fmt.Sprintf(" (%d-bit)", n.Width)
	}
	return s
}

// Find returns the node at path (indices into Nodes from n), or nil.
func (n *ProgramNode) Find(path []int) *ProgramNode {
	for _, i := range path {
		if i < 0 || i >= len(n.Nodes) {
			return nil
		}
		n = &n.Nodes[i]
	}
	return n
}

func fromCodecNode(c codec.ProgramNode) ProgramNode {
	p := ProgramNode{Op: c.Op, Coder: c.Coder, Values: c.Values, Width: c.Width, Bytes: c.Bytes}
	for _, k := range c.Nodes {
		p.Nodes = append(p.Nodes, fromCodecNode(k))
	}
	return p
}

// ArchiveTensorProgram reads the program of the tensor called name in
// file fi of an archive: the blocks that start within the tensor (a
// block that also holds the tensors after it counts here; one that
// started in an earlier tensor does not), from their headers
// (codec.Reader.BlockProgram). The root is the tensor: its values, and
// the bytes of those blocks.
func ArchiveTensorProgram(rd *codec.Reader, fi int, name string) (*ProgramNode, error) {
	if fi < 0 || fi >= len(rd.Files()) {
		return nil, fmt.Errorf("no file %d in the archive", fi)
	}
	f := rd.Files()[fi]
	ti := -1
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			ti = i
			break
		}
	}
	if ti < 0 {
		return nil, fmt.Errorf("no tensor %q in %s", name, f.Name)
	}
	t := f.Tensors[ti]
	root := &ProgramNode{Op: "tensor", Values: codec.ShapeValues(t.Shape)}
	shapes := map[string]int{} // index into merged by shape
	var merged []codec.ProgramNode
	var blocks []int // the blocks merged into each
	for bi, b := range f.Blocks() {
		if b.Offset < t.Offset || b.Offset >= t.Offset+t.Length {
			continue
		}
		c, err := rd.BlockProgram(fi, bi)
		if err != nil {
			return nil, err
		}
		if c.Values == 0 && b.Offset+b.Length <= t.Offset+t.Length && t.Length > 0 {
			// an opaque block (zstd, raw, cm): its values by its bytes
			c.Values = b.Length * root.Values / t.Length
		}
		key := c.Shape()
		root.Bytes += c.Bytes
		if i, ok := shapes[key]; ok {
			merged[i].AddSizes(c)
			blocks[i]++
			continue
		}
		shapes[key] = len(merged)
		merged, blocks = append(merged, c), append(blocks, 1)
	}
	for i, c := range merged {
		p := fromCodecNode(c)
		p.Blocks = blocks[i]
		root.Nodes = append(root.Nodes, p)
	}
	if len(root.Nodes) == 0 {
		return nil, fmt.Errorf("tensor %q is coded in the block of an earlier tensor", name)
	}
	return root, nil
}

// segment is tensor i as the only segment of a file of its bytes.
func (m *Model) segment(i int) codec.Segment {
	t := &m.Tensors[i]
	return codec.Segment{Name: t.Name, DType: t.DType, Type: t.Type, Shape: t.Shape, Length: t.Bytes}
}

// tensorBytes reads tensor i.
func (m *Model) tensorBytes(i int) ([]byte, error) {
	t := &m.Tensors[i]
	b := make([]byte, t.Bytes)
	if n, err := m.Files[t.File].R.ReadAt(b, t.Offset); n != len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%s: %w", t.Name, err)
	}
	return b, nil
}

// ProgramSettings are the codec settings the Tensors screen codes a
// tensor with: the setup (nil: none), the chunk size (0: the setup's, or
// the codec's default) and the programs chosen so far (tensor name →
// program) over the setup's.
type ProgramSettings struct {
	Setup    *codec.Setup
	Chunk    int
	Programs map[string]codec.Program
}

// options are the encode options of s, with tensor name coded with
// program p (ProgramAuto: as s chooses).
func (s ProgramSettings) options(name string, p codec.Program, override bool) codec.EncodeOptions {
	o := codec.EncodeOptions{Threads: 1, Setup: s.Setup, ChunkValues: s.Chunk}
	if o.ChunkValues == 0 && s.Setup != nil {
		o.ChunkValues = s.Setup.ChunkValues
	}
	o.Programs = map[string]codec.Program{}
	for k, v := range s.Programs {
		o.Programs[k] = v
	}
	if override {
		o.Programs[name] = p
	}
	return o
}

// Chosen is the program s chooses for the tensor called name: its
// Programs', else the setup's, else ProgramAuto.
func (s ProgramSettings) Chosen(name string) codec.Program {
	if p, ok := s.Programs[name]; ok {
		return p
	}
	if s.Setup != nil {
		return s.Setup.ProgramFor(name)
	}
	return codec.ProgramAuto
}

// TensorProgram codes tensor i alone with settings s and returns its
// program tree.
func (m *Model) TensorProgram(ctx context.Context, i int, s ProgramSettings) (*ProgramNode, error) {
	src, err := m.tensorBytes(i)
	if err != nil {
		return nil, err
	}
	a, err := codec.CompressBytes(ctx, src, []codec.Segment{m.segment(i)}, s.options("", 0, false))
	if err != nil {
		return nil, err
	}
	return archiveProgram(a, m.Tensors[i].Name)
}

func archiveProgram(a []byte, name string) (*ProgramNode, error) {
	rd, err := codec.NewReader(memReaderAt(a), int64(len(a)))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return ArchiveTensorProgram(rd, 0, name)
}

// memReaderAt is an io.ReaderAt of bytes.
type memReaderAt []byte

func (b memReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Alternative is what one program costs for a tensor, coded alone with
// the workbench's settings and decoded back.
type Alternative struct {
	Program       codec.Program
	Bytes         int64   // the tensor's coded bytes (its blocks' payloads)
	BitsPerValue  float64 // 8 × Bytes / values (0 for a tensor of no values)
	CompressMBs   float64 // original bytes per second, best of the runs, one thread
	DecompressMBs float64
	RoundTrip     bool // decoded back bit for bit
	Chosen        bool // the program the settings give the tensor (ProgramAuto where none is chosen)
	Tree          *ProgramNode
	Err           error // the program failed: coding, decoding or reading its tree
}

// altMinTime: each alternative is coded (and decoded) again until this
// much time has passed, at most altRuns times, and the fastest run
// counts.
const (
	altMinTime = 40 * time.Millisecond
	altRuns    = 5
)

// Alternatives codes tensor i alone with every program that applies to
// it under settings s (codec.ProgramsFor; ProgramAuto first: the
// encoder's own choice), decodes each archive back and compares it with
// the tensor's bytes, and measures the speed of both (one thread).
// progress, when set, is called after each program. A cancelled ctx stops
// it (ErrCancelled).
func (m *Model) Alternatives(ctx context.Context, i int, s ProgramSettings, progress func(done, total int)) ([]Alternative, error) {
	src, err := m.tensorBytes(i)
	if err != nil {
		return nil, err
	}
	seg := m.segment(i)
	name := m.Tensors[i].Name
	chosen := s.Chosen(name)
	if !chosen.Applies(seg, s.Setup) {
		chosen = codec.ProgramAuto
	}
	progs := codec.ProgramsFor(seg, s.Setup)
	values := codec.ShapeValues(m.Tensors[i].Shape)
	var out []Alternative
	for k, p := range progs {
		if ctx != nil && ctx.Err() != nil {
			return nil, ErrCancelled
		}
		alt := Alternative{Program: p, Chosen: p == chosen}
		alt.Err = measureProgram(ctx, &alt, src, seg, s.options(name, p, true), values)
		out = append(out, alt)
		if progress != nil {
			progress(k+1, len(progs))
		}
	}
	return out, nil
}

// measureProgram codes src (one tensor, seg) with opt, decodes it back
// and fills alt.
func measureProgram(ctx context.Context, alt *Alternative, src []byte, seg codec.Segment, opt codec.EncodeOptions, values int64) error {
	var a []byte
	best := time.Duration(1 << 62)
	last := time.Now()
	for run, start := 0, time.Now(); run < altRuns && (run == 0 || time.Since(start) < altMinTime); run++ {
		last = yieldJS(last) // between runs: the browser draws, no run is timed with it
		t0 := time.Now()
		b, err := codec.CompressBytes(ctx, src, []codec.Segment{seg}, opt)
		if err != nil {
			return err
		}
		best, a = min(best, time.Since(t0)), b
	}
	alt.CompressMBs = mbs(len(src), best)
	tree, err := archiveProgram(a, seg.Name)
	if err != nil {
		return err
	}
	alt.Tree, alt.Bytes = tree, tree.Bytes
	if values > 0 {
		alt.BitsPerValue = 8 * float64(alt.Bytes) / float64(values)
	}
	best = time.Duration(1 << 62)
	for run, start := 0, time.Now(); run < altRuns && (run == 0 || time.Since(start) < altMinTime); run++ {
		last = yieldJS(last)
		t0 := time.Now()
		back, err := codec.DecompressBytes(ctx, a, codec.DecodeOptions{Threads: 1})
		if err != nil {
			return err
		}
		best = min(best, time.Since(t0))
		if run == 0 {
			alt.RoundTrip = string(back) == string(src)
			if !alt.RoundTrip {
				return fmt.Errorf("%v: decoded bytes differ from the tensor's", alt.Program)
			}
		}
	}
	alt.DecompressMBs = mbs(len(src), best)
	return nil
}

func mbs(n int, d time.Duration) float64 {
	if d <= 0 {
		d = time.Nanosecond
	}
	return float64(n) / d.Seconds() / 1e6
}

// ProgramCluster is the cluster of tensor i for choosing programs: the
// tensors of the same role in every layer — whose names are the same
// once each numeric part (a layer's index) is a wildcard — and of the
// same type ("model.layers.3.mlp.up.weight" with every
// "model.layers.N.mlp.up.weight" of its dtype). Indices in file order,
// i among them.
func (m *Model) ProgramCluster(i int) []int {
	key := roleOf(m.Tensors[i].Name)
	var out []int
	for j := range m.Tensors {
		if m.Tensors[j].DTypeName() == m.Tensors[i].DTypeName() && roleOf(m.Tensors[j].Name) == key {
			out = append(out, j)
		}
	}
	return out
}

// roleOf is a tensor name with each maximal run of digits that forms a
// whole name part (between '.', '/', ':', '_' or '-') replaced by '*'.
func roleOf(name string) string {
	var b strings.Builder
	sep := func(r rune) bool { return r == '.' || r == '/' || r == ':' || r == '_' || r == '-' }
	start := 0
	rs := []rune(name)
	for k := 0; k <= len(rs); k++ {
		if k < len(rs) && !sep(rs[k]) {
			continue
		}
		part := string(rs[start:k])
		if part != "" && strings.IndexFunc(part, func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
			b.WriteByte('*')
		} else {
			b.WriteString(part)
		}
		if k < len(rs) {
			b.WriteRune(rs[k])
		}
		start = k + 1
	}
	return b.String()
}

// ProgramSetup is base (nil: none) with the programs chosen (tensor name
// → program; ProgramAuto removes a tensor's) added: the setup to save,
// which `nzip compress -setup` and the Run screen honour. chunk is the
// values per block of a setup made from none (0: the codec's default).
func ProgramSetup(base *codec.Setup, chunk int, chosen map[string]codec.Program) (*codec.Setup, error) {
	var set []codec.SetupProgram
	for name, p := range chosen {
		set = append(set, codec.SetupProgram{Tensor: name, Program: p})
	}
	return base.WithPrograms(chunk, set)
}
