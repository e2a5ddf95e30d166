package store

import (
	"sync"

	"lukechampine.com/blake3/guts"

	"neuralzip/codec"
)

// blake3Sum is a version 2 address: codec.SumBLAKE3 of b. Inputs of at
// most one group (16 chunks, 16 KiB: most tensors of a large model are
// smaller) are hashed here in one pass of the library's SIMD code over a
// pooled group buffer, the root node of a one-group tree as the codec's
// tree code finishes it (treeHash.sum, lastGroupNode) — without the tree
// code's per-call buffers, which cost a get of 3,316 small units a
// megabyte of fresh memory per few hundred units. TestBlake3Sum compares
// the two, and both with the reference implementation, at every size
// around the chunk and group edges.
func blake3Sum(b []byte) Hash {
	if len(b) > smallGroup {
		return Hash(codec.SumBLAKE3(b))
	}
	var n guts.Node
	if len(b) <= guts.ChunkSize {
		n = guts.CompressChunk(b, &guts.IV, 0, 0)
	} else {
		g := smallGroups.Get().(*[smallGroup]byte)
		copy(g[:], b)
		n = guts.CompressBuffer(g, len(b), &guts.IV, 0, 0)
		smallGroups.Put(g)
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return Hash(out[:32])
}

// smallGroup is BLAKE3's SIMD group: the chunks guts.CompressBuffer
// hashes side by side.
const smallGroup = guts.MaxSIMD * guts.ChunkSize

var smallGroups = sync.Pool{New: func() any { return new([smallGroup]byte) }}
