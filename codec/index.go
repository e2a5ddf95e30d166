package codec

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"

	"neuralzip/dtype"
)

// Container constants (see doc.go).
const (
	// Version is the newest archive format version, which this package
	// reads with every older one. Version 13 adds repeat blocks (kind 7,
	// repeat.go), written for inputs with a float tensor whose words recur
	// across rows or mirrored to the writer's probe (repeatProbe).
	// Version 12 adds the one-byte records
	// layout of 8-bit integer tensors (records.go, byteRecords). Version
	// 11 adds records blocks (kind 6). Version 10 adds cm blocks (kind 5,
	// cm.go), written for inputs whose opaque bytes may be coded so to
	// the writer's probe (probeOpaque). Version 9 adds zstd-coded streams
	// (mode 8, block.go's encodeLZPlanes); the writer writes it only for
	// inputs whose float tensors show repeated words to its probe
	// (probeBlocks). Version 8 adds sparse float blocks (form 2,
	// sparse.go), written for inputs whose float tensors show exact zeros
	// to the probe; version 7 otherwise. Version 7 records each file's digest kind (BLAKE3 unless
	// EncodeOptions.Digest asks for SHA-256); versions 1 to 6 hold SHA-256s.
	// Version 6 added method 4 of difference blocks (method 3 with
	// compact table descriptions), version 5 method 3 (tokens in value
	// order), version 4 method 2 (range-coded, with EncodeOptions.Best), so that
	// readers without those methods refuse an archive by its version
	// instead of failing at its first such block.
	Version = 13

	headerLen  = 16
	trailerLen = 32

	maxIndexRaw = 1 << 30 // decoded index size limit
)

// maxIndexRawFor is the largest raw index a reader accepts in an archive
// of archiveSize bytes. Real indexes are a fraction of their archive, but
// one of many empty or all-zero tensors compresses a thousandfold and more
// (100,000 empty tensors: 811 KB in 534 bytes), so any index up to 4 MiB
// passes. Beyond that the index may be at most four times the archive: a
// small archive cannot make a reader allocate more than ~100 MB for its
// index and the tensor, block and name lists decoded from it.
func maxIndexRawFor(archiveSize int64) int64 {
	return min(maxIndexRaw, indexRawFloor+4*archiveSize)
}

// indexRawFloor: indexes up to this size pass whatever the archive's
// size (a variable for tests).
var indexRawFloor int64 = 4 << 20

// Magic starts every archive; TrailerMagic ends it. LossyMagic starts
// the lossy archives of nzip quantize (package lossy), which this package
// never reads or writes: it is here so that a reader can name such a file
// (ErrLossy) instead of calling it damaged.
var (
	Magic        = [8]byte{0x89, 'N', 'Z', 'I', 'P', '\r', '\n', 0x1a}
	TrailerMagic = [8]byte{'N', 'Z', 'I', 'P', 'E', 'N', 'D', 0}
	LossyMagic   = [8]byte{0x89, 'N', 'Z', 'L', 'O', 'S', 'S', 'Y'}
)

// FileInfo describes one original file stored in an archive.
type FileInfo struct {
	Name string
	Size int64
	// Digest is the kind of the file's digest, Sum its value: what
	// decoding checks the file against (DigestSHA256 in archives of
	// versions 1 to 6).
	Digest Digest
	Sum    [32]byte
	// SHA256 is Sum when Digest is DigestSHA256, zero otherwise.
	SHA256  [32]byte
	Format  string // the loader's format name ("safetensors", "gguf", "unknown", ...)
	Tensors []TensorInfo
	blocks  []blockInfo
	// Compressed is the total payload size of the file's blocks.
	Compressed int64
}

// TensorInfo is a tensor of an original file as recorded in the index.
type TensorInfo struct {
	Name   string
	DType  dtype.DType
	Type   string // format's own type name when DType is Invalid
	Shape  []int64
	Offset int64 // in the original file
	Length int64
}

// blockInfo is one index entry.
type blockInfo struct {
	kind    byte
	dtype   dtype.DType
	origOff int64 // offset in the original file (derived)
	origLen int64
	compOff int64 // offset in the archive (derived)
	compLen int64
	crc     uint32
	ref     int   // kindRef: the reference file (index into indexData.refs); kindDup: the file of the source block
	refOff  int64 // kindRef: offset of the block's counterpart in it; kindDup: the source block's index in its file
}

