package codec

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"math/bits"
	"sync"

	"lukechampine.com/blake3"
	"lukechampine.com/blake3/guts"

	"neuralzip/codec/b3"
)

// Digest names the hash of a file that an archive stores to check the
// decoded file whole (see doc.go, "Digests").
type Digest byte

// Digest kinds; the numbers are those of the index (format version 7).
const (
	// DigestBLAKE3 is BLAKE3 with its default 32-byte output (what
	// b3sum prints). Encoding computes it in parallel: each worker hashes
	// the whole subtrees of BLAKE3's tree in the bytes it holds.
	// Encode writes it unless EncodeOptions.Digest says otherwise.
	DigestBLAKE3 Digest = 1
	// DigestSHA256 is SHA-256, computed in one sequential pass. Archives
	// of versions 1 to 6 hold it; Encode writes it on request
	// (EncodeOptions.Digest), for callers that identify files by SHA-256.
	DigestSHA256 Digest = 2
)

func (d Digest) String() string {
	switch d {
	case DigestBLAKE3:
		return "BLAKE3"
	case DigestSHA256:
		return "SHA-256"
	}
	return fmt.Sprintf("digest%d", byte(d))
}

// known reports whether this package computes d.
func (d Digest) known() bool { return d == DigestBLAKE3 || d == DigestSHA256 }

// New returns a hash.Hash of this kind: the bytes of a file written to
// it in order give the digest an archive stores (FileInfo.Sum), for
// decoders that check it themselves (package gpu).
func (d Digest) New() hash.Hash {
	if d == DigestSHA256 {
		return sha256.New()
	}
	return blake3.New(32, nil)
}

// BLAKE3's tree (see the BLAKE3 paper, section 2.1): 1 KiB chunks,
// hashed with their index as counter, are the leaves of a binary tree
// whose left subtrees are complete: every run of 2^k chunks that starts
// at a multiple of 2^k chunks is a subtree unless it is the whole input.
// A worker hashes the aligned groups of treeGroup bytes (16 chunks, the
// unit of the library's AVX-512 and AVX2 code) that lie whole in its
// bytes, merged into as few aligned subtrees as they allow
// (treePart.hash); the writer, in file order, merges those subtrees'
// chaining values and hashes the groups that straddle two workers'
// ranges and the file's last group (treeHash): at most treeGroup bytes
// per range, and a few compressions of 64 bytes per subtree.
const treeGroup = guts.MaxSIMD * guts.ChunkSize

// treeCV is the chaining value of the 2^height groups from group on.
type treeCV struct {
	cv     [8]uint32
	group  uint64
	height int
}

// treePart is what one worker computes of the BLAKE3 tree of its bytes
// [lo, hi) of a file: the subtrees of the whole groups in them, and the
// bytes before and after those (head and tail, slices of the worker's
// buffer: the writer merges the part before the buffer is reused).
type treePart struct {
	head, tail []byte
	cvs        []treeCV
}

// hash fills p from b, bytes [lo, lo+len(b)) of a file of size bytes.
func (p *treePart) hash(b []byte, lo, size int64) {
	p.cvs = p.cvs[:0]
	p.head, p.tail = b, nil
	if size <= treeGroup {
		return // the root is a group: the writer hashes the file whole
	}
	hi := lo + int64(len(b))
	ga := (lo + treeGroup - 1) / treeGroup
	gb := hi / treeGroup
	if ga >= gb {
		return
	}
	p.head, p.tail = b[:ga*treeGroup-lo], b[gb*treeGroup-lo:]
	// the largest subtree: 2^maxH groups, less than the whole file
	maxH := bits.Len64(uint64((size-1)/treeGroup)) - 1
	for g := uint64(ga); g < uint64(gb); {
		h := min(bits.TrailingZeros64(g), bits.Len64(uint64(gb)-g)-1, maxH)
		off := int64(g)*treeGroup - lo
		p.cvs = append(p.cvs, treeCV{cv: b3.SubtreeCV(b[off:off+treeGroup<<h], g*guts.MaxSIMD), group: g, height: h})
		g += 1 << h
	}
}

// groupCV is the chaining value of the group b[:treeGroup], group g of the
// file (16 chunks hashed side by side where the CPU allows).
func groupCV(b []byte, g uint64) [8]uint32 { return b3.GroupCV(b, g*guts.MaxSIMD) }

func parentCV(l, r [8]uint32) [8]uint32 {
	return guts.ChainingValue(guts.ParentNode(l, r, &guts.IV, 0))
}

// treeHash merges the parts of a file, in file order, into its BLAKE3
// digest, as BLAKE3's incremental hasher merges its chaining values:
// lazily, so that the last one merged can be the root.
type treeHash struct {
	stack  [][8]uint32 // subtrees not yet merged, largest first
	groups uint64      // groups in the stack
	buf    []byte      // bytes of the group after them (at most treeGroup)
}

var errTreeOrder = errors.New("codec: internal error: BLAKE3 parts out of order")

func (t *treeHash) add(p *treePart) error {
	t.write(p.head)
	for _, c := range p.cvs {
		if len(t.buf) == treeGroup {
			t.flush()
		}
		if len(t.buf) != 0 || c.group != t.groups {
			return errTreeOrder
		}
		t.push(c.cv, t.groups)
		t.groups += 1 << c.height
	}
	t.write(p.tail)
	return nil
}

