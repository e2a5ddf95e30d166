package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/bits"

	"neuralzip/analysis"
	"neuralzip/codec"
	"neuralzip/dtype"
	"neuralzip/trajectory"
)

// runTrajFloor measures what codes with static tables per block could
// reach on the real bf16 run with one keyframe: every 64 Ki-value block of
// a BF16 tensor matched in the step before at its ideal cost, the smaller
// of
//   - the difference tokens (codec/doc.go, q = 3) at their order-0 entropy
//     per reference exponent, the extra bits raw, plus T bytes for each
//     reference exponent's table, and
//   - the exponents at their entropy, sign and mantissa raw, plus 20 bytes;
//
// everything else (the first frame, headers, other tensors, indexes) as
// the default archive has it. With T = 0 (free tables, no rounding) it is
// a floor for every code of these tokens with a table per block and
// reference exponent. The check: the floor lies below what the default
// coding spends on the same blocks (else the measurement is wrong).
func runTrajFloor(args []string) error {
	fs := flag.NewFlagSet("traj-floor", flag.ExitOnError)
	shared := fs.String("shared", "../shared", "the corpus directory")
	fs.Parse(args)
	steps, err := realSteps(*shared, "bf16")
	if err != nil {
		return err
	}
	var sumInd int64
	for _, s := range steps {
		a, err := codec.CompressBytes(context.Background(), s.data, s.segs, codec.EncodeOptions{})
		if err != nil {
			return err
		}
		sumInd += int64(len(a))
	}
	a, err := pack(steps, len(steps), trajectory.RefPrevious, nil, codec.EncodeOptions{})
	if err != nil {
		return err
	}
	// each modelled block: its ideal costs in bits (tokens without
	// tables, tables present, independent), and what the default
	// archive spends on it
	type block struct{ tok, tables, ind float64 }
	var blocks []block
	var spent int64
	for i := 1; i < len(steps); i++ {
		prev := map[string]codec.Segment{}
		for _, s := range steps[i-1].segs {
			if s.DType == dtype.BF16 {
				prev[s.Name] = s
			}
		}
		rd, err := a.FrameReader(i)
		if err != nil {
			return err
		}
		bis := rd.Files()[0].Blocks()
		rd.Close()
		for _, s := range steps[i].segs {
			r, ok := prev[s.Name]
			if s.DType != dtype.BF16 || !ok || r.Length != s.Length {
				continue
			}
			for _, bi := range bis {
				if bi.Offset >= s.Offset && bi.Offset+bi.Length <= s.Offset+s.Length {
					spent += bi.Compressed
				}
			}
			cur := steps[i].data[s.Offset : s.Offset+s.Length]
			ref := steps[i-1].data[r.Offset : r.Offset+r.Length]
			n := len(cur) / 2
			for lo := 0; lo < n; lo += 1 << 16 {
				hi := min(n, lo+1<<16)
				var exps [256]uint64
				toks := map[int]*[256]uint64{}
				extra := 0
				for j := lo; j < hi; j++ {
					v := binary.LittleEndian.Uint16(cur[2*j:])
					rv := binary.LittleEndian.Uint16(ref[2*j:])
					exps[v>>7&0xff]++
					c := int(rv >> 7 & 0xff)
					if toks[c] == nil {
						toks[c] = new([256]uint64)
					}
					tok, x := floorToken(orderKey(v)-orderKey(rv), rv>>15)
					toks[c][tok]++
					extra += x
				}
				bl := block{tok: float64(extra), tables: float64(len(toks)), ind: analysis.Entropy(exps[:])*float64(hi-lo) + 8*float64(hi-lo) + 8*20}
				for _, h := range toks {
					var m uint64
					for _, c := range h {
						m += c
					}
					bl.tok += analysis.Entropy(h[:]) * float64(m)
				}
				blocks = append(blocks, bl)
			}
		}
	}
	rest := a.End - spent // the first frame, headers, other tensors, indexes
	fmt.Printf("\nbf16 run, one keyframe: %d blocks modelled, on which the default coding spends %d bytes; sum of independent archives %d; the default archive %d (%.4f)\n\n",
		len(blocks), spent, sumInd, a.End, float64(a.End)/float64(sumInd))
	fmt.Printf("| table bytes T | modelled blocks | whole run | ÷ independent |\n|---|---|---|---|\n")
	var floor0 float64
	for _, T := range []float64{0, 15, 21, 23, 31} {
		var m float64
		for _, bl := range blocks {
			m += math.Min(bl.tok+8*T*bl.tables, bl.ind) / 8
		}
		if T == 0 {
			floor0 = m
		}
		total := float64(rest) + m
		fmt.Printf("| %.0f | %.0f | %.0f | %.4f |\n", T, m, total, total/float64(sumInd))
	}
	if len(blocks) == 0 || floor0 >= float64(spent) {
		return errors.New("traj-floor: the T = 0 floor is not below the default coding's bytes: the measurement is wrong")
	}
	return nil
}

// orderKey is codec's order-preserving key of a 16-bit float.
func orderKey(x uint16) uint16 {
	if x&0x8000 == 0 {
		return x ^ 0x8000
	}
	return x ^ 0xffff
}

// floorToken is the token (q = 3) and extra-bit count of the difference
// d of keys, with z the reference's sign bit (codec/doc.go).
func floorToken(d uint16, z uint16) (int, int) {
	a, s := uint32(d), uint16(0)
	if int16(d) < 0 {
		a, s = uint32(-int32(int16(d))), 1
	}
	if a == 0 {
		return 0, 0
	}
	const q = 3
	k, extra := int(a), 0
	if a >= 1<<(q+1) {
		l := bits.Len32(a)
		k = (l-q)<<q + int(a>>(l-1-q)&(1<<q-1))
		extra = l - 1 - q
	}
	return 2*k - 1 + int(s^z), extra
}