// BlockInfo is the public view of one block, for inspection.
type BlockInfo struct {
	Kind       BlockKind
	DType      dtype.DType
	Offset     int64 // in the original file
	Length     int64
	Compressed int64
	Payload    int64  // where the payload starts in the archive (Compressed bytes)
	CRC        uint32 // CRC-32C of the block's original bytes
}

func kindName(k byte) string {
	switch k {
	case kindStored:
		return "stored"
	case kindZstd:
		return "zstd"
	case kindFloat:
		return "float"
	case kindRef:
		return "ref"
	case kindDup:
		return "duplicate"
	case kindCM:
		return "cm"
	case kindRecords:
		return "records"
	case kindRepeat:
		return "repeat"
	}
	return fmt.Sprintf("kind%d", k)
}

func (f *FileInfo) blockLen(b int) int64 { return f.blocks[b].origLen }

// Blocks lists the blocks of the file.
func (f *FileInfo) Blocks() []BlockInfo {
	out := make([]BlockInfo, len(f.blocks))
	for i, b := range f.blocks {
		out[i] = BlockInfo{Kind: BlockKind(b.kind), DType: b.dtype, Offset: b.origOff, Length: b.origLen, Compressed: b.compLen, Payload: b.compOff, CRC: b.crc}
	}
	return out
}

// indexData is the decoded index.
type indexData struct {
	version     int
	chunkValues int
	setupMode   byte      // setupNone, setupEmbedded, setupExternal
	setupID     [16]byte  // ID of the setup (embedded or external)
	setupRaw    []byte    // the embedded setup file
	flags       uint16    // header flags (flagRef)
	refs        []RefInfo // flagRef: the reference files
	files       []*FileInfo
}

// How an archive refers to its setup.
const (
	setupNone     = 0
	setupEmbedded = 1
	setupExternal = 2
)

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// maxNameBytes bounds the total length of the tensor names (of all files)
// in an index of rawLen bytes. Names share prefixes with the name before them,
// so without a bound a few kilobytes of index could describe gigabytes of
// names.
func maxNameBytes(rawLen int) int { return 8*rawLen + 1<<20 }

// marshal encodes the index (before zstd). Names are stored after the
// prefix they share with the previous name, unless that would take the
// index past maxNameBytes (names hundreds of bytes long that differ only
// at the end); such an index stores every name whole.
func (x *indexData) marshal() []byte {
	b := x.marshalNames(true)
	n := 0
	for _, f := range x.files {
		for _, t := range f.Tensors {
			n += len(t.Name)
		}
	}
	if n > maxNameBytes(len(b)) {
		return x.marshalNames(false)
	}
	return b
}

func (x *indexData) marshalNames(prefixes bool) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(x.chunkValues))
	if x.version >= 2 {
		b = append(b, x.setupMode)
		switch x.setupMode {
		case setupEmbedded:
			b = binary.AppendUvarint(b, uint64(len(x.setupRaw)))
			b = append(b, x.setupRaw...)
		case setupExternal:
			b = append(b, x.setupID[:]...)
		}
	}
	if x.flags&flagRef != 0 {
		b = binary.AppendUvarint(b, uint64(len(x.refs)))
		for _, f := range x.refs {
			b = appendString(b, f.Name)
			b = binary.AppendUvarint(b, uint64(f.Size))
			b = append(b, f.SHA256[:]...)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(x.files)))
	for _, f := range x.files {
		b = appendString(b, f.Name)
		b = binary.AppendUvarint(b, uint64(f.Size))
		if x.version >= 7 {
			b = append(b, byte(f.Digest))
		}
		b = append(b, f.Sum[:]...)
		b = appendString(b, f.Format)
		b = binary.AppendUvarint(b, uint64(len(f.blocks)))
		for _, k := range f.blocks {
			b = append(b, k.kind)
			if k.kind == kindFloat || k.kind == kindRef {
				b = append(b, byte(k.dtype))
			}
			b = binary.AppendUvarint(b, uint64(k.origLen))
			b = binary.AppendUvarint(b, uint64(k.compLen))
			b = binary.LittleEndian.AppendUint32(b, k.crc)
			if k.kind == kindRef || k.kind == kindDup {
				b = binary.AppendUvarint(b, uint64(k.ref))
				b = binary.AppendUvarint(b, uint64(k.refOff))
			}
		}
		b = binary.AppendUvarint(b, uint64(len(f.Tensors)))
		prev := ""
		var prevEnd int64
		for _, t := range f.Tensors {
			p := 0
			if prefixes {
				p = commonPrefix(prev, t.Name)
			}
			b = binary.AppendUvarint(b, uint64(p))
			b = appendString(b, t.Name[p:])
			prev = t.Name
			b = append(b, byte(t.DType))
			if t.DType == dtype.Invalid {
				b = appendString(b, t.Type)
			}
			b = binary.AppendUvarint(b, uint64(len(t.Shape)))
			for _, d := range t.Shape {
				b = binary.AppendUvarint(b, uint64(d))
			}
			// offsets are stored relative to the previous tensor's end
			// (tensors are in file order), zigzag for safety
			b = binary.AppendVarint(b, t.Offset-prevEnd)
			b = binary.AppendUvarint(b, uint64(t.Length))
			prevEnd = t.Offset + t.Length
		}
	}
	return b
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// indexReader decodes with bounds checks; every count is checked against
// the bytes left before anything is allocated.
type indexReader struct {
	b   []byte
	err error
}

