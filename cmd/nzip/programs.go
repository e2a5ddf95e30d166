package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"neuralzip/codec"
)

// programNode is one node of a tensor's program as inspect -programs
// shows it (codec.ProgramNode, with bits per value and, where blocks of
// one shape are merged, their count).
type programNode struct {
	Op     string   `json:"op"`
	Coder  string   `json:"coder,omitempty"`
	Blocks int      `json:"blocks,omitempty"` // block roots: how many blocks of this program were merged
	Values int64    `json:"values,omitempty"`
	Width  int      `json:"width,omitempty"`
	Bytes  int64    `json:"bytes"`
	Bits   float64  `json:"bits_per_value,omitempty"`
	Also   []string `json:"also_holds,omitempty"` // block roots: the other tensors of a block that starts in this one
	// Shared (tensor roots): a block of the tensor also holds bytes
	// outside it (other tensors, opaque bytes), so its bytes are those of
	// the blocks that start in it, not its share (the ARCHIVE column)
	Shared bool          `json:"shared_blocks,omitempty"`
	Nodes  []programNode `json:"nodes,omitempty"`
}

func fromProgram(n codec.ProgramNode) programNode {
	p := programNode{Op: n.Op, Coder: n.Coder, Values: n.Values, Width: n.Width, Bytes: n.Bytes}
	for _, c := range n.Nodes {
		p.Nodes = append(p.Nodes, fromProgram(c))
	}
	return p
}

// finish sets the bits per value of p and its parts.
func (p *programNode) finish() {
	if p.Values > 0 {
		p.Bits = 8 * float64(p.Bytes) / float64(p.Values)
	}
	for i := range p.Nodes {
		p.Nodes[i].finish()
	}
}

// programGroup gathers the blocks of one tensor (or of the bytes outside
// tensors), merging blocks of the same shape (and the same tensors held).
type programGroup struct {
	root    programNode         // its sizes; nodes() fills its Nodes
	merged  []codec.ProgramNode // one per shape
	blocks  []int               // the blocks merged into each
	also    [][]string          // the other tensors each holds
	shapes  map[string]int      // index into merged by shape
	tensors map[int]bool        // the tensors its blocks hold
	shared  bool                // a block of the tensor holds bytes outside it
}

func (g *programGroup) add(n codec.ProgramNode, also []string) {
	key := n.Shape()
	if len(also) > 0 {
		key += "\x00" + strings.Join(also, "\x00")
	}
	g.root.Bytes += n.Bytes
	if i, ok := g.shapes[key]; ok {
		g.merged[i].AddSizes(n)
		g.blocks[i]++
		return
	}
	if g.shapes == nil {
		g.shapes = map[string]int{}
	}
	g.shapes[key] = len(g.merged)
	g.merged, g.blocks, g.also = append(g.merged, n), append(g.blocks, 1), append(g.also, also)
}

// nodes fills the root's nodes from the merged blocks; false when the
// group has none.
func (g *programGroup) nodes() bool {
	for i, n := range g.merged {
		p := fromProgram(n)
		p.Blocks, p.Also = g.blocks[i], g.also[i]
		g.root.Nodes = append(g.root.Nodes, p)
	}
	return len(g.merged) > 0
}

