// Package b3 computes the chaining values of BLAKE3's tree (see the BLAKE3
// paper, section 2.1) for the digests of package codec: the 16 chunks of a
// 16 KiB group side by side, and parent nodes 16 at a time, in AVX-512
// where the CPU has it and through lukechampine.com/blake3/guts (pure Go,
// or its own assembly) elsewhere. Only the hash mode (no key, no
// derivation) and whole groups are served: the callers hash the rest.
package b3

import (
	"math/bits"

	"lukechampine.com/blake3/guts"
)

// GroupSize is the bytes of one group: 16 chunks of 1 KiB.
const GroupSize = 16 * guts.ChunkSize

// CV is a chaining value.
type CV = [8]uint32

// GroupCV returns the chaining value of the subtree of the 16 chunks in
// b[:GroupSize], whose first chunk has index chunk in the file.
func GroupCV(b []byte, chunk uint64) CV {
	if !useAVX512 {
		return guts.ChainingValue(guts.CompressBuffer((*[GroupSize]byte)(b[:GroupSize]), GroupSize, &guts.IV, chunk, 0))
	}
	var cvs [16]CV
	ChunkCVs(&cvs, b, chunk)
	return merge16(&cvs)
}

// ChunkCVs sets cvs to the chaining values of the 16 chunks in
// b[:GroupSize], the first with index chunk.
func ChunkCVs(cvs *[16]CV, b []byte, chunk uint64) {
	g := (*[GroupSize]byte)(b[:GroupSize])
	if useAVX512 {
		var t [8][16]uint32
		chunks16(&t, g, uint32(chunk), uint32(chunk>>32))
		untranspose(cvs, &t)
		return
	}
	for i := range cvs {
		cvs[i] = guts.ChainingValue(guts.CompressChunk(g[i*guts.ChunkSize:(i+1)*guts.ChunkSize], &guts.IV, chunk+uint64(i), 0))
	}
}

// Parents sets out[i] to the chaining value of the parent of cvs[2i] and
// cvs[2i+1] (len(out) = len(cvs)/2; cvs may be out's own backing array
// only when out starts where cvs does).
func Parents(out, cvs []CV) {
	n := len(cvs) / 2
	i := 0
	if useAVX512 {
		var l, r, t [8][16]uint32
		for ; i+1 < n; i += 16 {
			k := min(16, n-i)
			for j := 0; j < k; j++ {
				a, b := &cvs[2*(i+j)], &cvs[2*(i+j)+1]
				for w := 0; w < 8; w++ {
					l[w][j], r[w][j] = a[w], b[w]
				}
			}
			parents16(&t, &l, &r)
			for j := 0; j < k; j++ {
				for w := 0; w < 8; w++ {
					out[i+j][w] = t[w][j]
				}
			}
		}
	}
	for ; i < n; i++ {
		out[i] = guts.ChainingValue(guts.ParentNode(cvs[2*i], cvs[2*i+1], &guts.IV, 0))
	}
}

// merge16 returns the chaining value of the subtree of 16 chunks.
func merge16(cvs *[16]CV) CV {
	s := cvs[:]
	for len(s) > 1 {
		Parents(s[:len(s)/2], s)
		s = s[:len(s)/2]
	}
	return s[0]
}

// SubtreeCV returns the chaining value of the subtree of the len(b) /
// GroupSize whole groups in b (a power of two), the first of which
// starts with chunk index chunk.
func SubtreeCV(b []byte, chunk uint64) CV {
	n := len(b) / GroupSize
	// batches of up to batchGroups groups, each a whole subtree, merged
	// eagerly as they complete
	var stack [64]CV
	var cvs [16 * batchGroups]CV
	per := min(n, batchGroups)
	for i := 0; i < n/per; i++ {
		cv := batchCV(cvs[:16*per], b[i*per*GroupSize:(i+1)*per*GroupSize], chunk+uint64(16*i*per))
		lvl := 0
		for j := i; j&1 == 1; j >>= 1 {
			cv = guts.ChainingValue(guts.ParentNode(stack[lvl], cv, &guts.IV, 0))
			lvl++
		}
		stack[lvl] = cv
	}
	return stack[bits.Len(uint(n/per))-1]
}

// batchGroups: the groups whose chunk chaining values SubtreeCV holds at
// once (8 KiB), so that their parents are compressed 16 at a time.
const batchGroups = 16

// batchCV is the chaining value of the subtree of the groups in b (a
// power of two, at most batchGroups), with s to hold their chunks'.
func batchCV(s []CV, b []byte, chunk uint64) CV {
	if !useAVX512 {
		// the library hashes a group whole
		s = s[:len(b)/GroupSize]
		for g := range s {
			s[g] = GroupCV(b[g*GroupSize:], chunk+uint64(16*g))
		}
	} else {
		for g := 0; g < len(b)/GroupSize; g++ {
			ChunkCVs((*[16]CV)(s[16*g:16*g+16]), b[g*GroupSize:], chunk+uint64(16*g))
		}
	}
	for len(s) > 1 {
		Parents(s[:len(s)/2], s)
		s = s[:len(s)/2]
	}
	return s[0]
}

func untranspose(cvs *[16]CV, t *[8][16]uint32) {
	for i := range cvs {
		for w := 0; w < 8; w++ {
			cvs[i][w] = t[w][i]
		}
	}
}
