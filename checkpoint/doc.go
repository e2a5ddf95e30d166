// Package checkpoint maps a checkpoint file to its layout: an ordered list of
// segments that covers every byte of the file exactly once.
//
// # Layout model
//
// A [Layout] splits a file of Size bytes into [Segment] values in file order.
// Each segment is either a tensor (Kind [Tensor]: a name, an element type, a
// shape and the byte range of its data) or opaque bytes (Kind [Opaque]:
// headers, JSON, alignment padding, gaps between tensors, trailing bytes).
// The segments are contiguous: the first starts at 0, each starts where the
// previous one ends, and the last ends at Size. Only tensors with zero
// elements have zero length; they sit at the offset their file gives them.
// [Layout.Validate] checks these invariants.
//
// The codec compresses tensor segments by their element type and opaque
// segments as plain bytes, so a layout must be exact: concatenating the bytes
// of its segments gives back the file.
//
// # Formats
//
// Each format lives in one file with the same skeleton (a match function
// that looks at the first bytes, an open function that reads the header and
// builds the layout) and registers itself with [Register] in init:
//
//   - safetensors.go: "safetensors", an 8-byte header length, a JSON header
//     and a data section. The header is read by a small JSON scanner
//     (jsonscan.go) that keeps file offsets for errors.
//   - safetensors_index.go: "safetensors-index", the JSON index of a sharded
//     safetensors model (*.safetensors.index.json). Its layout is one opaque
//     segment; [OpenPath] opens the shards it names.
//   - gguf.go: "gguf", GGUF versions 2 and 3, including quantised tensors
//     (ggml.go holds the ggml type table). Shapes are reported in row-major
//     order, the reverse of the ggml dims stored in the file.
//
// [Open] sniffs by content only; extensions are informative. A file that no
// format matches has Format [FormatUnknown] and is one opaque segment (none
// when it is empty); that is never an error. The unknown fallback is not a
// registered format and [Formats] does not list it.
//
// A checkpoint that spans several files is a [Model]: [OpenPath] opens a
// sharded index and every shard beside it.
//
// Only headers are read. Tensor data is never touched, so opening a file
// costs time and memory in proportion to its header, not its size.
//
// # Errors
//
// A file that matches a format's signature but is malformed is an error, not
// an unknown file. Such errors are a [*FormatError] that names the format and
// the byte offset where the problem lies:
//
//	checkpoint: safetensors: offset 8: header length 1000000000000 exceeds file size 4096
//
// Each FormatError wraps one of the sentinel errors [ErrTruncated],
// [ErrOverlap], [ErrOutOfRange], [ErrTooLarge], [ErrMalformed] and
// [ErrUnsupported], so callers can test the class with errors.Is and the
// position with errors.As.
//
// Every length, count, offset and shape read from a header is checked against
// the file size and for overflow before anything is allocated, so hostile
// input costs at most memory in proportion to the file (or to a fixed cap)
// and never panics, recurses without bound or hangs.
package checkpoint
