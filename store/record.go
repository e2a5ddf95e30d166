package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"neuralzip/codec/crc32c"
	"neuralzip/dtype"
)

// Index records. Every value the store keeps in its index is one of the
// records below, encoded as
//
//	u8 record version (1) · fields (uvarints, fixed-size hashes, strings as
//	uvarint length + bytes) · u32 little-endian CRC-32C of all bytes before
//
// so that a damaged value is an error, never a wrong answer. The parsers
// (parseUnit, parseManifest, parseCast) check every length against the
// bytes left before allocating.

// Hash is a unit's address: the BLAKE3 of its original bytes (SHA-256
// in a version 1 store; version.go), or a chunk file's.
type Hash [32]byte

// String is the hash in hex, shortened for messages.
func (h Hash) String() string { return fmt.Sprintf("%x", h[:8]) }

// Unit kinds: how a unit's original bytes are stored.
const (
	KindRaw   = 0 // payload is the bytes themselves
	KindNzip  = 1 // payload is a one-file nzip archive of the bytes
	KindDelta = 2 // payload is an nzip archive coded against Base (reference conditioning)
	KindCast  = 3 // no payload: the bytes are the round-to-nearest-even cast of Base to DType
	maxKind   = 3
)

// KindName names a unit kind.
func KindName(k uint8) string {
	switch k {
	case KindRaw:
		return "raw"
	case KindNzip:
		return "nzip"
	case KindDelta:
		return "delta"
	case KindCast:
		return "cast"
	}
	return fmt.Sprintf("kind%d", k)
}

// unit is the index record of one stored unit (a tensor or an opaque run).
type unit struct {
	Kind   uint8
	DType  dtype.DType // the tensor's element type; Invalid for opaque bytes
	Depth  uint8       // length of the base chain (0: decodes alone)
	Pack   Hash        // the chunk file holding the payload (zero for casts)
	Off    int64       // payload offset in the pack
	Len    int64       // payload bytes
	CRC    uint32      // CRC-32C of the payload
	RawLen int64       // original bytes
	Base   Hash        // delta and cast: the unit it is coded against
	Refs   int64       // manifests and units that use this unit
	Owner  string      // the model whose add stored it
}

const recVersion = 1

var errRecord = errors.New("store: damaged index record")

// crcOf is the CRC-32C of b (the codec's: folding on AVX-512, about
// twice hash/crc32's speed on payloads; the same values).
func crcOf(b []byte) uint32 { return crc32c.Checksum(b) }

func seal(b []byte) []byte { return binary.LittleEndian.AppendUint32(b, crcOf(b)) }

// open checks a record's version and CRC and returns its fields.
func open(b []byte) ([]byte, error) {
	if len(b) < 5 || b[0] != recVersion {
		return nil, errRecord
	}
	n := len(b) - 4
	if binary.LittleEndian.Uint32(b[n:]) != crcOf(b[:n]) {
		return nil, fmt.Errorf("%w (checksum)", errRecord)
	}
	return b[1:n], nil
}

func (u unit) encode() []byte {
	b := []byte{recVersion, u.Kind, u.Depth}
	b = appendStr(b, dtName(u.DType))
	b = append(b, u.Pack[:]...)
	b = binary.AppendUvarint(b, uint64(u.Off))
	b = binary.AppendUvarint(b, uint64(u.Len))
	b = binary.LittleEndian.AppendUint32(b, u.CRC)
	b = binary.AppendUvarint(b, uint64(u.RawLen))
	b = append(b, u.Base[:]...)
	b = binary.AppendUvarint(b, uint64(u.Refs))
	b = appendStr(b, u.Owner)
	return seal(b)
}

// dec reads fields of a record, remembering the first error.
type dec struct {
	b   []byte
	err error
}

