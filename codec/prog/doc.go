// Package prog holds the codec's programs: small reversible operators that
// turn a tensor's bytes into typed field streams, and their exact
// inverses. The first operator is record → fields: a tensor of ggml's
// quantised blocks (GGUF's Q8_0, Q4_0, …, Q6_K, IQ4_NL) is a run of
// fixed-stride records, and each record splits into its fields — f16
// scales as their high and low bytes, packed sub-block scales and quants
// as symbols of their width (narrow quants joined two or four to a byte)
// — which are coded as streams, each with its own Huffman table (package
// codec/huff), packed or constant where that is smaller.
//
// A schema (schema.go, ggml.go) describes one block type as a list of
// parts over the record's bytes; each part is a bijection between its
// bytes and its fields, so any record bytes (not only those a quantiser
// writes) round-trip. Encoder and Decoder (records.go) code a run of
// records as the payload of the codec's records block (codec/doc.go,
// "Records blocks"); the stream layout (stream.go) is the codec's
// (modes 0 to 3 of "Streams").
//
// The second operator is row match (repeat.go, RepeatEncoder and
// RepeatDecoder): a tensor of rows of 16- or 32-bit floats whose words
// repeat, exactly or with the sign bit flipped, at the same column of
// other rows or at the mirrored column (windowed DFT and DCT bases) is
// coded as up to four sources per row and one range-coded symbol per
// word (package codec/rangecoder); the words no source gives come back
// to the caller as literals, which the codec codes as a float block
// (codec/doc.go, "Repeat blocks").
//
// The package knows nothing of archives: the codec hands it the bytes of
// whole records and the schema, and gets back a payload; the archive's
// index, checksums and format versions stay in package codec.
package prog
