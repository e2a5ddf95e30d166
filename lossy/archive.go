package lossy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/codec/crc32c"
	"neuralzip/dtype"
)

// A lossy archive (nzip quantize) holds a model whose float matrices are
// coded by one lossy method; everything else of the file is kept as
// stored. It is never mistaken for an .nzip archive: it starts with its
// own magic (codec.LossyMagic, which codec's reader names: codec.ErrLossy),
// and its header says in words that it is lossy. Layout:
//
//	magic    8 bytes  0x89 'N' 'Z' 'L' 'O' 'S' 'S' 'Y'
//	version  u16 LE   2 (1: e8 streams of format 1, e8v1.go; both read)
//	hdrLen   u32 LE   bytes of the header
//	header   JSON     ArchiveHeader: the notice, the method and rate, the
//	                  measured error, the original file (format, size,
//	                  SHA-256) and the parts that cover it in order
//	hdrCRC   u32 LE   CRC-32C of the header
//	body              each part's stored bytes, in order: a raw part its
//	                  bytes of the original file, a tensor part its coded
//	                  bytes (the method's format: Method.Code)
//	end      8 bytes  'N' 'Z' 'L' 'O' 'S' 'S' 'E' 'N' 'D' — archiveEnd
//
// All integers are little-endian. The file ends right after the end mark
// (a truncated or extended archive is refused). Decoding a part checks its
// CRC-32C; the original's SHA-256 is a record of what was quantized, not a
// check: the decoded file differs from it by design. A coded tensor decodes
// in tiles of TileRows rows without the rows before them (decode.go; e8's
// stream holds its tiles' lengths), so a reader decodes only what it reads.

// ArchiveVersion is the version of the lossy archives this build writes;
// it reads this one and version 1. The versions differ only in the e8
// stream, whose format is the version (2: row scales as 8-bit log codes
// coded in the tiles; 1: float32 row scales, e8v1.go).
const ArchiveVersion = 2

// LossyNotice is the header's "lossy" field.
const LossyNotice = "LOSSY: the weights in this archive are approximations of the original's (nzip quantize), not its bytes; nzip decompress -lossy writes the dequantized model"

var archiveEnd = [8]byte{'N', 'Z', 'L', 'S', 'Y', 'E', 'N', 'D'}

const archiveFixed = 8 + 2 + 4 + 4 + 8 // magic, version, hdrLen, hdrCRC, end

// Errors of lossy archives.
var (
	// ErrNotLossy means the input does not start with the lossy magic.
	ErrNotLossy = errors.New("lossy: not a lossy archive")
	// ErrLossless means the input is a lossless .nzip archive (wraps
	// ErrNotLossy).
	ErrLossless = errors.New("lossy: a lossless .nzip archive, not a lossy one (nzip decompress restores it bit for bit)")
	// ErrArchive means a lossy archive is damaged or inconsistent.
	ErrArchive = errors.New("lossy: damaged lossy archive")
	// ErrArchiveVersion means the archive was written by a newer format.
	ErrArchiveVersion = errors.New("lossy: unsupported lossy archive version")
)

// ArchiveHeader is a lossy archive's header.
type ArchiveHeader struct {
	Lossy        string   `json:"lossy"` // LossyNotice
	Method       string   `json:"method"`
	BitsTarget   float64  `json:"bits_target"`    // the rate asked for (the format's own for methods of one rate)
	BitsPerParam float64  `json:"bits_per_param"` // measured: coded bytes of the coded tensors and the stored bytes of the others, over their values
	RelL2        float64  `json:"rel_l2"`         // ‖W − Ŵ‖ / ‖W‖ over the coded tensors together
	Original     Original `json:"original"`
	Parts        []Part   `json:"parts"`
}

// Original is the file the archive was quantized from.
type Original struct {
	Format string `json:"format"` // as checkpoint names it ("safetensors", "gguf", ...)
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
}

// Part is a run of the original file: raw (kept as stored) or a coded
// tensor (DType set).
type Part struct {
	Offset int64  `json:"offset"` // in the original file
	Length int64  `json:"length"` // bytes there
	Stored int64  `json:"stored"` // bytes in the archive
	CRC    uint32 `json:"crc32c"` // of the stored bytes
	// tensor parts
	Name  string   `json:"name,omitempty"`
	DType string   `json:"dtype,omitempty"`
	Shape []int64  `json:"shape,omitempty"`
	RelL2 *float64 `json:"rel_l2,omitempty"` // measured
}