func (r *indexReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *indexReader) uvarint(max uint64, what string) uint64 {
	return r.uvarintOf(max, what, "")
}

// uvarintOf is uvarint for a value described as what+suffix in errors
// (joined only on failure: the index is read for every archive opened).
func (r *indexReader) uvarintOf(max uint64, what, suffix string) uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.fail("index: bad %s%s", what, suffix)
		return 0
	}
	if v > max {
		r.fail("index: %s%s %d exceeds %d", what, suffix, v, max)
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *indexReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.b)
	if k <= 0 {
		r.fail("index: bad %s", what)
		return 0
	}
	r.b = r.b[k:]
	return v
}

func (r *indexReader) bytes(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.fail("index: %s: need %d bytes, have %d", what, n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *indexReader) str(what string) string {
	n := r.uvarintOf(uint64(len(r.b)), what, " length")
	return string(r.bytes(int(n), what))
}

func (r *indexReader) u8(what string) byte {
	v := r.bytes(1, what)
	if v == nil {
		return 0
	}
	return v[0]
}

// unmarshalIndex decodes an index. payloadLen is the number of payload bytes
// in the archive; block lengths must add up to it.
func unmarshalIndex(b []byte, payloadLen int64, version int) (*indexData, error) {
	return unmarshalIndexFlags(b, payloadLen, version, 0)
}

// unmarshalIndexFlags is unmarshalIndex for an archive with header flags.
func unmarshalIndexFlags(b []byte, payloadLen int64, version int, flags uint16) (*indexData, error) {
	r := &indexReader{b: b}
	x := &indexData{version: version, flags: flags}
	x.chunkValues = int(r.uvarint(MaxChunkValues, "chunk size"))
	if version >= 2 {
		x.readSetup(r)
	}
	if flags&flagRef != 0 {
		x.readRefs(r)
	}
	nf := r.uvarint(uint64(len(r.b)), "file count")
	namesLeft := maxNameBytes(len(b)) // for the names of all files
	compOff := int64(headerLen)
	for i := uint64(0); i < nf && r.err == nil; i++ {
		f := &FileInfo{}
		f.Name = r.str("file name")
		f.Size = int64(r.uvarint(math.MaxInt64, "file size"))
		f.Digest = DigestSHA256
		if version >= 7 {
			if f.Digest = Digest(r.u8("digest kind")); r.err == nil && !f.Digest.known() {
				r.fail("index: file %q: unknown digest kind %d", f.Name, f.Digest)
				break
			}
		}
		copy(f.Sum[:], r.bytes(32, "digest"))
		if f.Digest == DigestSHA256 {
			f.SHA256 = f.Sum
		}
		f.Format = r.str("format")
		nb := r.uvarint(uint64(len(r.b)/7), "block count")
		if r.err != nil {
			break
		}
		compOff = x.readBlocks(r, f, i, nb, payloadLen, compOff)
		nt := r.uvarint(uint64(len(r.b)/6), "tensor count")
		if r.err != nil {
			break
		}
		readTensors(r, f, nt, &namesLeft, len(b))
		x.files = append(x.files, f)
	}
	if r.err == nil && compOff-headerLen != payloadLen {
		r.fail("index: blocks cover %d of %d payload bytes", compOff-headerLen, payloadLen)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("index: %d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return nil, r.err
	}
	return x, nil
}

// readSetup reads the setup mode (format version 2 on) and the embedded
// setup or the external one's ID.
func (x *indexData) readSetup(r *indexReader) {
	x.setupMode = r.u8("setup mode")
	switch x.setupMode {
	case setupNone:
	case setupEmbedded:
		n := r.uvarint(uint64(len(r.b)), "setup length")
		x.setupRaw = r.bytes(int(n), "setup")
		if r.err == nil {
			sum := sha256.Sum256(x.setupRaw)
			copy(x.setupID[:], sum[:16])
		}
	case setupExternal:
		copy(x.setupID[:], r.bytes(16, "setup ID"))
	default:
		r.fail("index: unknown setup mode %d", x.setupMode)
	}
}

// readRefs reads the references of an archive coded against one.
func (x *indexData) readRefs(r *indexReader) {
	nr := r.uvarint(min(uint64(len(r.b)/34), maxRefFiles), "reference count")
	for i := uint64(0); i < nr && r.err == nil; i++ {
		var f RefInfo
		f.Name = r.str("reference name")
		f.Size = int64(r.uvarint(math.MaxInt64, "reference size"))
		copy(f.SHA256[:], r.bytes(32, "reference SHA-256"))
		x.refs = append(x.refs, f)
	}
}

// readBlocks reads the nb blocks of file i (f), whose payloads start at
// compOff, checks that they tile the file, and returns where the next
// file's payloads start.
func (x *indexData) readBlocks(r *indexReader, f *FileInfo, i, nb uint64, payloadLen, compOff int64) int64 {
	flags, version := x.flags, x.version
	f.blocks = make([]blockInfo, 0, nb)
	var origOff int64
	for j := uint64(0); j < nb && r.err == nil; j++ {
		var k blockInfo
		k.kind = r.u8("block kind")
		if k.kind > kindFloat && !(k.kind == kindRef && flags&flagRef != 0) && !(k.kind == kindDup && version >= 3) && !(k.kind == kindCM && version >= cmVersion) && !(k.kind == kindRecords && version >= recordsVersion) && !(k.kind == kindRepeat && version >= repeatVersion) {
			r.fail("index: file %q block %d: unknown kind %d", f.Name, j, k.kind)
			break
		}
		if k.kind == kindRef {
			k.dtype = dtype.DType(r.u8("block dtype"))
		}
		if k.kind == kindFloat {
			k.dtype = dtype.DType(r.u8("block dtype"))
			if floatType(k.dtype) != k.dtype || k.dtype == dtype.Invalid {
				r.fail("index: file %q block %d: %v is not a float block type", f.Name, j, k.dtype)
				break
			}
		}
		k.origLen = int64(r.uvarint(maxBlockLen, "block length"))
		k.compLen = int64(r.uvarint(uint64(payloadLen), "block compressed length"))
		c := r.bytes(4, "block CRC")
		if c != nil {
			k.crc = binary.LittleEndian.Uint32(c)
		}
		if k.kind == kindRef {
			k.ref = int(r.uvarint(uint64(max(len(x.refs)-1, 0)), "block reference"))
			k.refOff = int64(r.uvarint(math.MaxInt64, "block reference offset"))
			if r.err == nil && len(x.refs) == 0 {
				r.fail("index: file %q block %d: reference block without a reference", f.Name, j)
			}
			if r.err == nil && (k.refOff > x.refs[k.ref].Size || k.origLen > x.refs[k.ref].Size-k.refOff) {
				r.fail("index: file %q block %d: reference range [%d,+%d) outside %q", f.Name, j, k.refOff, k.origLen, x.refs[k.ref].Name)
			}
			if r.err == nil && k.dtype != dtype.Invalid && floatType(k.dtype) != k.dtype {
				r.fail("index: file %q block %d: %v is not a float block type", f.Name, j, k.dtype)
			}
			if r.err == nil && k.compLen != 0 && (!refCodable(k.dtype) || k.origLen%int64(k.dtype.Size()) != 0) {
				r.fail("index: file %q block %d: %v cannot be coded as a difference", f.Name, j, k.dtype)
			}
			if r.err != nil {
				break
			}
		}
		if k.kind == kindDup {
			// a copy of an earlier block (not itself a copy) of the same length
			sf := r.uvarint(i, "duplicate's source file")
			src := f.blocks
			if sf < i {
				src = x.files[sf].blocks
			}
			sb := r.uvarint(uint64(max(len(src)-1, 0)), "duplicate's source block")
			if r.err == nil && (len(src) == 0 || src[sb].kind == kindDup || src[sb].origLen != k.origLen || k.compLen != 0) {
				r.fail("index: file %q block %d: bad duplicate of file %d block %d", f.Name, j, sf, sb)
			}
			if r.err != nil {
				break
			}
			k.ref, k.refOff = int(sf), int64(sb)
		}
		if k.origLen > f.Size-origOff {
			r.fail("index: file %q: blocks exceed the file size %d", f.Name, f.Size)
			break
		}
		if k.compLen > payloadLen-(compOff-headerLen) {
			r.fail("index: file %q: blocks exceed the payload of %d bytes", f.Name, payloadLen)
			break
		}
		k.origOff, k.compOff = origOff, compOff
		origOff += k.origLen
		compOff += k.compLen
		f.Compressed += k.compLen
		f.blocks = append(f.blocks, k)
	}
	if r.err == nil && origOff != f.Size {
		r.fail("index: file %q: blocks cover %d of %d bytes", f.Name, origOff, f.Size)
	}
	return compOff
}

// readTensors reads the nt tensors of f; their names, all files' together,
// may take namesLeft more bytes (an index of indexLen bytes).
func readTensors(r *indexReader, f *FileInfo, nt uint64, namesLeft *int, indexLen int) {
	f.Tensors = make([]TensorInfo, 0, nt)
	// The names are decoded into one buffer and become substrings of
	// one string: one allocation for all of them. A name shares a
	// prefix with the one before, so a small index could describe
	// huge names; their total is bounded (namesLeft). The buffer
	// starts at ~24 bytes a name: nt is bounded by the bytes left, so
	// these allocations total a few times the index whatever the
	// files claim.
	names := make([]byte, 0, min(len(r.b), 24*int(nt)))
	ends := make([]int, 0, nt)
	prevStart := 0
	var prevEnd int64
	var slab []int64
	for j := uint64(0); j < nt && r.err == nil; j++ {
		var t TensorInfo
		p := int(r.uvarint(uint64(len(names)-prevStart), "name prefix"))
		suffix := r.bytes(int(r.uvarintOf(uint64(len(r.b)), "tensor name", " length")), "tensor name")
		if r.err != nil {
			break
		}
		if *namesLeft -= p + len(suffix); *namesLeft < 0 {
			r.fail("index: file %q: tensor names exceed %d bytes in all", f.Name, maxNameBytes(indexLen))
			break
		}
		start := len(names)
		names = append(names, names[prevStart:prevStart+p]...)
		names = append(names, suffix...)
		prevStart = start
		t.DType = dtype.DType(r.u8("tensor dtype"))
		if t.DType == dtype.Invalid {
			t.Type = r.str("tensor type")
		} else if t.DType.Bits() == 0 {
			r.fail("index: tensor %q: unknown dtype %d", names[start:], t.DType)
		}
		nd := r.uvarint(uint64(len(r.b)), "rank")
		if r.err != nil {
			break
		}
		// Shapes are cut from a shared slab: one allocation per
		// few hundred tensors instead of one each (sized for four
		// dimensions a tensor left, so that a one-tensor archive
		// does not allocate 8 KiB for its shape).
		if slab == nil || uint64(cap(slab)-len(slab)) < nd {
			slab = make([]int64, 0, max(nd, min(1024, 4*(nt-j))))
		}
		t.Shape = slab[len(slab) : len(slab)+int(nd) : len(slab)+int(nd)]
		slab = slab[:len(slab)+int(nd)]
		for d := range t.Shape {
			t.Shape[d] = int64(r.uvarint(math.MaxInt64, "dimension"))
		}
		delta := r.varint("tensor offset")
		if delta < -prevEnd || delta > f.Size-prevEnd {
			r.fail("index: tensor %q: offset outside the file", names[start:])
			break
		}
		t.Offset = prevEnd + delta
		t.Length = int64(r.uvarint(math.MaxInt64, "tensor length"))
		if r.err == nil && (t.Offset < 0 || t.Offset > f.Size || t.Length > f.Size-t.Offset) {
			r.fail("index: tensor %q [%d,+%d) outside the file", names[start:], t.Offset, t.Length)
		}
		prevEnd = t.Offset + t.Length
		f.Tensors = append(f.Tensors, t)
		ends = append(ends, len(names))
	}
	all, start := string(names), 0
	for i := range f.Tensors {
		f.Tensors[i].Name = all[start:ends[i]]
		start = ends[i]
	}
}
