// Command tilemodel writes a large safetensors file from the tensors of a
// real one: copies of every tensor, copy k named "k/<tensor>" with its
// values rotated by k·9973 elements (the same values and statistics, other
// bytes, so no copy is a duplicate of another), until the file reaches
// SIZE bytes. It makes the large archive of docs/serve.md's range latencies
// (scripts/bench-ranges.sh) from real weights.
//
//	go run ./scripts/tilemodel -size 1073741824 OUT.safetensors IN.safetensors
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"

	"neuralzip/checkpoint"
)

func main() {
	size := flag.Int64("size", 1<<30, "bytes of tensor data to reach at least")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: tilemodel [-size N] OUT.safetensors IN.safetensors")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), *size); err != nil {
		fmt.Fprintln(os.Stderr, "tilemodel:", err)
		os.Exit(1)
	}
}

type tensor struct {
	name  string
	dtype string
	shape []int64
	elem  int
	data  []byte
}

func run(out, in string, size int64) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	l, err := checkpoint.Open(f, int64(len(src)))
	if err != nil {
		return err
	}
	var ts []tensor
	var per int64
	for _, s := range l.Segments {
		if !s.IsTensor() || s.Length == 0 {
			continue
		}
		e := s.DType.Size()
		if e <= 0 || s.Length%int64(e) != 0 {
			continue
		}
		ts = append(ts, tensor{name: s.Name, dtype: s.Type, shape: s.Shape, elem: e, data: src[s.Offset : s.Offset+s.Length]})
		per += s.Length
	}
	if per == 0 {
		return fmt.Errorf("%s holds no tensors", in)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].name < ts[j].name })
	copies := int((size + per - 1) / per)
	hdr := map[string]any{"__metadata__": map[string]string{"source": fmt.Sprintf("scripts/tilemodel: %d copies of %s", copies, in)}}
	var off int64
	for k := 0; k < copies; k++ {
		for _, t := range ts {
			n := int64(len(t.data))
			hdr[fmt.Sprintf("%d/%s", k, t.name)] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int64{off, off + n}}
			off += n
		}
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	tmp := out + ".tmp"
	o, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(o, 4<<20)
	var n8 [8]byte
	binary.LittleEndian.PutUint64(n8[:], uint64(len(h)))
	w.Write(n8[:])
	w.Write(h)
	for k := 0; k < copies; k++ {
		for _, t := range ts {
			vals := len(t.data) / t.elem
			r := (k * 9973 % vals) * t.elem
			w.Write(t.data[r:])
			w.Write(t.data[:r])
		}
	}
	if err := w.Flush(); err != nil {
		o.Close()
		os.Remove(tmp)
		return err
	}
	if err := o.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}