// IsTensor reports whether p is a coded tensor.
func (p Part) IsTensor() bool { return p.DType != "" }

// fixedBits are the rates of the archivable methods of one rate.
var fixedBits = map[string]float64{"nf4": 4, "int4": 4, "int8": 8, "fp8": 8, "fp8row": 8, "fp8e5": 8, "fp8e5row": 8, "fp8h": 8, "fp8hd": 8}

// ArchiveMethods are the methods a lossy archive holds, in the order
// nzip quantize lists them: those with a decoder whose output size the
// coded bytes bound.
var ArchiveMethods = []string{"nf4", "int8", "int4", "fp8", "fp8row", "fp8e5", "fp8e5row", "fp8h", "fp8hd", "e8"}

// archivable returns the method named name if archives hold it.
func archivable(name string) (Method, bool) {
	for _, n := range ArchiveMethods {
		if n == name {
			ms, err := ByName(name)
			return ms[0], err == nil
		}
	}
	return nil, false
}

// FixedBits is the rate of a method of one rate (0 for a rated one).
func FixedBits(method string) float64 { return fixedBits[method] }

// Quantize codes the float matrices of the model src (laid out as l) with
// the method named method at bits per parameter (the method's own rate
// for methods of one rate: bits must be 0 or that rate) and returns the
// lossy archive and its header.
func Quantize(src []byte, l *checkpoint.Layout, method string, bits float64) ([]byte, *ArchiveHeader, error) {
	m, ok := archivable(method)
	if !ok {
		return nil, nil, fmt.Errorf("lossy: lossy archives hold %v, not %q", ArchiveMethods, method)
	}
	if fb := fixedBits[method]; fb != 0 {
		if bits != 0 && bits != fb {
			return nil, nil, fmt.Errorf("lossy: %s codes %g bits per parameter (plus its scales), not %g", method, fb, bits)
		}
		bits = fb
	} else if !(bits > 0 && bits <= 16) {
		return nil, nil, fmt.Errorf("lossy: %s needs a rate in (0, 16] bits per parameter, not %g", method, bits)
	}
	if l.Size != int64(len(src)) {
		return nil, nil, fmt.Errorf("lossy: the layout is of %d bytes, the file %d", l.Size, len(src))
	}
	sum := sha256.Sum256(src)
	h := &ArchiveHeader{Lossy: LossyNotice, Method: method, BitsTarget: bits,
		Original: Original{Format: l.Format, Size: int64(len(src)), SHA256: hex.EncodeToString(sum[:])}}
	var body [][]byte
	var params, bytesOut int64
	var sqErr, sqNorm float64
	raw := func(off, end int64) {
		if end <= off {
			return
		}
		if n := len(h.Parts); n > 0 && !h.Parts[n-1].IsTensor() {
			p := &h.Parts[n-1]
			p.Length += end - off
			p.Stored = p.Length
			body[n-1] = src[p.Offset : p.Offset+p.Length]
			p.CRC = crc32c.Checksum(body[n-1])
			return
		}
		b := src[off:end]
		h.Parts = append(h.Parts, Part{Offset: off, Length: end - off, Stored: end - off, CRC: crc32c.Checksum(b)})
		body = append(body, b)
	}
	coded := 0
	for _, s := range l.Segments {
		t := Tensor{Name: s.Name, DType: s.DType, Shape: s.Shape, Offset: s.Offset, Data: src[s.Offset : s.Offset+s.Length]}
		if !s.IsTensor() || !t.Coded() {
			raw(s.Offset, s.Offset+s.Length)
			if s.IsTensor() {
				params += t.Params()
				bytesOut += s.Length
			}
			continue
		}
		v := Values(t.DType, t.Data)
		c, recon, err := m.Code(v, int(t.rows()), int(t.cols()), bits)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", method, t.Name, err)
		}
		// the error of the reconstruction as the archive's reader gives
		// it: rounded to the tensor's type
		out := make([]byte, len(t.Data))
		Store(t.DType, out, recon)
		e, n := sqErrors(v, Values(t.DType, out))
		sqErr, sqNorm = sqErr+e, sqNorm+n
		rel := relL2(e, n)
		h.Parts = append(h.Parts, Part{Offset: s.Offset, Length: s.Length, Stored: int64(len(c)), CRC: crc32c.Checksum(c),
			Name: s.Name, DType: s.DType.String(), Shape: append([]int64(nil), s.Shape...), RelL2: &rel})
		body = append(body, c)
		params += int64(len(v))
		bytesOut += int64(len(c))
		coded++
	}
	if coded == 0 {
		return nil, nil, errors.New("lossy: the model has no float matrix (F32, F16 or BF16, two or more dimensions, 256 values or more) to quantize")
	}
	if params > 0 {
		h.BitsPerParam = float64(bytesOut) * 8 / float64(params)
	}
	h.RelL2 = relL2(sqErr, sqNorm)
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, nil, err
	}
	out := append([]byte(nil), codec.LossyMagic[:]...)
	out = binary.LittleEndian.AppendUint16(out, ArchiveVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hdr)))
	out = append(out, hdr...)
	out = binary.LittleEndian.AppendUint32(out, crc32c.Checksum(hdr))
	for _, b := range body {
		out = append(out, b...)
	}
	out = append(out, archiveEnd[:]...)
	if _, err := OpenArchive(out); err != nil { // what the reader refuses, the writer does not write
		return nil, nil, fmt.Errorf("lossy: the archive written does not read back: %w", err)
	}
	return out, h, nil
}

