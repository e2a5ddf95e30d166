// Package baseline holds the codecs NeuralZip is measured against, behind one
// interface, so that every published number has its baselines run through the
// same harness on the same bytes:
//
//	zstd-1, zstd-3, zstd-19  klauspost zstd over the whole file (zstd.go)
//	gzip                     DEFLATE level 6 over the whole file (gzip.go)
//	zipnn                    ZipNN: byte grouping + per-chunk Huffman (zipnn.go)
//	dfloat11                 DFloat11: one exponent Huffman code per tensor (dfloat11.go)
//
// New creates a codec by name, Names lists them, and Register adds one (the
// nzip codec registers itself there). Each codec file starts with a comment
// on the method, how it is reproduced here, and its source.
//
// Codecs take the whole file and its layout, the segments a checkpoint loader
// found ([codec.Segment]); zipnn and dfloat11 code float tensors by their
// dtype and the rest as opaque bytes, zstd and gzip ignore the layout. With
// nil segments the whole file is opaque.
//
// Compress and Decompress parallelise over independent chunks (zipnn chunks,
// dfloat11 blocks and tensors) on Options.Threads goroutines; the archive is
// byte-identical at any thread count. zstd and gzip are single-threaded.
//
// # Archive formats
//
// Every archive starts with a 4-byte magic naming the family, a version byte
// (1) and the original length as a uvarint. Lengths are uvarints. Decoding
// checks every length against the bytes that are left and against a second,
// independent field before it allocates the output, and a corrupt archive
// gives a *CorruptError (wrapping ErrCorrupt) with the offset where decoding
// failed; a wrong magic or version gives ErrFormat.
//
//	"NZBZ" 1 len  zstd frame (RFC 8878; absent when len = 0)
//	"NZBG" 1 len  gzip member (RFC 1952)
//
// zstd: the frame's content size (stored by EncodeAll for 256 bytes and
// more) must equal len, and len may not exceed 32768 × the frame size (a
// zstd RLE block). The frame carries its own xxhash64 checksum.
//
// gzip: the member's ISIZE trailer must equal len mod 2^32, and len may not
// exceed 1032 × the member size (DEFLATE's limit). The member carries its own
// CRC-32.
//
//	"NZBN" 1 len  nseg  nseg×(mode byte, seglen)  chunk tables  data  crc32c
//
// zipnn: segments tile the original in order. Mode 0 opaque (coded as
// BF16), 1 BF16, 2 F16, 3 F32, 4 FP8. A segment is cut into chunks of 256 KiB
// (128 KiB for FP8) and each chunk into W groups (W = element size, 1 for
// FP8), group k holding byte k of every element after the mode's bit
// reordering, plus one byte of a trailing partial element for k < len%W.
// The chunk tables hold, for every group of every chunk of every segment in
// order, a type byte (0 raw, 1 huff0, 2 RLE) and, for type 1 only, the payload
// length. The data area holds the payloads in the same order: a raw group
// as is, an RLE group as its one byte, a huff0 group as a huff0 table
// followed by 4-stream data. crc32c is the CRC-32C (Castagnoli) of the
// original, little-endian.
//
//	"NZBD" 1 len  nseg  nseg×(mode byte, seglen, payloadlen)  payloads  crc32c
//
// dfloat11: mode 0 raw (payload = the bytes), 1 zstd (payload = one zstd
// frame as above), 2 BF16, 3 F16, 4 F32. A float payload for n whole
// elements and a tail of seglen mod W bytes is
//
//	n = 0:  tail
//	n > 0:  expmode [exponents] signmantissa tail
//
// with expmode 0 (n raw exponent bytes), 1 (one byte, repeated n times) or 2
// (a huff0 table, then ceil(n/131072) block entries — type byte as in zipnn
// plus a length for type 1 — then the block payloads, each block being up to
// 131072 exponents coded with that one table, without a table of its own).
// signmantissa is n bytes (BF16: sign<<7 | mantissa), ceil(11n/8) bytes
// (F16: LSB-first 11-bit fields sign<<10 | mantissa) or 3n bytes (F32: the
// 23-bit mantissa little-endian with the sign in the top bit of the third
// byte).
package baseline
