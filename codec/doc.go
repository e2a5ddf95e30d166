// Package codec implements the .nzip archive: lossless compression of
// neural-network checkpoint files that restores the original file bytes
// exactly.
//
// # Use
//
// A loader (package checkpoint) describes a file as segments (tensors with a
// dtype, and opaque bytes). Encode codes float tensors through the float
// pipeline and everything else with zstd, in parallel, and writes one
// archive; Reader gives back whole files (streamed), byte ranges or single
// tensors (random access):
//
//	res, err := codec.Encode(ctx, w, []codec.Input{{Name: "model.safetensors", R: f, Size: size, Segments: segs}}, codec.EncodeOptions{})
//	rd, err := codec.NewReader(archive, archiveSize)
//	err = rd.WriteFile(ctx, out, 0, codec.DecodeOptions{})
//	data, info, err := rd.Tensor("model.embed_tokens.weight")
//
// EncodeOptions and DecodeOptions are plain structs whose zero values
// work: GOMAXPROCS threads, 65536 values per chunk, zstd level 3; a
// context, the first argument of every call that works, cancels it. The
// archive bytes never depend on the thread count.
//
// With EncodeOptions.Ref (a Reference made by NewReference from another model,
// e.g. the previous checkpoint of a training run or the base model of a
// fine-tune), Encode codes tensors as differences to the reference where
// that is smaller (see References); decoding such an archive needs the same
// reference (DecodeOptions.Ref or Reader.UseRef), found by its SHA-256.
//
// # Format, versions 3 to 13
//
// All integers are little-endian; "uvarint" is encoding/binary's unsigned
// varint, "varint" its zigzag signed one, "string" a uvarint length and that
// many bytes. An archive is
//
//	Header | Payload | Index | Trailer
//
// A file that starts with 89 4E 5A 4C 4F 53 53 59 ("\x89NZLOSSY",
// LossyMagic) is a lossy archive of nzip quantize (package lossy, which
// specifies it), never an archive of this format: readers refuse it with
// ErrLossy.
//
// Header, 16 bytes: the magic 89 4E 5A 49 50 0D 0A 1A ("\x89NZIP\r\n\x1a"),
// u16 version (13, 12, 11, 10, 9, 8 or 7: version 8 is version 7 plus sparse float
// blocks, see "Sparse blocks", which a version-7 archive must not hold;
// version 9 is version 8 plus zstd streams, mode 8 of "Streams"; version
// 10 is version 9 plus cm blocks, kind 5, see "Context-modelled blocks";
// version 11 is version 10 plus records blocks, kind 6, see "Records
// blocks"; version 12 is version 11 plus their one-byte layout (type 24);
// version 13 is version 12 plus repeat blocks, kind 7, see "Repeat
// blocks"; writers write 13 only when a probe of the input finds float
// tensors whose words repeat across rows or mirrored (windowed DFT and
// DCT bases), else 12 only when the input has 8-bit integer tensors they code
// so, else 11 only when it has tensors they code as records
// (quantised tensors of ggml's block types), else 10 only when a probe of
// the input finds opaque bytes that may be coded so, else 9 only when it finds repeated values in its
// float tensors, else 8 only when it finds exact zeros, so that other
// models stay readable by version-7 readers; version 7's
// index records each file's digest kind, see
// Digests; versions 1 to 6 hold SHA-256s and were written before: 3
// without a reference, 6 with one, whose difference blocks may use
// methods 3 and 4, see "Difference blocks in value order", and method 2,
// see "Range-coded difference blocks"; version 5 archives, written before
// method 4, may hold methods 2 and 3, version 4 ones method 2 but not 3,
// and readers refuse a method newer than the archive's version; the
// layout of versions 3 to 6 is the same; readers also read 1 and 2), u16
// flags, u32 zero. Flag bit 0
// (value 1) marks an archive coded against a reference (see References);
// a reader rejects any other flag. Archives without a reference have flags
// 0 and are unchanged by the reference feature.
//
// Payload: the payloads of all blocks of all files, back to back in index
// order, with nothing between them.
//
// Index: one zstd frame holding the raw index below.
//
// Trailer, 32 bytes at the end of the archive: u64 index offset, u64 index
// length (so offset+length+32 equals the archive size), u32 raw index
// length, u32 CRC-32C (Castagnoli) of the index bytes as stored, and the
// magic "NZIPEND\x00". The raw index is at most 2^30 bytes, and at most
// 2^22 + 4 × (the archive size) bytes: readers refuse larger ones.
//
// Raw index:
//
//	uvarint chunk      float values per chunk the writer used (informative)
//	u8      setup      (version 2 and later) 0 none, 1 embedded, 2 external
//	uvarint len, len bytes  (setup 1) the setup file (see Setups); its ID is
//	                   the first 16 bytes of the SHA-256 of these bytes
//	[16]byte id        (setup 2) the ID of the setup the reader must supply
//	uvarint refs       (flag 1 only) reference files, then per reference file:
//	  string  name     its name when the archive was written (informative)
//	  uvarint size     its size in bytes
//	  [32]byte sha256  its SHA-256: the reader must supply a file with this
//	                   size and hash (its name may differ)
//	uvarint files
//	per file:
//	  string  name     file name (multi-file models keep their file names)
//	  uvarint size     original size in bytes
//	  u8      digest   (version 7) the digest's kind: 1 BLAKE3, 2 SHA-256;
//	                   readers refuse any other (see Digests)
//	  [32]byte sum     the digest of the original file (before version 7:
//	                   its SHA-256)
//	  string  format   loader's format name ("safetensors", "gguf", "unknown", ...)
//	  uvarint blocks
//	  per block:
//	    u8      kind   0 stored, 1 zstd, 2 float, 3 reference (flag 1 only),
//	                   4 duplicate (version 3 and later), 5 cm (version 10),
//	                   6 records (version 11), 7 repeat (version 13)
//	    u8      dtype  (kinds 2 and 3) dtype of the values, numbered as in
//	                   package dtype; for kind 3 also 0 (no type: a copy)
//	    uvarint length original bytes of the block
//	    uvarint clen   payload bytes of the block
//	    u32     crc    CRC-32C of the original bytes of the block
//	    uvarint ref    (kind 3) the reference file, an index into refs
//	    uvarint refoff (kind 3) where the block's counterpart starts in it;
//	                   refoff+length must not exceed the file's size
//	    uvarint sfile  (kind 4) the file of the block it repeats: this file
//	                   or an earlier one (index in the file list)
//	    uvarint sblock (kind 4) that block's index in its file: an earlier
//	                   block of this file, or any block of an earlier file;
//	                   not itself of kind 4, of the same length; clen is 0
//	  uvarint tensors
//	  per tensor (in file order):
//	    uvarint prefix  bytes shared with the previous tensor's name
//	    string  suffix  the rest of the name
//	    u8      dtype   (0 = none of package dtype's types; then:)
//	    string  type    (dtype 0 only) the format's own type name, e.g. "Q4_K"
//	    uvarint rank, rank × uvarint dims
//	    varint  offset  relative to the previous tensor's end (first: to 0)
//	    uvarint length
//
// Blocks cover their file in order: a block's original offset is the sum of
// the lengths before it, and its payload offset is 16 plus the sum of all
// earlier clen (across files). A reader checks that the lengths add up to
// each file's size and the clen to the payload size. The tensor list is for
// listing and random access only; decoding a file needs just the blocks.
// The tensor names of all files total at most 8 × (the decoded index's
// length) + 2^20 bytes, so a short index cannot describe huge names through
// their prefixes; a writer whose names would exceed that stores every name
// whole (prefix 0).
//
// # Blocks
//
// Kind 0 (stored): the payload is the original bytes.
//
// Kind 4 (duplicate): no payload; the block's original bytes are those of
// the source block named in the index (decode that block; the CRC-32C
// must match this block's). Writers use it for blocks whose bytes repeat
// an earlier block's exactly (ONNX initializers shared by subgraphs,
// repeated headers of multi-file models).
//
// Kind 1 (zstd): the payload is one zstd frame that decodes to the block.
// Writers also use it for float tensors whose values repeat (an STFT
// basis, a filterbank): a block of the whole tensor, of at most 2^22 bytes
// (the longest block readers accept), where it codes smaller than the
// tensor's float blocks.
//
// Kind 5 (cm, version 10): the payload codes the block's bytes one bit at
// a time with adaptive models (see "Context-modelled blocks").
//
// Kind 6 (records, version 11; the one-byte layout of 8-bit integer
// tensors, version 12): the block is a run of fixed-size records of one
// of ggml's block types, coded as one stream per field (see "Records
// blocks").
//
// Kind 7 (repeat, version 13): the block is a tensor of rows of 16- or
// 32-bit floats whose words are coded as copies of words in other rows or
// mirrored in the row, and literals (see "Repeat blocks").
//
// Kind 2 (float): the block is length/size values of the dtype. The payload
// starts with a form byte.
//
// Kind 3 (reference): the block's counterpart R is the length bytes at
// refoff of reference file ref. With clen 0 the block is a copy of R. With
// clen > 0 the dtype must be one of the fields types (F16, BF16, F32,
// F8_E4M3, F8_E5M2, F8_E8M0), length a multiple of its size, and the
// payload a difference block (see References) of the block's values
// against the values of R.
//
// Form 2 (sparse, version 8): see "Sparse blocks".
//
// Form 1 (byte planes, used for F64 and for blocks whose planes zstd codes,
// version 9): one stream (below) of width 8 per byte
// of the value, byte 0 (least significant) first; value i byte p is symbol i
// of stream p.
//
// Form 0 (fields): for a dtype with S sign bits (0 or 1), E exponent bits and
// M mantissa bits (F16 1/5/10, BF16 1/8/7, F32 1/8/23, F8_E4M3 1/4/3,
// F8_E5M2 1/5/2, F8_E8M0 0/8/0), each value v splits into
//
//	e = v>>M & (2^E-1)                       exponent
//	R = (v>>(M+E))<<M | v & (2^M-1)          residual: sign and mantissa, W = S+M bits
//
// The payload continues with u8 j and u8 z (j ≤ min(8-E, W), z ≤ W-j), then a
// symbol stream of width E+j whose symbol i is e<<j | R>>(W-j) (the exponent
// joined with the top j residual bits), then the remaining W-j-z residual
// bits of each value, (R & (2^(W-j)-1)) >> z, as byte planes: plane p holds
// bits 8p..8p+7 and has width min(8, W-j-z-8p). The z dropped low bits are
// zero in every value of the block. No bytes may follow the last stream.
// To decode, R = (s & (2^j-1))<<(W-j) | rest<<z, e = s>>j, and
// v = (R>>M)<<(M+E) | e<<M | R & (2^M-1).
//
// # Sparse blocks
//
// A float block of a fields type of at most 4 bytes (F16, BF16, F32,
// F8_E4M3, F8_E5M2, F8_E8M0) may be sparse (form 2, archives of version 8):
// its zero mask (bit i is 1 when value i is not the all-zero bit pattern;
// -0 is a nonzero value) and the nonzero values in order. With n values:
//
//	u8 form     2
//	u8 flags    bit 0: the sign is dropped (the dtype has a sign bit, every
//	            nonzero value has it 0, and it is not coded); other bits 0
//	u8 method   the mask's coding:
//	  0 bitmap  a stream (see Streams; modes 0 to 3) of ceil(n/8) symbols
//	            of width 8: bit i%8 (LSB first) of symbol i/8 is mask bit
//	            i; the bits past n must be 0
//	  1 gaps    uvarint k (≤ n), a stream of k symbols of width 8 (modes 0
//	            to 3): from position 0, a symbol 255 skips 255 zeros; a
//	            symbol g < 255 skips g zeros and marks the value after
//	            them nonzero; positions left after the last symbol are
//	            zeros; no nonzero value may lie at or past n, no skip past n
//	  2 columns uvarint L (row length, 1..min(max(n, 1), 65536)), uvarint c (the column of
//	            value 0, < L), uvarint len, len bytes of range-coded bits
//	            (below)
//	values      only when the mask has m > 0 nonzero values: u8 j, u8 z
//	            and the streams of a fields-form block (Form 0) of the m
//	            nonzero values, for the dtype's S, E and M, except S = 0
//	            when the sign is dropped (then v = e<<M | mantissa); no
//	            value may be 0, and no bytes may follow the last stream
//
// Columns: value i lies in column c_i = (c + i) mod L, and l_i is the mask
// bit of value i-1 when i > 0 and c_i > 0, else 0. The bits are coded in
// order, each with the probability P of a 1 (times 2^16) from three count
// pairs that all start at 0 for the block: g (the block's), col[c] (the
// column's) and lft[c][l] (the column's after bit l), with integer floor
// division:
//
//	pg = (2·g1 + 1)·2^16 / (2·(g0 + g1) + 2)
//	p1 = (col[c]1·2^16 + 8·pg) / (col[c]0 + col[c]1 + 8)
//	P  = (lft[c][l]1·2^16 + 8·p1) / (lft[c][l]0 + lft[c][l]1 + 8), clamped
//	     to 32..65504
//
// After the bit b, each of the three pairs counts it (x_b += 1); a pair
// whose sum reaches its limit (8192 for g, 1024 for the others) becomes
// ((x0+1)/2, (x1+1)/2). The range coder is that of "Range-coded
// difference blocks" with P in place of a model's probability: B =
// floor(R / 2^16)·P, the bit is 1 when C < B; after the last bit the
// decoder must have read exactly the len bytes.
//
// # Streams
//
// A stream codes n symbols of width w (both known from the context). It
// starts with a mode byte:
//
//	0 packed  ceil(n·w/8) bytes, symbol i at bits i·w.. (LSB first)
//	1 const   one byte: every symbol
//	2 huff1   uvarint L, then L bytes: a huff0 block, 1 stream
//	3 huff4   uvarint L, then L bytes: a huff0 block, 4 streams
//	4 pair1   pairs (below), codes in a 1-stream huff0 block
//	5 pair4   pairs, codes in a 4-stream huff0 block
//	6 shared1 a table of the archive's setup (below), 1 stream
//	7 shared4 a table of the archive's setup, 4 streams
//	8 zstd    uvarint L, then L bytes: one zstd frame (RFC 8878) that
//	          decodes to exactly n bytes, symbol i in byte i (version 9)
//
// Modes 4 to 7 occur only in the symbol stream of a fields-form block,
// never in planes or exception streams. Mode 8 occurs only in archives of
// version 9, never in exception streams; writers use it in planes-form
// blocks (a float block whose values repeat, such as an STFT basis, whose
// byte planes zstd codes smaller than the float coder codes the block).
//
// A huff0 block is the Huffman-coded literals format of zstd (RFC 8878,
// section 4.2.1 and 4.2.2 on Huffman tree description and streams), as
// github.com/klauspost/compress/huff0 reads it: the tree description (a
// header byte, then FSE-compressed or 4-bit direct weights), then for 1
// stream the bit stream, for 4 streams a jump table of three u16 sizes and
// four bit streams of ceil(n/4), ceil(n/4), ceil(n/4) and the remaining
// symbols. Code lengths are at most 11 bits.
//
// Pair modes code the floor(n/2) pairs (s[2i], s[2i+1]) as one code each:
//
//	u8 k             1..15
//	k bytes t        symbols
//	uvarint L, L bytes huff0 block of floor(n/2) codes
//	uvarint x        exception symbols
//	stream           x symbols of width w (modes 0..3 only)
//
// Code c < k·k is the pair (t[c/k], t[c%k]); code k·k is an escape: the
// pair's two symbols are the next two exception symbols. A last odd symbol
// is the last exception. Codes above k·k are invalid, and the exceptions
// must be used up exactly.
//
// Shared modes code the symbols with a table of the archive's setup: the
// setup section of the block's dtype (whose join must equal the block's j):
//
//	uvarint t        table index in the section
//	varint  d        alignment shift (0 when the section's join is not 0)
//	u8      kind     0 singles code, 1 pairs code (the table must have one)
//	uvarint L, L bytes huff0 streams without a table description (the
//	                 decoder builds the table from the setup's code
//	                 lengths): 1 stream (mode 6), or the jump table and 4
//	                 streams (mode 7), of n codes (singles) or floor(n/2)
//	                 codes (pairs)
//	uvarint x        exception symbols
//	stream           x symbols of width w (modes 0..3)
//
// Alignment rotates the symbols 1..2^w-2 of width w by d, leaving 0 and
// 2^w-1 in place: aligned(s) = 1 + (s-1-d) mod (2^w-2). A singles code's
// huff0 symbol is the aligned symbol itself, except the escape, which is
// the smallest byte value not in the table's alphabet and stands for the
// next exception. A pairs code a*k+b stands for the two symbols whose
// aligned values are PairTop[a] and PairTop[b]; code k*k is the escape (the
// next two exceptions). A last odd symbol of a pairs stream is the last
// exception. Exceptions are the symbols themselves, not aligned.
//
// # Setups
//
// A setup file (.nzsetup) holds the shared tables:
//
//	[8]byte magic 89 4E 5A 53 45 54 0D 0A ("\x89NZSET\r\n")
//	u16 version (2; 3 where the setup chooses programs; 4 where it has a
//	  search prior; 1 is read too), u16 flags (0), u32 payload length
//	payload:
//	  uvarint chunk, string builder
//	  uvarint sources; per source: string name, uvarint size, [32]byte
//	    SHA-256, string format
//	  uvarint sections; per section:
//	    u8 dtype, u8 join, (version 2 only:) u8 c, c plane cuts (u8 each;
//	    version 1: none), uvarint tables; per table:
//	      u8 a, a bytes alphabet (increasing), a+1 code lengths as 4-bit
//	        nibbles (high nibble first; the escape's last)
//	      u8 k (0 = no pairs), k bytes pair symbols, k*k+1 nibbles of pair
//	        code lengths (0 = no code; the escape's last)
//	      uvarint sample chunks, uvarint c, c × (u8 symbol, uvarint count):
//	        the cluster's aligned histogram (informative)
//	  (version 3 and later:) uvarint programs; per program: string tensor
//	    name, u8 program (1 fields, 2 fields-own, 3 sparse, 4 planes,
//	    5 zstd-planes, 6 zstd, 7 raw, 8 cm, 9 records; codec.Program);
//	    names are distinct
//	  (version 4:) the search prior: uvarint n (1..16384); n entries, each
//	    u8 dtype (255: records and byte tensors), u8 shape class (rank
//	    1/2/3/4+ → 0..3, times 4, plus size < 2^12, 2^16, 2^20 values or
//	    more → 0..3), uvarint parent, uvarint choice (≠ 0), uvarint count
//	    (1..2^24); a choice is 1 + the program plus 256 × a zstd level (0:
//	    the archive's); parent 0 is the root; entries sorted by dtype,
//	    class, parent, choice, each pair once; uvarints in their shortest
//	    form
//	u32 CRC-32C of everything before it
//
// A setup's programs guide the encoder only: each names a tensor whose
// blocks are coded with that program (every one a coding the format
// already has) instead of the encoder's choice; a program that does not
// apply to the tensor is ignored. Decoding does not use them. A setup of
// programs only may have no sections. The search prior (package
// codec/search) counts the programs that won the search on the tensors
// the setup was built from; it orders the encoder's search
// (EncodeOptions.Search) and is not used by decoding either.
//
// Plane cut p (when not 0) guides the encoder for residual plane p of the
// section's blocks: the plane is stored packed (mode 0) without trying an
// entropy code when the order-0 entropy of its sample (every 16th value of
// planes of 8192 values or more, else all) is at least cut/256 of its
// width; 0 keeps the default, 0.985. Decoding reads each plane's mode as
// always and does not use the cuts. More cuts than the dtype has planes
// (for the section's join and no dropped bits) are an error.
//
// Code lengths are at most 11 and must form a complete prefix code (Kraft
// sum exactly 1) including the escape; codes are canonical as in huff0 (see
// the huff0 table description). A reader rejects sections for a dtype
// twice, joins above the dtype's maximum and alphabets wider than the
// symbol width.
//
// # References
//
// An archive may be coded against a reference model (the previous
// checkpoint of a training run, the base model of a fine-tune; "ULPack").
// The encoder matches the archive's tensors with the reference's by name,
// dtype and shape (the reference's layout serves only the encoder; the
// index stores where each block's counterpart is), and codes each block of
// a matched tensor as the smallest of: a copy (kind 3, clen 0) when the
// bytes are equal, the independent coding (kinds 0 to 2), or a difference
// block (kind 3). Other blocks (opaque bytes, non-float tensors) are
// stored as copies when the bytes at the same offset of the reference file
// of the same name (or of the only one, when both sides have one file) are
// equal. So an archive is never larger than its independent coding by more
// than the kind-3 index fields and the reference list. A reader must be given the reference files (by
// SHA-256) before it decodes a kind-3 block, and reports a missing or
// wrong reference before it writes anything.
//
// A difference block codes n = length/size values v_i against the
// reference values r_i (size = B/8 bytes, little-endian; S sign bits, E
// exponent bits, M mantissa bits as for the fields form). Values map to
// order-preserving keys: for S = 1, key(x) = x XOR 2^(B-1) when the sign
// bit of x is 0 and x XOR (2^B-1) when it is 1; for S = 0, key(x) = x.
// The difference d_i = key(v_i) - key(r_i) mod 2^B is the distance in units
// in the last place. Its magnitude a (d as a signed B-bit number; -2^(B-1)
// has magnitude 2^(B-1) and sign 1) and sign s (1 when negative) become a
// token and extra bits with q sub-bucket bits:
//
//	a = 0:          token 0, no extra bits
//	0 < a < 2^(q+1): bucket k = a, no extra bits
//	otherwise:      L = bit length of a, bucket k = (L-q)·2^q + the q bits
//	                of a below its leading one, extra bits: the low L-1-q
//	                bits of a
//	token = 2k - 1 + (s XOR z)  (for a > 0)
//
// where z is the sign bit of r_i (0 when S = 0): s XOR z says whether the
// magnitude moves away from zero (0) or towards it (1), which weight decay
// makes the frequent case for either sign. The largest valid
// token is T = 2·((B-q+1)·2^q - 1), which must be below 256; tokens are
// symbols of width t = the bit length of T. The context of value i is the
// exponent field of its reference value, c_i = e(r_i), 0 ≤ c < 2^E (the
// size of a unit in the last place depends on it). The payload is
//
//	u8 method          1
//	u8 q               sub-bucket bits (the encoder uses 3 for B ≤ 16, 2 for B = 32)
//	u8 G               groups, 1..255
//	uvarint m          contexts with a group of their own (m < G)
//	m × (uvarint δ, u8 g)  context c = previous c + 1 + δ (the first: δ),
//	                   strictly increasing, in group g (1 ≤ g < G); every
//	                   other context is in group 0
//	G streams          stream g (see Streams; modes 0 to 5) codes the
//	                   tokens of the values whose context is in group g, in
//	                   value order; its symbol count is the number of such
//	                   values (known from the reference), its width t
//	uvarint X, X bytes extra bits of the values in value order, each value's
//	                   LSB first, packed LSB first; X = ceil(total bits/8)
//	                   (encoders pad the last byte with zero bits; readers
//	                   ignore the padding)
//
// To decode, the reader counts the values per group from the reference,
// decodes the streams, and for each value i takes the next token of its
// group, rebuilds a (for bucket k ≥ 2^(q+1): L = floor(k/2^q) + q,
// a = (2^q + (k mod 2^q))·2^(L-1-q) + extra) from k = floor((token+1)/2),
// s = ((token+1) mod 2) XOR z and d = a (s = 0) or -a (s = 1), and sets
// v_i = key⁻¹(key(r_i) + d mod 2^B), where for S = 1 key⁻¹(k) is
// k XOR 2^(B-1) when the top bit of k is 1 and k XOR (2^B-1) otherwise.
// Tokens above T are invalid.
//
// # Difference blocks in value order
//
// Method 3 codes the same tokens, groups and extra bits as method 1, but
// keeps the tokens in value order, each coded with the table of its
// value's group; the reader needs neither the groups' counts nor to put
// tokens back in order, and takes eight streams at once (archives of
// version 5 may hold it; the encoder writes it unless method 1 is
// smaller by more than 1/64). The payload is
//
//	u8 method          3
//	u8 q, u8 G, uvarint m, m × (uvarint δ, u8 g)
//	                   as for method 1
//	G tables           group g's Huffman code: a huff0 table description
//	                   (as in Streams; every symbol it describes must be a
//	                   valid token), or u8 0, u8 token: the group's only
//	                   token, with a code of length 0
//	S × uvarint L_k    the sizes of the S streams (S = 8, or 1 when
//	                   n < 512), each at least 1 byte
//	S streams          stream k codes the tokens of values k, k+S, k+2S,
//	                   ... below n, in a huff0 bit stream (last token
//	                   first, then a 1 end bit; the reader takes the first
//	                   token from the top), each token with the code of its
//	                   value's group; a stream must end exactly with its
//	                   bits
//	uvarint X, X bytes extra bits, as for method 1
//
// Method 4 (archives of version 6; what the encoder writes where it wrote
// method 3; the encoder limits its codes to 10 bits, which decode faster,
// but a reader takes any length the description allows) is method 3 with
// u8 method 4 and each of the G tables as one of
//
//	u8 0, u8 token     the group's only token, as in method 3
//	u8 255, huff0 table description
//	                   as in method 3
//	u8 count (1..254), bits
//	                   a compact description (below)
//
// A compact description gives the code lengths l_0 .. l_(count-1) of the
// tokens 0 .. count-1 (0: absent), each 1..11 when present; the token
// count must be present, with the length that makes the code complete
// (Kraft sum 1), and the code must meet huff0's rules (as a huff0
// description would: at least two longest codes, an even number of them).
// The lengths are read from a bit string, LSB first within each byte, the
// last byte padded with zero bits (which readers ignore). So the lengths
// given must leave token count a length of 1..11: their Kraft sum is at
// least 1/2 and below 1. For token s, with a = l_(s-2) and b =
// l_(s-1) (0 before token 0):
//
//   - a = b = 0: r zero lengths, then, if tokens remain, one length of 4
//     bits (1..11). r + 1 is written in Elias gamma: k one bits, a zero
//     bit, then the k bits of r + 1 below its top bit, LSB first (k ≤ 8);
//     the r zeros must not pass token count-1.
//   - a = 0, b > 0: a flag bit; 0: l_s = 0; 1: l_s = b + D, D from the
//     delta code below (whose "absent" is then invalid).
//   - a > 0: l_s = a + D, from the delta code.
//
// The delta code: 0 → D = 0; 1 0 s → D = +1 (s = 0) or -1; 1 1 0 s → D =
// +2 or -2; 1 1 1 0 → the token is absent (l_s = 0); 1 1 1 1 v (4 bits)
// → l_s = v (1..11). A length outside 1..11 is an error.
//
// # Range-coded difference blocks
//
// A difference block may also use method 2 (encoders write it only when
// asked, EncodeOptions.Best, and when it is smaller; such archives are of
// version 4 to 6): the same tokens and extra
// bits, but range-coded with adaptive binary models instead of Huffman
// tables by group. The payload is
//
//	u8 method          2
//	u8 q               sub-bucket bits, as for method 1
//	uvarint L, L bytes the range-coded decisions (below)
//	the rest           the raw extra bits: for each value with an extra-bit
//	                   count x ≥ 2, in value order, its low x-1 extra bits,
//	                   LSB first, packed LSB first into bytes; the last byte
//	                   is padded with zero bits (readers ignore them) and
//	                   no byte follows it
//
// For each value i in order, with context c = e(r_i), the decoder reads
// the 8 bits of its token, most significant first, each with the model
// tree[c][node] where node starts at 1 and becomes 2·node + bit after each
// bit (the token is node - 256 at the end); then, when the token's bucket
// k = floor((token+1)/2) has x ≥ 1 extra bits (k ≥ 2^(q+1),
// x = floor(k/2^q) - 1), the top extra bit with the model top[k]; the
// other x-1 extra bits come from the raw stream. Values and signs follow
// as for method 1. All models start at probability 1/2 and count 0 at the
// start of the block.
//
// A model holds p, the probability of a 1 bit times 2^16, and a count n.
// After a bit b it becomes p + floor((b·2^16 - p)·w(n) / 2^16), clamped to
// 32..65504, with w(n) = floor(655360 / (10n + 18)), and n becomes
// min(n + 1, 127): the first bits move p about 1/(n + 1.8) of the way (a
// Krichevsky–Trofimov estimate), later ones 1/130, so a model follows
// statistics that drift along the block.
//
// The decisions are coded as by LZMA's range coder with 16-bit
// probabilities. The decoder starts with range R = 2^32 - 1 and code C =
// the big-endian uint32 of the stream's bytes 1 to 4 (byte 0 must be 0).
// Per decision with model probability p: B = floor(R / 2^16)·p; if C < B
// the bit is 1 and R = B, otherwise it is 0, C = C - B and R = R - B; then
// while R < 2^24: R = R·2^8 and C = C·2^8 + the next byte. After the last
// value the decoder must have read exactly the L bytes; the encoder (low
// L, cache byte and pending count as in LZMA) flushes with five shifts.
//
// # Context-modelled blocks
//
// A block of kind 5 (version 10; writers use it, when asked for the
// smallest archive (EncodeOptions.Best), for opaque bytes that zstd
// shrinks by less than half and that it codes smaller, such as quantised
// 8-bit weights) is a range-coded stream, with the models, model update
// and range coder of "Range-coded difference blocks", that must decode to
// exactly the block's length bytes and end where the payload does. Each
// byte is 8 decisions, most significant bit first; node starts at 1 and
// becomes 2·node + bit after each bit. The model of a decision is
// plain[node], or matched[k][b][node] while a match predicts the byte
// and its bits so far agree with the predicted byte's (b is the predicted
// bit; from the first bit that differs on, plain[node]). All models start
// at probability 1/2 and count 0 at the start of the block.
//
// The match model: H is a table of 2^16 positions, all 0 at the start of
// the block; a match has a length n (0: none) and a position q. Before
// byte i is decoded (i counted from 0 in the block), a match with n > 0
// predicts the byte at q, with length class k = 0 for n < 12, 1 for
// n < 16, 2 for n < 32, 3 otherwise. After byte i (value c): if n > 0
// and the byte at q was c, n and q grow by 1, otherwise n = 0. If i ≥ 5,
// let h be the 48-bit number of bytes i-5 … i (byte i lowest) and
// j = floor((h · 0x9E3779B97F4A7C15 mod 2^64) / 2^48); if n = 0 and
// H[j] = p > 1, the match candidate is position p-1: l is the number of
// positions t = 0, 1, … (at most 32) for which the bytes at p-2-t and
// i-t exist and are equal, and if l ≥ 6 then n = l and q = p-1. Then
// H[j] = i+2.
//
// # Records blocks
//
// A block of kind 6 (version 11; writers use it for the quantised tensors
// of GGUF files, a tensor segment whose type is one of the ggml names
// below and whose length is a whole number of its records; version 12
// adds type 24, which writers use for tensors of 8-bit integer dtypes, U8
// and I8, of at least 4096 bytes: TF.js uint8 weights, ONNX and TFLite
// int8) holds n =
// length/B records of B bytes of one layout. Each record splits into
// fields; a field has a width w (1..8) and P symbols per record. The
// payload is
//
//	u8 type      the layout, by ggml_type number (below); length must be
//	             a multiple of its B
//	streams      one per field, in the layout's order, each a stream (see
//	             Streams; modes 0 to 3 only) of n·P symbols of width w:
//	             the field's symbols of record 0, then record 1, ...
//
// and no bytes may follow the last stream. Fields are read from a record
// as follows (byte offsets into the record; "f16 at o" is two fields of
// P = 1 and w = 8, its high byte o+1 (.hi) then its low byte o (.lo);
// "bytes o..o+k" is one field of P = k, w = 8, the bytes as they are):
//
//	type name    B    fields
//	2    Q4_0    18   f16 at 0 (d); bytes 2..18
//	3    Q4_1    20   f16 at 0 (d); f16 at 2 (m); bytes 4..20
//	6    Q5_0    22   f16 at 0 (d); q5 with qh at 2, qs at 6
//	7    Q5_1    24   f16 at 0 (d); f16 at 2 (m); q5 with qh at 4, qs at 8
//	8    Q8_0    34   f16 at 0 (d); bytes 2..34
//	10   Q2_K    84   bytes 0..16; bytes 16..80; f16 at 80 (d); f16 at 82 (dmin)
//	11   Q3_K    110  q3 with hmask at 0, qs at 32; s3 at 96; f16 at 108 (d)
//	12   Q4_K    144  f16 at 0 (d); f16 at 2 (dmin); sm at 4; bytes 16..144
//	13   Q5_K    176  f16 at 0 (d); f16 at 2 (dmin); sm at 4; q5k with qh at 16, qs at 48
//	14   Q6_K    210  q6 with ql at 0, qh at 128; bytes 192..208; f16 at 208 (d)
//	20   IQ4_NL  18   f16 at 0 (d); bytes 2..18
//	24   I8      1    bytes 0..1
//
// with, for a field symbol q_i (i counted from 0 within the record) and
// bit b of byte x written x_b:
//
//   - q5 (P = 32, w = 5): h = the u32 at qh; for j < 16, q_j = qs[j] & 15
//     | h_j·16 and q_(j+16) = qs[j] >> 4 | h_(j+16)·16.
//   - q5k (P = 256, w = 5): for c < 4 and l < 32, q_(64c+l) =
//     qs[32c+l] & 15 | qh[l]_(2c)·16 and q_(64c+32+l) = qs[32c+l] >> 4 |
//     qh[l]_(2c+1)·16.
//   - q6 (P = 256, w = 6): for h < 2 and l < 32, with a = ql[64h+l], b =
//     ql[64h+32+l], c = qh[32h+l]: q_(128h+l) = a & 15 | (c & 3)·16,
//     q_(128h+32+l) = b & 15 | (c >> 2 & 3)·16, q_(128h+64+l) = a >> 4 |
//     (c >> 4 & 3)·16, q_(128h+96+l) = b >> 4 | (c >> 6)·16.
//   - q3 (P = 128, w = 6): the 3-bit values v_(128h+32j+l) = (qs[32h+l] >>
//     2j & 3) | hmask[l]_(4h+j)·4 (h < 2, j < 4, l < 32), two to a
//     symbol: q_i = v_(2i) | v_(2i+1)·8.
//   - s3 (P = 16, w = 6), from 12 bytes s: for i < 8, q_i = s[i] & 15 |
//     (s[8+i%4] >> 2(i/4) & 3)·16 and q_(i+8) = s[i] >> 4 | (s[8+i%4] >>
//     2(i/4+2) & 3)·16.
//   - sm (two fields of P = 8, w = 6: scales, then mins), from 12 bytes s:
//     for j < 4, scale_j = s[j] & 63, min_j = s[j+4] & 63, scale_(j+4) =
//     s[j+8] & 15 | (s[j] >> 6)·16, min_(j+4) = s[j+8] >> 4 | (s[j+4] >>
//     6)·16.
//
// Every bit of a record lies in exactly one field symbol, so these maps
// are bijections: the decoder writes each record's bytes back from its
// symbols (the inverse maps) and any bytes round-trip. The layouts follow
// ggml's block_* structs (ggml-common.h) and dequantisation (which bits
// form one quant or one sub-block scale); other ggml types (Q8_1, IQ2_*,
// …) are not records blocks.
//
// # Repeat blocks
//
// A block of kind 7 (version 13; writers use it for whole float tensors,
// of at most 2^22 bytes, whose words repeat exactly or with the sign bit
// flipped at the same column of other rows and at the mirrored column:
// the windowed DFT and DCT bases of audio front ends) holds n = length/w
// words of w bytes (little-endian) in rows of C words. The payload is
//
//	u8      dtype   10 F16, 11 BF16 or 12 F32 (package dtype's numbers):
//	                w = 2, 2 or 4; length must be a multiple of w
//	uvarint C       the row length, 1 ≤ C ≤ n, C divides n; R = n/C rows
//	uvarint L       literals, L ≤ n
//	uvarint S       bytes of the symbol stream
//	[S]byte         the symbol stream: range-coded decisions (below)
//	literals        where L > 0, a float block (kind 2's payload) of L
//	                values of dtype; where L = 0, nothing
//
// The literals are decoded first, into the list lit[0..L). The symbol
// stream is coded with the binary range coder and model update of
// "Range-coded difference blocks" (package codec/rangecoder), started as
// by FinishShort: the stream's implied first zero byte omitted, and up
// to 4 bytes past its end read as zeros (reading more is an error). Every
// model below starts at probability 1/2 once per block. Raw bits are
// decisions of fixed probability 1/2 (EncodeP(32768)). A gamma code of
// x ≥ 1 with models g[0..32) is: k = bit length of x minus 1 as k
// decisions 1 with models g[0..k) and a 0 with g[k] (none where k = 31),
// then the k bits of x below its top bit, most significant first, raw.
//
// Rows r = 0..R−1 are decoded in order, each as its sources, then its
// words c = 0..C−1 in order. A source is (row s, kind t); it gives column
// c the word at row s, column c' with: t = 0 (same column) c' = c; t = 1
// (mirror) c' = C−c, none for c = 0; t = 2 (mirror about C−1) c' =
// C−1−c. Kind 0 needs s < r; kinds 1 and 2 need s ≤ r, and where s = r a
// source gives only columns with c' < c (already decoded: c > C/2 for
// kind 1, c > (C−1)/2 for kind 2, integer division). A row's sources:
//
//	m = count of decisions 1, at most 4, with model count[j][p] for the
//	    j-th (p: 1 if the previous row had more than j sources); a 0 ends
//	    it before 4
//	per slot j < m: where the previous row had a slot j with source
//	    (s', t') and the prediction P = (s' + step_j, t') is valid for
//	    this row (0 ≤ s'+step_j, and the rules above), a decision with
//	    model same[j]: 1 means slot j is P. Otherwise (0, or no valid
//	    prediction): t as two decisions, t>>1 with kind[j][1] and t&1
//	    with kind[j][2+(t>>1)] (t = 3 is an error); then a gamma code
//	    with models gamma[j][t == 0] of x = r−s+1 for t ≠ 0 and x = r−s
//	    for t = 0; s < 0 or a source the rules refuse is an error.
//
// After each row, for each of its slots j, step_j = s_j − s'_j where the
// row before it had a slot j of the same kind (s'_j its row), else 1.
// Then each word of the row:
//
//	A = the symbols at c−1 (0 for c = 0), b = 1 if the symbol at c−2 is a
//	source's (1..4), u = 1 if the symbol at column c of the previous row is
//	a source's (0 in row 0): symbols are 0 literal, 1+j source slot j,
//	5 an earlier literal's magnitude.
//	Where some slots give column c (available), a decision with model
//	match[A][b][u]: 1 means a source gives the word. Its slot is the
//	first available slot j (in slot order) with a decision 1 of model
//	which[j][A == j+1][symbol above == j+1], the last available slot
//	implied; then a decision f with model sign[j][p1][p2][c&1] (p1: the
//	flip bit of column c−1 if its symbol is 1+j, else 2; p2 the same of
//	column c−2): the word is the source's word XOR f·2^(8w−1) (the
//	sign bit, on bits: any word round-trips, NaN payloads, −0).
//	Otherwise, where at least one literal was read before in the block,
//	a decision with model dict[A][d] (d: 1 if the last such decision of
//	the block was 1): 1 means the word is an earlier literal's magnitude:
//	a gamma code of x with models dgam (1 ≤ x ≤ literals read so far;
//	else an error), then a decision f with model dsign[c&1]: the word is
//	lit[i−x] with its sign bit replaced by f, i the literals read so far
//	(symbol 5). Otherwise the word is lit[i] and i grows by one (symbol
//	0); after a literal read with i > 0 before it, d becomes 0.
//
// At the end all L literals must have been read. The encoder's choice of
// sources (a greedy cover of the row's words by the candidate sources a
// hash of (column, magnitude) names), of the first matching slot and of
// an earlier magnitude are its own.
//
// # Digests
//
// Every file's digest is of its original bytes whole. Kind 1 is BLAKE3
// (hash mode, no key) with its default 32 bytes of output, as b3sum
// prints it; writers store it unless asked for kind 2, SHA-256 (FIPS
// 180-4), which is what versions 1 to 6 hold. The digest does not depend
// on how a writer computed it; this package computes BLAKE3 in parallel,
// from BLAKE3's tree: the file's 1 KiB chunks (chunk i hashed with
// counter i) are the leaves of a binary tree whose left subtrees are
// complete, so every run of 2^k chunks that starts at a multiple of 2^k
// chunks, other than the whole file, is a subtree whose chaining value
// depends on its bytes and position only. Each worker computes the
// chaining values of the aligned runs of 16 KiB groups that lie whole in
// the bytes it coded (or decoded), as few and as large as alignment
// allows; the writer merges them in file order with BLAKE3's parent rule
// (as BLAKE3's incremental hasher merges its stack of subtrees: lazily,
// the last merge with the ROOT flag) and hashes itself the groups that
// span two workers' ranges and the file's last group. A file of at most
// 16 KiB is hashed whole.
//
// # Integrity
//
// Every block carries the CRC-32C of its original bytes and every file its
// digest (see Digests); the index carries its own CRC-32C. Readers check every length
// against the archive before allocating and report damage as a
// CorruptError naming the archive offset (the offset in the file that
// holds the archive, for NewSectionReader), the file, the block and the
// block's original offset.
package codec