// Archive is a lossy archive opened for reading, held in memory. It reads
// as the dequantized model file (ReadAt, WriteTo, DecodeTile): raw parts
// as stored, each coded tensor decoded tile by tile (TileEnds) — only the
// tiles a read covers, straight into the caller's buffer: nothing decoded
// is kept. A part's CRC-32C is checked (and an e8 tensor's tile index
// parsed) once, when it is first read. It is safe for concurrent use.
type Archive struct {
	Header  ArchiveHeader
	data    []byte
	version int     // the format's (e8's stream format)
	starts  []int64 // each part's stored bytes start in data

	tiles   []tileRef // the dequantized file's tiles, in order
	ends    []int64   // each tile's end in the file
	codes   []partCode
	decoded atomic.Int64 // bytes of tensors decoded so far
}

// rawTile is the most bytes of a tile of a raw part.
const rawTile = 16 << 10

// tileRef is a tile of the dequantized file: tile t of part p (of a raw
// part: its t-th run of rawTile bytes).
type tileRef struct {
	part, t  int
	off, len int64 // in the file
}

// partCode is a tensor part checked for decoding, once.
type partCode struct {
	once sync.Once
	c    *tensorCode
	err  error
}

// OpenArchive reads a lossy archive's header and checks its structure
// (parts decode later, each checked by its CRC-32C). b must not change
// while the archive is used.
func OpenArchive(b []byte) (*Archive, error) {
	if len(b) >= 8 && bytes.Equal(b[:8], codec.Magic[:]) {
		return nil, fmt.Errorf("%w (%w)", ErrLossless, ErrNotLossy)
	}
	if len(b) < 8 || !bytes.Equal(b[:8], codec.LossyMagic[:]) {
		return nil, ErrNotLossy
	}
	if len(b) < archiveFixed {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrArchive, len(b))
	}
	v := binary.LittleEndian.Uint16(b[8:])
	if v != 1 && v != ArchiveVersion {
		return nil, fmt.Errorf("%w %d (this build reads versions 1 to %d)", ErrArchiveVersion, v, ArchiveVersion)
	}
	n := int64(binary.LittleEndian.Uint32(b[10:]))
	if n > int64(len(b)-archiveFixed) {
		return nil, fmt.Errorf("%w: a header of %d bytes in %d", ErrArchive, n, len(b))
	}
	hdr := b[14 : 14+n]
	if crc32c.Checksum(hdr) != binary.LittleEndian.Uint32(b[14+n:]) {
		return nil, fmt.Errorf("%w: the header's CRC-32C does not match", ErrArchive)
	}
	a := &Archive{data: b, version: int(v)}
	if err := json.Unmarshal(hdr, &a.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrArchive, err)
	}
	h := &a.Header
	if h.Lossy == "" {
		return nil, fmt.Errorf("%w: the header lacks its lossy notice", ErrArchive)
	}
	if _, ok := archivable(h.Method); !ok {
		return nil, fmt.Errorf("%w: unknown method %q", ErrArchive, h.Method)
	}
	if s, err := hex.DecodeString(h.Original.SHA256); err != nil || len(s) != sha256.Size {
		return nil, fmt.Errorf("%w: the original's SHA-256 %q", ErrArchive, h.Original.SHA256)
	}
	pos := 14 + n + 4
	end := int64(len(b)) - int64(len(archiveEnd))
	var off int64
	for i, p := range h.Parts {
		if p.Offset != off || p.Length < 0 || p.Stored < 0 || p.Stored > end-pos {
			return nil, fmt.Errorf("%w: part %d (offset %d, %d bytes, %d stored) does not follow at %d within the archive", ErrArchive, i, p.Offset, p.Length, p.Stored, off)
		}
		if p.IsTensor() {
			if err := checkTensorPart(h.Method, p, a.version); err != nil {
				return nil, fmt.Errorf("%w: part %d (%q): %v", ErrArchive, i, p.Name, err)
			}
		} else if p.Stored != p.Length || p.Name != "" || p.Shape != nil || p.RelL2 != nil {
			return nil, fmt.Errorf("%w: raw part %d: %d bytes stored for %d", ErrArchive, i, p.Stored, p.Length)
		}
		a.starts = append(a.starts, pos)
		a.addTiles(i)
		pos += p.Stored
		off += p.Length
	}
	a.codes = make([]partCode, len(h.Parts))
	if off != h.Original.Size {
		return nil, fmt.Errorf("%w: the parts cover %d bytes of a file of %d", ErrArchive, off, h.Original.Size)
	}
	if pos != end || !bytes.Equal(b[end:], archiveEnd[:]) {
		return nil, fmt.Errorf("%w: the parts end at %d, the archive's end mark is not at %d (truncated or extended?)", ErrArchive, pos, end)
	}
	return a, nil
}