func (d *dec) u8() uint8 {
	if d.err != nil || len(d.b) < 1 {
		d.err = errRecord
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *dec) u32() uint32 {
	if d.err != nil || len(d.b) < 4 {
		d.err = errRecord
		return 0
	}
	v := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

// int reads a uvarint that must fit in an int64 (and below max).
func (d *dec) int(max int64) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > uint64(max) {
		d.err = errRecord
		return 0
	}
	d.b = d.b[n:]
	return int64(v)
}

func (d *dec) hash() (h Hash) {
	if d.err != nil || len(d.b) < len(h) {
		d.err = errRecord
		return h
	}
	copy(h[:], d.b)
	d.b = d.b[len(h):]
	return h
}

func (d *dec) str() string {
	n := d.int(int64(len(d.b)))
	if d.err != nil {
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// dtype reads a dtype by its name (names, unlike the enum's numbers,
// stay fixed when dtype grows); "" is Invalid (opaque bytes).
func (d *dec) dtype() dtype.DType {
	s := d.str()
	if s == "" || d.err != nil {
		return dtype.Invalid
	}
	t, ok := dtype.Parse(s)
	if !ok {
		d.err = fmt.Errorf("%w (dtype %q)", errRecord, s)
	}
	return t
}

func dtName(t dtype.DType) string {
	if t == dtype.Invalid {
		return ""
	}
	return t.String()
}

func (d *dec) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w (%d trailing bytes)", errRecord, len(d.b))
	}
	return d.err
}

const maxLen = 1 << 50 // bounds every stored length

func parseUnit(b []byte) (unit, error) {
	f, err := open(b)
	if err != nil {
		return unit{}, err
	}
	d := dec{b: f}
	var u unit
	u.Kind = d.u8()
	u.Depth = d.u8()
	u.DType = d.dtype()
	u.Pack = d.hash()
	u.Off = d.int(maxLen)
	u.Len = d.int(maxLen)
	u.CRC = d.u32()
	u.RawLen = d.int(maxLen)
	u.Base = d.hash()
	u.Refs = d.int(maxLen)
	u.Owner = d.str()
	if err := d.end(); err != nil {
		return unit{}, err
	}
	if u.Kind > maxKind || u.Depth > maxDepth {
		return unit{}, fmt.Errorf("%w (kind %d, depth %d)", errRecord, u.Kind, u.Depth)
	}
	if (u.Kind == KindDelta || u.Kind == KindCast) != (u.Depth > 0) {
		return unit{}, fmt.Errorf("%w (kind %s at depth %d)", errRecord, KindName(u.Kind), u.Depth)
	}
	return u, nil
}

// Manifest describes one stored model: its files, each a run of units.
type Manifest struct {
	Name  string
	Files []FileEntry
	// Added is the payload bytes this model's add stored (what it costs in
	// the store); Raw the bytes of its files; Alone the bytes of its
	// files' own nzip archives (add -compare; 0 when not measured).
	Added, Raw, Alone int64
	// Bases are the models whose units this model's deltas and casts were
	// coded against, when it was added.
	Bases []string
}

// FileEntry is one file of a model.
type FileEntry struct {
	Name   string // slash-separated, relative to the model
	Size   int64
	SHA256 Hash
	Format string
	Units  []Hash // in file order; their lengths sum to Size
}

const maxNames = 1 << 20

func (m *Manifest) encode() []byte {
	b := []byte{recVersion}
	b = appendStr(b, m.Name)
	b = binary.AppendUvarint(b, uint64(m.Added))
	b = binary.AppendUvarint(b, uint64(m.Raw))
	b = binary.AppendUvarint(b, uint64(m.Alone))
	b = binary.AppendUvarint(b, uint64(len(m.Bases)))
	for _, s := range m.Bases {
		b = appendStr(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Files)))
	for _, f := range m.Files {
		b = appendStr(b, f.Name)
		b = binary.AppendUvarint(b, uint64(f.Size))
		b = append(b, f.SHA256[:]...)
		b = appendStr(b, f.Format)
		b = binary.AppendUvarint(b, uint64(len(f.Units)))
		for _, h := range f.Units {
			b = append(b, h[:]...)
		}
	}
	return seal(b)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func parseManifest(b []byte) (*Manifest, error) {
	f, err := open(b)
	if err != nil {
		return nil, err
	}
	d := dec{b: f}
	m := &Manifest{Name: d.str(), Added: d.int(maxLen), Raw: d.int(maxLen), Alone: d.int(maxLen)}
	nb := d.int(int64(len(d.b))) // each name takes at least one byte
	for i := int64(0); i < nb && d.err == nil; i++ {
		m.Bases = append(m.Bases, d.str())
	}
	nf := d.int(int64(len(d.b)) / 35) // a file takes at least 35 bytes
	for i := int64(0); i < nf && d.err == nil; i++ {
		fe := FileEntry{Name: d.str(), Size: d.int(maxLen), SHA256: d.hash(), Format: d.str()}
		nu := d.int(int64(len(d.b)) / 32)
		if d.err == nil {
			fe.Units = make([]Hash, nu)
			for j := range fe.Units {
				fe.Units[j] = d.hash()
			}
		}
		m.Files = append(m.Files, fe)
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return m, nil
}

// castRec: the unit whose cast to DType has the key's SHA-256.
type castRec struct {
	From  Hash
	DType dtype.DType
}

func (c castRec) encode() []byte {
	b := appendStr([]byte{recVersion}, dtName(c.DType))
	b = append(b, c.From[:]...)
	return seal(b)
}

func parseCast(b []byte) (castRec, error) {
	f, err := open(b)
	if err != nil {
		return castRec{}, err
	}
	d := dec{b: f}
	c := castRec{DType: d.dtype(), From: d.hash()}
	return c, d.end()
}

// fingerprint: a tensor's values at fixed positions, as float32.
type fingerprint []float32

const fpSamples = 256

func (f fingerprint) encode() []byte {
	// sized once: version, count, values, CRC (appended a value at a
	// time it grew five times per unit)
	b := make([]byte, 1, 1+binary.MaxVarintLen64+4*len(f)+4)
	b[0] = recVersion
	b = binary.AppendUvarint(b, uint64(len(f)))
	for _, v := range f {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return seal(b)
}

func parseFingerprint(b []byte) (fingerprint, error) {
	f, err := open(b)
	if err != nil {
		return nil, err
	}
	d := dec{b: f}
	n := d.int(fpSamples)
	if d.err != nil || int64(len(d.b)) != 4*n {
		return nil, errRecord
	}
	fp := make(fingerprint, n)
	for i := range fp {
		fp[i] = math.Float32frombits(d.u32())
	}
	return fp, d.end()
}