// filePrograms reads the programs of file fi's blocks and returns one
// tree per tensor (nil for a tensor in which no block starts: its bytes
// are coded in a block that starts in an earlier one, whose also_holds
// names it) and one for the blocks that start outside every tensor (nil
// when none does). Every block is counted once: the trees' bytes add up
// to the file's coded bytes.
func filePrograms(rd *codec.Reader, fi int) ([]*programNode, *programNode, error) {
	f := rd.Files()[fi]
	blocks := f.Blocks()
	groups := make([]programGroup, len(f.Tensors))
	var other programGroup
	ti := 0
	for bi, b := range blocks {
		for ti < len(f.Tensors) && f.Tensors[ti].Offset+f.Tensors[ti].Length <= b.Offset {
			ti++
		}
		// a block not within one tensor: every tensor it overlaps shares it
		end := b.Offset + b.Length
		if k := ti; k < len(f.Tensors) && (f.Tensors[k].Offset > b.Offset || f.Tensors[k].Offset+f.Tensors[k].Length < end) {
			for ; k < len(f.Tensors) && f.Tensors[k].Offset < end; k++ {
				if f.Tensors[k].Length > 0 {
					groups[k].shared = true
				}
			}
		}
		n, err := rd.BlockProgram(fi, bi)
		if err != nil {
			return nil, nil, err
		}
		if ti >= len(f.Tensors) || f.Tensors[ti].Offset > b.Offset {
			other.add(n, nil)
			continue
		}
		g := &groups[ti]
		if g.tensors == nil {
			g.tensors = map[int]bool{}
		}
		g.tensors[ti] = true
		var also []string
		for j := ti + 1; j < len(f.Tensors) && f.Tensors[j].Offset < b.Offset+b.Length; j++ {
			if f.Tensors[j].Length > 0 {
				also = append(also, f.Tensors[j].Name)
				g.tensors[j] = true
			}
		}
		if n.Values == 0 && len(also) == 0 {
			// an opaque block (zstd, raw, cm) of one tensor: its values
			// by their bytes
			t := f.Tensors[ti]
			if e := codec.ShapeValues(t.Shape); e > 0 && t.Length > 0 && b.Length <= t.Length {
				n.Values = b.Length * e / t.Length
			}
		}
		g.add(n, also)
	}
	out := make([]*programNode, len(f.Tensors))
	for i := range groups {
		g := &groups[i]
		if !g.nodes() {
			continue
		}
		g.root.Op = "tensor"
		g.root.Shared = g.shared
		for j := range g.tensors {
			g.root.Values += codec.ShapeValues(f.Tensors[j].Shape)
		}
		g.root.finish()
		out[i] = &g.root
	}
	if !other.nodes() {
		return out, nil, nil
	}
	other.root.Op = "bytes outside tensors"
	other.root.finish()
	return out, &other.root, nil
}

// printPrograms prints the programs of a file's tensors as indented
// trees: each node with its coder, values (or symbols), bytes and bits
// per value.
func printPrograms(w io.Writer, fr fileReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var node func(p *programNode, depth int)
	node = func(p *programNode, depth int) {
		op := strings.Repeat("  ", depth) + shown(p.Op)
		if p.Blocks > 1 {
			op += fmt.Sprintf(" ×%d blocks", p.Blocks)
		}
		if p.Width > 0 {
			op += fmt.Sprintf(" (%d-bit)", p.Width)
		}
		vals, bits := "-", "-"
		if p.Values > 0 {
			vals, bits = fmt.Sprint(p.Values), fmt.Sprintf("%.3f", p.Bits)
		}
		coder := p.Coder
		if coder == "" {
			coder = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t\n", op, coder, vals, p.Bytes, bits)
		for i := range p.Nodes {
			node(&p.Nodes[i], depth+1)
		}
	}
	for _, t := range fr.Tensors {
		dt := t.DType
		if dt == "-" {
			dt = t.Type
		}
		fmt.Fprintf(tw, "%s %s %s\tCODER\tVALUES\tBYTES\tBITS/VALUE\t\n", shown(t.Name), shown(dt), shapeString(t.Shape))
		if t.Program == nil {
			fmt.Fprintln(tw, "  (coded in the block of an earlier tensor)")
			continue
		}
		for i := range t.Program.Nodes {
			node(&t.Program.Nodes[i], 1)
		}
		bits := "-"
		if t.Program.Values > 0 {
			bits = fmt.Sprintf("%.3f", t.Program.Bits)
		}
		fmt.Fprintf(tw, "  total\t\t%s\t%d\t%s\t\n", valuesOrDash(t.Program.Values), t.Program.Bytes, bits)
		if t.Program.Shared {
			fmt.Fprintln(tw, "  (a block of this tensor holds other bytes too: the total is of the blocks that start in it)")
		}
		for _, b := range t.Program.Nodes {
			if len(b.Also) > 0 {
				fmt.Fprintf(tw, "  (its %s block also holds %s)\n", shown(b.Op), fewNames(b.Also))
			}
		}
	}
	if p := fr.OtherProgram; p != nil {
		fmt.Fprintf(tw, "%s\tCODER\tVALUES\tBYTES\tBITS/VALUE\t\n", p.Op)
		for i := range p.Nodes {
			node(&p.Nodes[i], 1)
		}
		fmt.Fprintf(tw, "  total\t\t-\t%d\t-\t\n", p.Bytes)
	}
	tw.Flush()
}

func valuesOrDash(v int64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprint(v)
}

// fewNames is the first three names (shown), and how many more.
func fewNames(names []string) string {
	const most = 3
	var b strings.Builder
	for i, n := range names {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(names)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(shown(n))
	}
	return b.String()
}
