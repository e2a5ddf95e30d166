package prog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"neuralzip/codec/huff"
)

// Streams, as in the codec's "Streams" (codec/doc.go), modes 0 to 3: a
// mode byte, then
//
//	0 packed  ceil(n·w/8) bytes, symbol i at bits i·w.. (LSB first)
//	1 const   one byte: every symbol
//	2 huff1   uvarint L, then L bytes: a huff0 block, 1 stream
//	3 huff4   uvarint L, then L bytes: a huff0 block, 4 streams
const (
	modePacked = 0
	modeConst  = 1
	modeHuff1  = 2
	modeHuff4  = 3
)

// min4X: streams of this many symbols and more are coded as 4-stream
// blocks (decoded four streams at once), shorter ones as 1-stream blocks.
const min4X = 256

// minHuff: streams shorter than this are stored packed (or constant):
// a table description costs more than a few symbols save.
const minHuff = 32

// ErrCorrupt is what every decoding error wraps.
var ErrCorrupt = errors.New("prog: corrupt records block")

type corruptError struct{ msg string }

func (e *corruptError) Error() string { return e.msg }
func (e *corruptError) Unwrap() error { return ErrCorrupt }

func errf(format string, args ...any) error {
	return &corruptError{msg: "prog: " + fmt.Sprintf(format, args...)}
}

// streamEncoder codes symbol streams; its buffers are reused.
type streamEncoder struct {
	t    huff.Table
	hist [256]uint32
	tmp  []byte
}

// appendStream appends the stream of syms (symbols of width w) in the
// smallest of the modes it tries.
func (e *streamEncoder) appendStream(dst, syms []byte, w uint8) []byte {
	n := len(syms)
	packed := packedLen(n, w)
	if n == 0 {
		return append(dst, modePacked)
	}
	clear(e.hist[:])
	for _, s := range syms {
		e.hist[s]++
	}
	if e.hist[syms[0]] == uint32(n) {
		return append(dst, modeConst, syms[0])
	}
	if n >= minHuff && e.t.Build(&e.hist) == nil {
		mode := byte(modeHuff1)
		if n >= min4X {
			mode = modeHuff4
		}
		if est := int(e.t.Cost(&e.hist)+7)/8 + 6; est < packed {
			var err error
			if mode == modeHuff4 {
				e.tmp, err = e.t.Append4X(e.tmp[:0], syms)
			} else {
				e.tmp, err = e.t.Append1X(e.tmp[:0], syms)
			}
			if err == nil && len(e.tmp)+1+binary.MaxVarintLen32 < packed {
				dst = append(dst, mode)
				dst = binary.AppendUvarint(dst, uint64(len(e.tmp)))
				return append(dst, e.tmp...)
			}
		}
	}
	dst = append(dst, modePacked)
	return appendPacked(dst, syms, w)
}

func packedLen(n int, w uint8) int { return (n*int(w) + 7) / 8 }

// appendPacked appends the symbols of width w, LSB first.
func appendPacked(dst, syms []byte, w uint8) []byte {
	if w == 8 {
		return append(dst, syms...)
	}
	var acc uint64
	var nb uint8
	for _, s := range syms {
		acc |= uint64(s) << nb
		nb += w
		for nb >= 8 {
			dst = append(dst, byte(acc))
			acc >>= 8
			nb -= 8
		}
	}
	if nb > 0 {
		dst = append(dst, byte(acc))
	}
	return dst
}

// streamDecoder decodes symbol streams.
type streamDecoder struct {
	hx *huff.Decoder
}

// readStream decodes a stream of len(dst) symbols of width w from src and
// returns the bytes after it.
func (d *streamDecoder) readStream(dst, src []byte, w uint8) ([]byte, error) {
	n := len(dst)
	if len(src) == 0 {
		return nil, errf("stream: no mode byte")
	}
	mode, src := src[0], src[1:]
	switch mode {
	case modePacked:
		l := packedLen(n, w)
		if len(src) < l {
			return nil, errf("packed stream: %d bytes, want %d", len(src), l)
		}
		unpack(dst, src[:l], w)
		return src[l:], nil
	case modeConst:
		if len(src) < 1 || src[0]>>w != 0 {
			return nil, errf("const stream: no symbol of width %d", w)
		}
		s := src[0]
		for i := range dst {
			dst[i] = s
		}
		return src[1:], nil
	case modeHuff1, modeHuff4:
		l, k := binary.Uvarint(src)
		if k <= 0 || l > uint64(len(src)-k) {
			return nil, errf("huffman stream: bad length")
		}
		blk, rest := src[k:k+int(l)], src[k+int(l):]
		if n == 0 {
			return nil, errf("huffman stream of no symbols")
		}
		if d.hx == nil {
			d.hx = new(huff.Decoder)
		}
		data, err := d.hx.ReadTable(blk, n)
		if err != nil {
			return nil, errf("huffman stream: %v", err)
		}
		if d.hx.NSym > 1<<w {
			return nil, errf("huffman stream: %d symbols for width %d", d.hx.NSym, w)
		}
		if mode == modeHuff4 {
			err = d.hx.Decode4(dst[:n:n], data)
		} else {
			err = d.hx.Decode1(dst[:n:n], data)
		}
		if err != nil {
			return nil, errf("huffman stream: %v", err)
		}
		return rest, nil
	}
	return nil, errf("stream mode %d", mode)
}

// unpack reads len(dst) symbols of width w from src (LSB first).
func unpack(dst, src []byte, w uint8) {
	if w == 8 {
		copy(dst, src)
		return
	}
	var acc uint64
	var nb uint8
	mask := byte(1)<<w - 1
	p := 0
	for i := range dst {
		for nb < w {
			acc |= uint64(src[p]) << nb
			p++
			nb += 8
		}
		dst[i] = byte(acc) & mask
		acc >>= w
		nb -= w
	}
}
