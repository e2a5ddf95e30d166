package baseline

import (
	"errors"
	"fmt"

	"github.com/klauspost/compress/huff0"
)

// Block coding types shared by the zipnn chunks and the dfloat11 exponent
// blocks. Each block's entry in its table is one type byte, followed by the
// payload length as a uvarint for blockHuff only: a raw block's payload is
// its decoded length, an RLE block's payload is the one repeated byte.
const (
	blockRaw  byte = 0
	blockHuff byte = 1
	blockRLE  byte = 2
)

// payloadLen returns the archive bytes a block of type typ and decoded size
// n occupies; huffLen is the stored length of a Huffman block.
func payloadLen(typ byte, n, huffLen int) int {
	switch typ {
	case blockRaw:
		return n
	case blockRLE:
		return 1
	}
	return huffLen
}

// huffFresh codes in as huff0 4-stream Huffman with a table built from in
// alone (the table is part of the payload), which is what zstd's
// HUF_compress does. It returns blockRLE for a single repeated byte and
// blockRaw unless the payload is smaller than keep×len(in), keep being
// num/den.
func huffFresh(s *huff0.Scratch, in []byte, num, den int) (typ byte, payload []byte) {
	if len(in) == 0 {
		return blockRaw, in
	}
	s.Reuse = huff0.ReusePolicyNone
	out, _, err := huff0.Compress4X(in, s)
	switch {
	case errors.Is(err, huff0.ErrUseRLE):
		return blockRLE, in[:1]
	case err == nil && len(out)*den < len(in)*num:
		return blockHuff, out
	}
	return blockRaw, in
}

// huffDecodeFresh decodes a huffFresh payload (table, then 4 streams) into
// dst, which must be exactly the decoded size.
func huffDecodeFresh(s *huff0.Scratch, payload, dst []byte) error {
	s2, rest, err := huff0.ReadTable(payload, s)
	if err != nil {
		return fmt.Errorf("huff0 table: %v", err)
	}
	return huffDecode(s2.Decoder(), rest, dst)
}

// huffDecode decodes 4-stream data into dst, which must be exactly the
// decoded size.
func huffDecode(d *huff0.Decoder, data, dst []byte) error {
	out, err := d.Decompress4X(dst[:0:len(dst)], data)
	if err != nil {
		return fmt.Errorf("huff0: %v", err)
	}
	if len(out) != len(dst) || (len(out) > 0 && &out[0] != &dst[0]) {
		return fmt.Errorf("huff0: decoded %d bytes, want %d", len(out), len(dst))
	}
	return nil
}

// decodeBlock decodes one block of type typ into dst (exactly its decoded
// size). d is the shared table for blockHuff, or nil when every Huffman
// payload carries its own table (decoded with s).
func decodeBlock(typ byte, payload, dst []byte, d *huff0.Decoder, s *huff0.Scratch) error {
	switch typ {
	case blockRaw:
		copy(dst, payload)
	case blockRLE:
		for i := range dst {
			dst[i] = payload[0]
		}
	case blockHuff:
		if d == nil {
			return huffDecodeFresh(s, payload, dst)
		}
		return huffDecode(d, payload, dst)
	default:
		return fmt.Errorf("unknown block type %d", typ)
	}
	return nil
}