// checkTensorPart checks a tensor part's type, shape and the size of its
// coded bytes (exact for the methods of one rate; e8Decode bounds its own).
func checkTensorPart(method string, p Part, version int) error {
	d, ok := dtype.Parse(p.DType)
	if !ok || d != dtype.F32 && d != dtype.F16 && d != dtype.BF16 {
		return fmt.Errorf("type %q (F32, F16 or BF16)", p.DType)
	}
	rows, cols, ok := partMatrix(p.Shape)
	if !ok || rows*cols*int64(d.Size()) != p.Length {
		return fmt.Errorf("shape %v of %s is not %d bytes", p.Shape, p.DType, p.Length)
	}
	if p.RelL2 == nil || !(*p.RelL2 >= 0) {
		return errors.New("no measured error")
	}
	if want := codedSize(method, rows, cols); want >= 0 && p.Stored != want {
		return fmt.Errorf("%d coded bytes, %s of %d × %d writes %d", p.Stored, method, rows, cols, want)
	}
	// e8: what its decoder refuses anyway, refused before the tiles are
	// listed: more than 16 Ki values a byte, or tiles of fewer than 6
	// bytes in version 1 (a length and a range coder's start), 1 in
	// version 2 (a length: the range coder's flush is short)
	minTile := int64(6)
	if version >= 2 {
		minTile = 1
	}
	if method == "e8" && (rows*cols > p.Stored<<14 || int64(tileCount(method, int(rows), int(cols), version))*minTile > p.Stored) {
		return fmt.Errorf("%d coded bytes cannot hold e8's %d × %d", p.Stored, rows, cols)
	}
	return nil
}

// partMatrix is a tensor's rows (first dimension) and columns (the rest).
func partMatrix(shape []int64) (rows, cols int64, ok bool) {
	if len(shape) < 2 || len(shape) > 8 {
		return 0, 0, false
	}
	n := int64(1)
	for _, d := range shape {
		if d <= 0 || d > 1<<31 || n > (1<<40)/d {
			return 0, 0, false
		}
		n *= d
	}
	return shape[0], n / shape[0], true
}

// codedSize is the size of a method's coded bytes for a rows × cols
// matrix, -1 where it varies (e8).
func codedSize(method string, rows, cols int64) int64 {
	n := rows * cols
	switch method {
	case "nf4":
		return 4*((n+nf4Block-1)/nf4Block) + (n+1)/2
	case "int8", "fp8row", "fp8e5row", "fp8h":
		return 4*rows + n
	case "int4":
		return 4*rows + (n+1)/2
	case "fp8", "fp8e5":
		return 4 + n
	case "fp8hd":
		return 4*rows + (rows*((cols+dualGroup-1)/dualGroup)+1)/2 + n
	}
	return -1
}

// Size is the size of the dequantized file (the original's).
func (a *Archive) Size() int64 { return a.Header.Original.Size }

