// Package checkpoint maps a checkpoint file to its layout: an ordered list of
// segments that covers every byte of the file exactly once.
//
// # Layout model
//
// A [Layout] splits a file of Size bytes into [Segment] values in file order.
// Each segment is either a tensor (a name, an element type, a shape and the
// byte range of its data) or opaque bytes (no name: headers, JSON, alignment
// padding, gaps between tensors, trailing bytes). [Segment] is
// [segment.Segment], the type the codec takes too: a layout's segments go to
// codec.Encode as they are, and a segment is a tensor to both exactly when it
// has a name.
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
//   - rwkv.go: "rwkv", rwkv.cpp model files ("ggmf"): F32/F16 and quantised
//     tensors, shapes reversed from ggml order like GGUF.
//   - onnx.go: "onnx", protobuf ModelProto walked with protowire: initializers,
//     tensors in node attributes (Constant nodes) at any subgraph depth,
//     sparse initializers and functions; external data becomes companions
//     ("onnx-external-data").
//   - tflite.go: "tflite", the FlatBuffer model read by a small bounds-checked
//     reader: each buffer a tensor typed by the first tensor that uses it.
//   - tfjs.go: "tfjs", a TF.js model.json (graph or layers model). Its layout
//     is one opaque segment; its weight files are companions whose tensors it
//     describes ("tfjs-weights"), placed by the files' real sizes in OpenPath.
//     A weight split across two files becomes "name" and "name#1".
//   - pytorch.go: "pytorch", torch.save zips and TorchScript archives: the
//     pickle (pickle.go, a bounded unpickler that executes nothing) names
//     the storages (stored zip members, zipfile.go) by their tensors.
//   - numpy.go: "npy" (.npy v1-v3) and "npz" (zips of .npy; stored members
//     only). Big-endian multi-byte types keep dtype.Invalid and their descr.
//
// [Open] sniffs by content only; extensions are informative. A file that no
// format matches has Format [FormatUnknown] and is one opaque segment (none
// when it is empty); that is never an error. The unknown fallback is not a
// registered format and [Formats] does not list it.
//
// A checkpoint that spans several files is a [Model]: [OpenPath] opens the
// file and its [Companion] files (the shards of a sharded index, the weight
// files of a TF.js model, ONNX external data) beside it. [OpenFS] does the
// same on an fs.FS (embedded files, files held in memory by a browser).
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
