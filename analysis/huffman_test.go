package analysis

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"testing"
)

func kraft(lens []uint8) float64 {
	var k float64
	for _, l := range lens {
		if l != 0 {
			k += math.Ldexp(1, -int(l))
		}
	}
	return k
}

func codeCost(p []float64, lens []uint8) float64 {
	var c float64
	for i, l := range lens {
		c += p[i] * float64(l)
	}
	return c
}

// checkCode checks the properties every result has.
func checkCode(t *testing.T, p []float64, maxLen int, lens []uint8) {
	t.Helper()
	present := 0
	for i, w := range p {
		if (w > 0) != (lens[i] > 0) {
			t.Fatalf("symbol %d: weight %v, length %d", i, w, lens[i])
		}
		if w > 0 {
			present++
		}
		if int(lens[i]) > maxLen {
			t.Fatalf("symbol %d: length %d > %d", i, lens[i], maxLen)
		}
	}
	if k := kraft(lens); present >= 2 && k != 1 {
		t.Fatalf("Kraft sum %v for %d symbols (lengths %v)", k, present, lens)
	}
}

// bruteForce is the cheapest assignment of lengths 1..maxLen to the
// symbols with Kraft sum ≤ 1.
func bruteForce(p []float64, maxLen int) float64 {
	best := math.Inf(1)
	lens := make([]uint8, len(p))
	var rec func(i int, k float64)
	rec = func(i int, k float64) {
		if k > 1 {
			return
		}
		if i == len(p) {
			best = min(best, codeCost(p, lens))
			return
		}
		for l := 1; l <= maxLen; l++ {
			lens[i] = uint8(l)
			rec(i+1, k+math.Ldexp(1, -l))
		}
	}
	rec(0, 0)
	return best
}

type minHeap []float64

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *minHeap) Pop() any          { x := (*h)[len(*h)-1]; *h = (*h)[:len(*h)-1]; return x }

// huffmanCost is the cost of a plain (unlimited) Huffman code: the sum of
// the weights of all merged nodes.
func huffmanCost(p []float64) float64 {
	h := minHeap{}
	for _, w := range p {
		if w > 0 {
			h = append(h, w)
		}
	}
	heap.Init(&h)
	var c float64
	for h.Len() > 1 {
		s := heap.Pop(&h).(float64) + heap.Pop(&h).(float64)
		c += s
		heap.Push(&h, s)
	}
	return c
}

func TestHuffmanKnown(t *testing.T) {
	// dyadic weights: the Huffman code is exact; a limit of 3 bits must
	// flatten the tail optimally (checked by brute force)
	p := []float64{8, 4, 2, 1, 1}
	lens := HuffmanLengths(p, 0)
	want := []uint8{1, 2, 3, 4, 4}
	for i := range want {
		if lens[i] != want[i] {
			t.Fatalf("lengths %v, want %v", lens, want)
		}
	}
	lim := HuffmanLengths(p, 3)
	checkCode(t, p, 3, lim)
	if c, b := codeCost(p, lim), bruteForce(p, 3); c != b {
		t.Fatalf("limit 3: lengths %v cost %v, optimum %v", lim, c, b)
	}
	// edge cases
	if l := HuffmanLengths([]float64{0, 3, 0}, 0); l[1] != 1 || l[0] != 0 || l[2] != 0 {
		t.Fatalf("one symbol: %v", l)
	}
	if l := HuffmanLengths([]float64{0, math.NaN(), -1, math.Inf(1)}, 0); kraft(l) != 0 {
		t.Fatalf("no symbols: %v", l)
	}
	if l := HuffmanLengths(make([]float64, 5), 2); l == nil {
		t.Fatal("all-zero weights need no code")
	}
	if l := HuffmanLengths([]float64{1, 1, 1, 1, 1}, 2); l != nil {
		t.Fatalf("5 symbols in 2 bits: %v", l)
	}
	if l := HuffmanLengths([]float64{1, 1, 1, 1}, 2); codeCost([]float64{1, 1, 1, 1}, l) != 8 {
		t.Fatalf("4 symbols in 2 bits: %v", l)
	}
}

func TestHuffmanOptimalRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n := 2 + r.IntN(5)
		p := make([]float64, n)
		for i := range p {
			p[i] = math.Exp2(-12 * r.Float64()) // skewed, so limits bind
			if r.IntN(8) == 0 {
				p[i] = 0
			}
		}
		for _, maxLen := range []int{2, 3, 4, 5} {
			lens := HuffmanLengths(p, maxLen)
			present := 0
			var q []float64
			for _, w := range p {
				if w > 0 {
					present++
					q = append(q, w)
				}
			}
			if present > 1<<maxLen {
				if lens != nil {
					t.Fatalf("%v in %d bits: %v", p, maxLen, lens)
				}
				continue
			}
			checkCode(t, p, maxLen, lens)
			if present >= 2 {
				if c, b := codeCost(p, lens), bruteForce(q, maxLen); math.Abs(c-b) > 1e-9*b {
					t.Fatalf("%v limit %d: lengths %v cost %v, optimum %v", p, maxLen, lens, c, b)
				}
			}
		}
	}
	// with a limit that does not bind, the cost is Huffman's
	for trial := 0; trial < 50; trial++ {
		p := make([]float64, 2+r.IntN(300))
		for i := range p {
			p[i] = float64(1 + r.IntN(1000))
		}
		lens := HuffmanLengths(p, 60)
		checkCode(t, p, 60, lens)
		if c, h := codeCost(p, lens), huffmanCost(p); math.Abs(c-h) > 1e-9*h {
			t.Fatalf("%d symbols: cost %v, Huffman %v", len(p), c, h)
		}
		// and the default limit costs at least as much
		lim := HuffmanLengths(p, 0)
		checkCode(t, p, DefaultMaxLen, lim)
		if c := codeCost(p, lim); c < huffmanCost(p)-1e-9 {
			t.Fatalf("limited code beats Huffman: %v", c)
		}
	}
}