// addTiles appends part i's tiles (checked by OpenArchive).
func (a *Archive) addTiles(i int) {
	p := a.Header.Parts[i]
	add := func(t int, off, n int64) {
		a.tiles = append(a.tiles, tileRef{part: i, t: t, off: off, len: n})
		a.ends = append(a.ends, off+n)
	}
	if !p.IsTensor() {
		for t, o := 0, int64(0); o < p.Length; t, o = t+1, o+rawTile {
			add(t, p.Offset+o, min(rawTile, p.Length-o))
		}
		return
	}
	d, _ := dtype.Parse(p.DType)
	rows, cols, _ := partMatrix(p.Shape)
	sz := int64(d.Size())
	for t := range tileCount(a.Header.Method, int(rows), int(cols), a.version) {
		v0, v1 := tileValues(a.Header.Method, int(rows), int(cols), t, a.version)
		add(t, p.Offset+int64(v0)*sz, int64(v1-v0)*sz)
	}
}

// Decoded is the bytes of tensors decoded so far.
func (a *Archive) Decoded() int64 { return a.decoded.Load() }

// HeldBytes is the archive's bytes held in memory.
func (a *Archive) HeldBytes() int64 { return int64(len(a.data)) }

// stored is part i's bytes in the archive.
func (a *Archive) stored(i int) []byte {
	return a.data[a.starts[i] : a.starts[i]+a.Header.Parts[i].Stored]
}

// code returns tensor part i ready to decode: its CRC-32C checked and (e8)
// its tiles indexed, the first time it is asked for.
func (a *Archive) code(i int) (*tensorCode, error) {
	pc := &a.codes[i]
	pc.once.Do(func() {
		p := a.Header.Parts[i]
		b := a.stored(i)
		if crc32c.Checksum(b) != p.CRC {
			pc.err = fmt.Errorf("%w: tensor %q: CRC-32C mismatch", ErrArchive, p.Name)
			return
		}
		rows, cols, _ := partMatrix(p.Shape)
		if pc.c, pc.err = newTensorCode(a.Header.Method, b, int(rows), int(cols), a.version); pc.err != nil {
			pc.err = fmt.Errorf("%w: tensor %q: %v", ErrArchive, p.Name, pc.err)
		}
	})
	return pc.c, pc.err
}

// decodeValues writes values [lo, hi) of tensor part i, as its type, to
// dst, tile by tile.
func (a *Archive) decodeValues(i, lo, hi int, dst []byte) error {
	c, err := a.code(i)
	if err != nil {
		return err
	}
	p := a.Header.Parts[i]
	d, _ := dtype.Parse(p.DType)
	sz := d.Size()
	method := a.Header.Method
	n := tileCount(method, c.rows, c.cols, c.format)
	if lo < 0 || hi > c.rows*c.cols || lo > hi {
		return fmt.Errorf("lossy: values [%d, %d) of tensor %q", lo, hi, p.Name)
	}
	t := 0 // the tile of value lo
	if n > 1 {
		t = lo / (tileRows(method, c.cols, c.format) * c.cols)
	}
	for ; t < n && lo < hi; t++ {
		v0, v1 := tileValues(method, c.rows, c.cols, t, c.format)
		e := min(hi, v1)
		if err := c.decode(lo, e, &valueSink{lo: lo, hi: e, b: dst, dt: d}); err != nil {
			r1 := v1 / c.cols
			if method == "e8" && c.cols < e8MinRowScale {
				r1 = c.rows
			}
			return fmt.Errorf("%w: tensor %q, tile %d of %d (rows %d to %d): %v", ErrArchive, p.Name, t, n, v0/max(c.cols, 1), r1-1, err)
		}
		dst = dst[(e-lo)*sz:]
		a.decoded.Add(int64(e-lo) * int64(sz))
		lo = e
	}
	return nil
}

// TileEnds returns where each tile of the dequantized file ends, in order:
// tile i is the bytes [TileEnds()[i-1], TileEnds()[i]) (the first from
// 0), a coded tensor's rows TileRows at a time (an e8 tensor of rows
// shorter than 64 values: whole), or a run of at most 16 KiB of a part
// kept as stored. Each decodes alone (DecodeTile). The slice is the
// archive's: do not change it.
func (a *Archive) TileEnds() []int64 { return a.ends }