// write takes bytes after the stack's; a full group is hashed once more
// bytes follow (the last group of the file may be the root).
func (t *treeHash) write(b []byte) {
	for len(b) > 0 {
		if len(t.buf) == treeGroup {
			t.flush()
		}
		n := min(len(b), treeGroup-len(t.buf))
		t.buf = append(t.buf, b[:n]...)
		b = b[n:]
	}
}

func (t *treeHash) flush() {
	t.push(groupCV(t.buf, t.groups), t.groups)
	t.groups++
	t.buf = t.buf[:0]
}

// push adds the chaining value of a subtree that starts at group at,
// first merging what precedes it into the subtrees at's binary digits
// describe.
func (t *treeHash) push(cv [8]uint32, at uint64) {
	t.stack = mergeStack(t.stack, bits.OnesCount64(at))
	t.stack = append(t.stack, cv)
}

func mergeStack(s [][8]uint32, keep int) [][8]uint32 {
	for len(s) > keep {
		s[len(s)-2] = parentCV(s[len(s)-2], s[len(s)-1])
		s = s[:len(s)-1]
	}
	return s
}

// sum returns the digest of everything added.
func (t *treeHash) sum() [32]byte {
	stack := append([][8]uint32(nil), t.stack...)
	var n guts.Node
	if len(t.buf) > 0 || len(stack) == 0 {
		// the last group (or the whole file): its chunks in one pass of
		// the library's SIMD code, their subtree's top node (a group
		// starts at a multiple of 16 chunks, so its chunks form the same
		// left-complete tree on their own); what precedes it merged into
		// the subtrees of its binary digits
		n = lastGroupNode(t.buf, t.groups*guts.MaxSIMD)
		stack = mergeStack(stack, bits.OnesCount64(t.groups))
	} else {
		// at least two subtrees: no single one is the whole file
		n = guts.ParentNode(stack[len(stack)-2], stack[len(stack)-1], &guts.IV, 0)
		stack = stack[:len(stack)-2]
	}
	for i := len(stack) - 1; i >= 0; i-- {
		n = guts.ParentNode(stack[i], guts.ChainingValue(n), &guts.IV, 0)
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return [32]byte(out[:32])
}

// lastGroupNode is the top node of the BLAKE3 subtree of the chunks in
// b (at most one group, the first chunk numbered chunk), not finalised.
// Chunks after the first go through one guts.CompressBuffer call (which
// reads a whole group's buffer; only len(b) bytes count): blake3.Sum256
// would hash each power-of-two run of chunks in a goroutine of its own,
// and chunk by chunk would forgo the SIMD code — both cost small archives
// most of their encode.
func lastGroupNode(b []byte, chunk uint64) guts.Node {
	if len(b) <= guts.ChunkSize {
		return guts.CompressChunk(b, &guts.IV, chunk, 0)
	}
	g := groupBufs.Get().(*[treeGroup]byte)
	copy(g[:], b)
	n := guts.CompressBuffer(g, len(b), &guts.IV, chunk, 0)
	groupBufs.Put(g)
	return n
}

var groupBufs = sync.Pool{New: func() any { return new([treeGroup]byte) }}

// treeSum is the BLAKE3 digest of b by parts of the given sizes, as
// workers holding those ranges and the writer compute it (tests).
func treeSum(b []byte, parts []int) [32]byte {
	var t treeHash
	var p treePart
	lo := 0
	for _, n := range parts {
		p.hash(b[lo:lo+n], int64(lo), int64(len(b)))
		if err := t.add(&p); err != nil {
			panic(err)
		}
		lo += n
	}
	return t.sum()
}

// SumBLAKE3 is the BLAKE3 digest (32 bytes, what b3sum prints) of the
// concatenation of parts, computed on the calling goroutine with the
// tree code the encoder's workers use (16 chunks side by side where the
// CPU allows): for callers that address content by BLAKE3, as the
// store's v2 format does, and need no extra goroutines per call.
func SumBLAKE3(parts ...[]byte) [32]byte {
	if len(parts) == 1 {
		return treeSum(parts[0], []int{len(parts[0])})
	}
	var t treeHash
	for _, p := range parts {
		t.write(p)
	}
	return t.sum()
}

// NewBLAKE3 is SumBLAKE3 written part by part: a hash.Hash of 32 bytes
// whose Sum after writing the parts in order is SumBLAKE3 of them (the
// tree code of the encoder's workers; blake3.New's hasher takes about
// twice the CPU per byte). For callers that hash what they write as
// they write it (the store's chunk files).
func NewBLAKE3() hash.Hash { return &blake3Writer{} }

type blake3Writer struct{ t treeHash }

func (w *blake3Writer) Write(p []byte) (int, error) { w.t.write(p); return len(p), nil }
func (w *blake3Writer) Sum(b []byte) []byte {
	s := w.t.sum()
	return append(b, s[:]...)
}
func (w *blake3Writer) Reset()         { w.t = treeHash{buf: w.t.buf[:0]} }
func (w *blake3Writer) Size() int      { return 32 }
func (w *blake3Writer) BlockSize() int { return guts.ChunkSize }
