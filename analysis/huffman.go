package analysis

import (
	"cmp"
	"math"
	"slices"
)

// DefaultMaxLen is the longest code HuffmanLengths makes when asked for
// maxLen ≤ 0: huff0's limit, which the codec's tables share.
const DefaultMaxLen = 11

// HuffmanLengths returns the code lengths of an optimal prefix code for
// symbols of weights p (probabilities or counts) whose codes are at most
// maxLen bits (DefaultMaxLen when maxLen ≤ 0). It is the package-merge
// algorithm (Larmore and Hirschberg), so it is optimal among length-limited
// codes, not merely a Huffman code cut down to size.
//
// Symbols of weight zero (or negative, NaN or infinite) get no code: length
// 0. A single symbol gets length 1; two or more get a complete code (Kraft
// sum exactly 1). The result is nil when the symbols do not fit in maxLen
// bits (more than 2^maxLen of them). Ties are broken by symbol index, so the
// lengths depend only on p and maxLen.
func HuffmanLengths(p []float64, maxLen int) []uint8 {
	if maxLen <= 0 {
		maxLen = DefaultMaxLen
	}
	lens := make([]uint8, len(p))
	var syms []int32
	for i, w := range p {
		if w > 0 && !math.IsInf(w, 0) {
			syms = append(syms, int32(i))
		}
	}
	n := len(syms)
	switch {
	case n == 0:
		return lens
	case n == 1:
		lens[syms[0]] = 1
		return lens
	}
	// an unlimited Huffman code is at most n-1 deep; a tighter limit
	// than that is the only one that constrains
	maxLen = min(maxLen, n-1)
	if maxLen < 63 && n > 1<<maxLen {
		return nil
	}
	slices.SortStableFunc(syms, func(a, b int32) int { return cmp.Compare(p[a], p[b]) })

	// Nodes 0..n-1 are the leaves in weight order; packages follow. Each
	// level's list merges the leaves with the pairs of the previous list
	// (leaves first on equal weights); the first 2n-2 items of the last
	// list are the solution, and a leaf's length is the number of times
	// it occurs below them.
	type node struct {
		w    float64
		l, r int32 // children of a package; -1 for a leaf
	}
	nodes := make([]node, n, n*(maxLen+1))
	cur := make([]int32, n)
	for i, s := range syms {
		nodes[i] = node{w: p[s], l: -1, r: -1}
		cur[i] = int32(i)
	}
	next := make([]int32, 0, 2*n)
	var pk []int32
	for level := 1; level < maxLen; level++ {
		pk = pk[:0]
		for i := 0; i+1 < len(cur); i += 2 {
			a, b := cur[i], cur[i+1]
			pk = append(pk, int32(len(nodes)))
			nodes = append(nodes, node{w: nodes[a].w + nodes[b].w, l: a, r: b})
		}
		next = next[:0]
		i, j := 0, 0
		for i < n || j < len(pk) {
			if j == len(pk) || (i < n && nodes[i].w <= nodes[pk[j]].w) {
				next = append(next, int32(i))
				i++
			} else {
				next = append(next, pk[j])
				j++
			}
		}
		cur, next = next, cur
	}
	stack := append([]int32(nil), cur[:2*n-2]...)
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if nd := nodes[k]; nd.l >= 0 {
			stack = append(stack, nd.l, nd.r)
		} else {
			lens[syms[k]]++
		}
	}
	return lens
}
