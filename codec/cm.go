package codec

import (
	"io"

	"neuralzip/codec/bytecm"
)

// Context-modelled blocks (kind cm, format version 10; doc.go,
// "Context-modelled blocks"): opaque bytes that LZ barely shrinks —
// quantised 8-bit weights, packed integers — are also coded bit by bit
// by package bytecm, and kept that way where that is smaller than zstd's
// block. Such bytes are mostly literals to zstd, whose Huffman code of
// them costs a table per block and cannot follow a tensor's statistics as
// they change; bytecm's adaptive models can, and its match model takes
// the repeats (handtrack's uint8 tensors: 2,243,964 B against zstd's
// 2,297,375 and xz -6's 2,271,760). It codes and decodes at about 12–17
// MB/s a core, against zstd's hundreds, so it is tried only where zstd
// left bytes on the table (encodeCM).

// cmVersion is the format version of archives that may hold cm blocks:
// the writer writes it where the plan-time probe finds opaque bytes that
// may be coded so (probeOpaque).
const cmVersion = 10

// cmMinLevel is the lowest zstd level (EncodeOptions.ZstdLevel) at which
// cm blocks are tried: a lower level asks for speed, and a cm block codes
// at a twentieth of zstd's.
const cmMinLevel = 3

// cmMinBytes is the smallest block tried as a cm block: the models learn
// from nothing in each block, and a block of a few hundred bytes is over
// before they have.
const cmMinBytes = 4 << 10

// encodeCM tries the opaque block src, coded into dst[mark:] as kind,
// as a cm block and keeps the smaller. Only archives written by bytes
// alone (EncodeOptions.Best) may hold cm blocks (Encode: b.cm). It tries
// where zstd's block is over half the bytes (LZ-friendly bytes such as text, which zstd shrinks
// far more, are not tried), where the bytes' order-0 entropy is under
// cmMaxBits bits a byte (random or compressed bytes are not), and where
// they do not look like floats (whose low mantissa bytes no byte model
// shrinks: the float coder took them if they pay). On handtrack's weights
// every block passes and is smaller as a cm block, also where zstd's
// matches took it below the bytes' order-0 entropy (its first block:
// zstd 308,274 B, cm 297,339).
func (b *blockEncoder) encodeCM(dst []byte, mark int, src []byte, kind byte) ([]byte, byte) {
	coded := len(dst) - mark
	if !b.cm || len(src) < cmMinBytes || 2*coded <= len(src) || len(foundFloat(src)) > 0 {
		return dst, kind
	}
	clear(b.hist[:])
	countHist(&b.hist, src)
	if bits, _ := entropyBits(&b.hist, len(src)); bits >= cmMaxBits*float64(len(src)) {
		return dst, kind
	}
	b.lz = bytecm.Encode(b.lz[:0], src)
	if len(b.lz) < coded {
		return append(dst[:mark], b.lz...), kindCM
	}
	return dst, kind
}

// cmMaxBits is the order-0 entropy, in bits a byte, from which on a block
// is not tried as a cm block (encodeCM): bytes that near-random leave
// the models nothing to learn.
const cmMaxBits = 7.75

// decodeCM decodes a cm block.
func decodeCM(dst, src []byte) error {
	if err := bytecm.Decode(dst, src); err != nil {
		return errf("cm block: %v", err)
	}
	return nil
}

// probeOpaque reports whether the opaque blocks of plans (those not
// planned as float blocks) may be coded as cm blocks, which decides
// format version 10: one block at least cmMinBytes long whose sample
// (cmProbeReads runs of cmProbeBytes spread over it) would pass
// encodeCM's tests — not floats (foundFloatAt), an order-0 entropy under
// cmMaxBits, and a zstd frame (zstdFewMatchesLevel) over half its bytes.
// Headers of text or tables (JSON, pickle, flatbuffers) shrink more than
// that and leave the version as the float probe says. At most
// sparseProbeBlocks blocks are read; the answer depends on the input's
// bytes only.
func probeOpaque(r io.ReaderAt, plans []blockPlan) (bool, error) {
	var buf []byte // (made once a block is probed: ReadAt makes it escape)
	var hist [256]uint32
	var z []byte
	probed := 0
	for _, p := range plans {
		if p.float || p.length < cmMinBytes {
			continue
		}
		if probed++; probed > sparseProbeBlocks {
			return false, nil
		}
		if buf == nil {
			buf = make([]byte, cmProbeReads*cmProbeBytes)
		}
		per := min(int64(cmProbeBytes), p.length/cmProbeReads) &^ 3
		n := 0
		for k := int64(0); k < cmProbeReads; k++ {
			// at the same offset mod 4 in every run, so that float
			// lanes line up in the sample
			first := spreadRun(k, cmProbeReads, p.length, per) &^ 3
			if _, err := r.ReadAt(buf[n:n+int(per)], p.off+first); err != nil && err != io.EOF {
				return false, nil // Encode reports the read error when it codes the block
			}
			n += int(per)
		}
		sample := buf[:n]
		if t, _ := foundFloatAt(sample); len(t) > 0 {
			continue
		}
		clear(hist[:])
		countHist(&hist, sample)
		if bits, _ := entropyBits(&hist, n); bits >= cmMaxBits*float64(n) {
			continue
		}
		enc, err := zstdEncoder(zstdFewMatchesLevel)
		if err != nil {
			return false, err
		}
		if z = enc.EncodeAll(sample, z[:0]); 2*len(z) > n {
			return true, nil
		}
	}
	return false, nil
}

// The opaque-bytes probe: runs read per block and their length (together
// foundFloatAt's sample).
const (
	cmProbeReads = 4
	cmProbeBytes = 1 << 10
)