// DecodeTile writes tile i of the dequantized file into dst, which must be
// as long as the tile. A damaged tile is an error that names its tensor
// (ErrArchive).
func (a *Archive) DecodeTile(i int, dst []byte) error {
	if i < 0 || i >= len(a.tiles) {
		return fmt.Errorf("lossy: tile %d of %d", i, len(a.tiles))
	}
	tr := a.tiles[i]
	if int64(len(dst)) != tr.len {
		return fmt.Errorf("lossy: tile %d is %d bytes, not %d", i, tr.len, len(dst))
	}
	p := a.Header.Parts[tr.part]
	if !p.IsTensor() {
		copy(dst, a.stored(tr.part)[tr.off-p.Offset:])
		return nil
	}
	rows, cols, _ := partMatrix(p.Shape)
	v0, v1 := tileValues(a.Header.Method, int(rows), int(cols), tr.t, a.version)
	return a.decodeValues(tr.part, v0, v1, dst)
}

// readTensor reads buf from tensor part i at off (within it), decoding the
// values it covers (an element cut by either end of buf into a scratch).
func (a *Archive) readTensor(i int, buf []byte, off int64) error {
	d, _ := dtype.Parse(a.Header.Parts[i].DType)
	sz := int64(d.Size())
	var one [4]byte
	v, pos := int(off/sz), 0
	if k := off % sz; k != 0 { // the head: part of an element
		if err := a.decodeValues(i, v, v+1, one[:sz]); err != nil {
			return err
		}
		pos += copy(buf, one[k:sz])
		v++
	}
	if end := int((off + int64(len(buf))) / sz); end > v {
		if err := a.decodeValues(i, v, end, buf[pos:pos+(end-v)*int(sz)]); err != nil {
			return err
		}
		pos += (end - v) * int(sz)
		v = end
	}
	if pos < len(buf) { // the tail: part of an element
		if err := a.decodeValues(i, v, v+1, one[:sz]); err != nil {
			return err
		}
		copy(buf[pos:], one[:sz])
	}
	return nil
}

// ReadAt reads the dequantized file, decoding only the tiles (of the
// methods other than e8: the values) that buf covers.
func (a *Archive) ReadAt(buf []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("lossy: negative offset")
	}
	if off >= a.Size() {
		return 0, io.EOF
	}
	parts := a.Header.Parts
	// the first part that ends after off
	lo, hi := 0, len(parts)
	for lo < hi {
		mid := (lo + hi) / 2
		if parts[mid].Offset+parts[mid].Length <= off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	n := 0
	for i := lo; i < len(parts) && n < len(buf); i++ {
		p := parts[i]
		at := off + int64(n) - p.Offset
		k := int(min(int64(len(buf)-n), p.Length-at))
		if k <= 0 {
			continue
		}
		if !p.IsTensor() {
			copy(buf[n:n+k], a.stored(i)[at:])
		} else if err := a.readTensor(i, buf[n:n+k], at); err != nil {
			return n, err
		}
		n += k
	}
	if n < len(buf) {
		return n, io.EOF
	}
	return n, nil
}

// WriteTo writes the dequantized file, a tile at a time.
func (a *Archive) WriteTo(w io.Writer) (int64, error) {
	var n int64
	var buf []byte
	for i := 0; i < len(a.tiles); i++ {
		tr := a.tiles[i]
		var b []byte
		if p := a.Header.Parts[tr.part]; !p.IsTensor() {
			b = a.stored(tr.part) // the whole raw part at once
			for i+1 < len(a.tiles) && a.tiles[i+1].part == tr.part {
				i++
			}
		} else {
			if int64(cap(buf)) < tr.len {
				buf = make([]byte, tr.len)
			}
			b = buf[:tr.len]
			if err := a.DecodeTile(i, b); err != nil {
				return n, err
			}
		}
		k, err := w.Write(b)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Verify checks every part's CRC-32C and decodes every tile.
func (a *Archive) Verify() error {
	for i, p := range a.Header.Parts {
		if !p.IsTensor() && crc32c.Checksum(a.stored(i)) != p.CRC {
			return fmt.Errorf("%w: raw part %d (at %d of the file): CRC-32C mismatch", ErrArchive, i, p.Offset)
		}
	}
	_, err := a.WriteTo(io.Discard)
	return err
}

// Tensors is the number of coded tensors.
func (a *Archive) Tensors() int {
	n := 0
	for _, p := range a.Header.Parts {
		if p.IsTensor() {
			n++
		}
	}
	return n
}

// MaxTensorRelL2 is the largest measured error of a tensor, and its name.
func (a *Archive) MaxTensorRelL2() (float64, string) {
	best, name := -1.0, ""
	for _, p := range a.Header.Parts {
		if p.IsTensor() && *p.RelL2 > best {
			best, name = *p.RelL2, p.Name
		}
	}
	return max(best, 0), name
}
