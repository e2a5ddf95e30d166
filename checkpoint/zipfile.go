package checkpoint

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// zip archives (PKWARE APPNOTE 6.3), the container of torch.save,
// TorchScript and NumPy .npz files. Only what those formats need is read:
// the end of central directory record (and its zip64 twin), the central
// directory, and the local header of each member that a format looks at,
// for the offset where the member's data starts. Everything else
// (descriptors, comments, extra fields, padding) stays opaque bytes.
//
// Every count, length and offset is checked against the file size before it
// is used or anything is allocated: a directory that claims more entries
// than its bytes can hold is an ErrTooLarge error, not an allocation.

const (
	zipLocalSig      = 0x04034b50
	zipCentralSig    = 0x02014b50
	zipEndSig        = 0x06054b50
	zip64EndSig      = 0x06064b50
	zip64LocatorSig  = 0x07064b50
	zipLocalLen      = 30
	zipCentralLen    = 46
	zipEndLen        = 22
	zip64EndLen      = 56
	zip64LocatorLen  = 20
	zipMaxComment    = 1<<16 - 1
	zipStored        = 0
	zipDeflated      = 8
	zipFlagEncrypted = 1 << 0
)

// A zipEntry is one member of an archive, as its central directory record
// describes it.
type zipEntry struct {
	Name       string
	Method     uint16
	Flags      uint16
	CompSize   int64 // bytes of (compressed) data in the file
	Size       int64 // uncompressed size
	HeaderOff  int64 // offset of the local header
	RecordOff  int64 // offset of the central directory record, for errors
	dataOff    int64 // offset of the data; 0 until dataOffset reads it
	dataOffErr error
}

// A zipArchive is the central directory of a zip file.
type zipArchive struct {
	r       io.ReaderAt
	size    int64
	format  string
	Entries []zipEntry
	DirOff  int64 // where the central directory starts
	byName  map[string]int
}

// readZip reads the central directory of the zip file r of the given size.
// Errors are FormatErrors of the named format.
func readZip(r io.ReaderAt, size int64, format string) (*zipArchive, error) {
	fail := func(off int64, sentinel error, msg string, args ...any) (*zipArchive, error) {
		return nil, formatErr(format, off, sentinel, "zip: "+msg, args...)
	}
	if size < zipEndLen {
		return fail(0, ErrTruncated, "file of %d bytes is too short for a zip archive", size)
	}
	// The end record is the last "PK\5\6" whose comment fits in the file.
	tailLen := min(size, zipEndLen+zipMaxComment)
	tail, err := readExact(r, size-tailLen, tailLen, size, format, "zip end record")
	if err != nil {
		return nil, err
	}
	endAt := -1
	for i := len(tail) - zipEndLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(tail[i:]) == zipEndSig &&
			i+zipEndLen+int(binary.LittleEndian.Uint16(tail[i+20:])) <= len(tail) {
			endAt = i
			break
		}
	}
	if endAt < 0 {
		return fail(size-tailLen, ErrTruncated, "no end of central directory record: the archive is truncated or not a zip file")
	}
	end := tail[endAt:]
	endOff := size - tailLen + int64(endAt)
	disk, dirDisk := binary.LittleEndian.Uint16(end[4:]), binary.LittleEndian.Uint16(end[6:])
	count := uint64(binary.LittleEndian.Uint16(end[10:]))
	dirSize := uint64(binary.LittleEndian.Uint32(end[12:]))
	dirOff := uint64(binary.LittleEndian.Uint32(end[16:]))
	if disk != 0 || dirDisk != 0 {
		return fail(endOff+4, ErrUnsupported, "multi-disk archives are not supported")
	}
	dirEnd := endOff // the central directory ends where the next record starts
	if endOff >= zip64LocatorLen {
		loc, err := readExact(r, endOff-zip64LocatorLen, zip64LocatorLen, size, format, "zip64 locator")
		if err != nil {
			return nil, err
		}
		if binary.LittleEndian.Uint32(loc) == zip64LocatorSig {
			locOff := endOff - zip64LocatorLen
			rec := binary.LittleEndian.Uint64(loc[8:])
			if rec > uint64(locOff) || uint64(locOff)-rec < zip64EndLen {
				return fail(locOff+8, ErrOutOfRange, "zip64 end record offset %d does not leave room before the locator at %d", rec, locOff)
			}
			e64, err := readExact(r, int64(rec), zip64EndLen, size, format, "zip64 end record")
			if err != nil {
				return nil, err
			}
			if binary.LittleEndian.Uint32(e64) != zip64EndSig {
				return fail(int64(rec), ErrMalformed, "missing zip64 end of central directory signature")
			}
			if binary.LittleEndian.Uint32(e64[16:]) != 0 || binary.LittleEndian.Uint32(e64[20:]) != 0 {
				return fail(int64(rec)+16, ErrUnsupported, "multi-disk archives are not supported")
			}
			count = binary.LittleEndian.Uint64(e64[32:])
			dirSize = binary.LittleEndian.Uint64(e64[40:])
			dirOff = binary.LittleEndian.Uint64(e64[48:])
			dirEnd = int64(rec)
		}
	}
	if dirOff > uint64(dirEnd) || dirSize > uint64(dirEnd)-dirOff {
		return fail(endOff, ErrOutOfRange, "central directory [%d,+%d) does not end before its end record at %d", dirOff, dirSize, dirEnd)
	}
	if count > dirSize/zipCentralLen {
		return fail(endOff, ErrTooLarge, "central directory claims %d entries, but its %d bytes hold at most %d", count, dirSize, dirSize/zipCentralLen)
	}
	dir, err := readExact(r, int64(dirOff), int64(dirSize), size, format, "central directory")
	if err != nil {
		return nil, err
	}
	z := &zipArchive{r: r, size: size, format: format, DirOff: int64(dirOff),
		Entries: make([]zipEntry, 0, count), byName: make(map[string]int, count)}
	p := 0
	for i := uint64(0); i < count; i++ {
		at := int64(dirOff) + int64(p)
		if len(dir)-p < zipCentralLen {
			return fail(at, ErrTruncated, "central directory record %d runs past the end of the directory", i)
		}
		h := dir[p:]
		if binary.LittleEndian.Uint32(h) != zipCentralSig {
			return fail(at, ErrMalformed, "central directory record %d has no signature", i)
		}
		nameLen := int(binary.LittleEndian.Uint16(h[28:]))
		extraLen := int(binary.LittleEndian.Uint16(h[30:]))
		commentLen := int(binary.LittleEndian.Uint16(h[32:]))
		recLen := zipCentralLen + nameLen + extraLen + commentLen
		if recLen > len(dir)-p {
			return fail(at, ErrTruncated, "central directory record %d (%d bytes) runs past the end of the directory", i, recLen)
		}
		e := zipEntry{
			Name:      string(h[zipCentralLen : zipCentralLen+nameLen]),
			Flags:     binary.LittleEndian.Uint16(h[8:]),
			Method:    binary.LittleEndian.Uint16(h[10:]),
			CompSize:  int64(binary.LittleEndian.Uint32(h[20:])),
			Size:      int64(binary.LittleEndian.Uint32(h[24:])),
			HeaderOff: int64(binary.LittleEndian.Uint32(h[42:])),
			RecordOff: at,
		}
		if err := e.zip64(h[zipCentralLen+nameLen:zipCentralLen+nameLen+extraLen], binary.LittleEndian.Uint16(h[34:])); err != nil {
			return fail(at, ErrMalformed, "entry %q: %v", e.Name, err)
		}
		if e.HeaderOff > int64(dirOff) || e.CompSize > int64(dirOff)-e.HeaderOff {
			return fail(at, ErrOutOfRange, "entry %q: data at %d (+%d bytes) does not lie before the central directory at %d", e.Name, e.HeaderOff, e.CompSize, dirOff)
		}
		if _, dup := z.byName[e.Name]; dup {
			return fail(at, ErrMalformed, "duplicate entry %q", e.Name)
		}
		z.byName[e.Name] = len(z.Entries)
		z.Entries = append(z.Entries, e)
		p += recLen
	}
	return z, nil
}

// zip64 replaces the saturated 32-bit fields of e by the values of the zip64
// extended information field (id 1), which holds, in this order, those of
// the uncompressed size, compressed size, header offset and disk number
// that are saturated.
func (e *zipEntry) zip64(extra []byte, disk uint16) error {
	needSize, needComp, needOff := e.Size == 0xffffffff, e.CompSize == 0xffffffff, e.HeaderOff == 0xffffffff
	for len(extra) >= 4 {
		id, n := binary.LittleEndian.Uint16(extra), int(binary.LittleEndian.Uint16(extra[2:]))
		if n > len(extra)-4 {
			return errors.New("extra field runs past the end of the record")
		}
		field := extra[4 : 4+n]
		extra = extra[4+n:]
		if id != 1 {
			continue
		}
		for _, f := range []struct {
			need bool
			v    *int64
		}{{needSize, &e.Size}, {needComp, &e.CompSize}, {needOff, &e.HeaderOff}} {
			if !f.need {
				continue
			}
			if len(field) < 8 {
				return errors.New("zip64 field too short")
			}
			v := binary.LittleEndian.Uint64(field)
			if v > maxInt64 {
				return fmt.Errorf("zip64 value %d out of range", v)
			}
			*f.v = int64(v)
			field = field[8:]
		}
		needSize, needComp, needOff = false, false, false
	}
	if needSize || needComp || needOff {
		return errors.New("saturated size or offset without a zip64 field")
	}
	if disk != 0 && disk != 0xffff {
		return fmt.Errorf("starts on disk %d", disk)
	}
	return nil
}

// entry returns the entry with the given name.
func (z *zipArchive) entry(name string) (*zipEntry, bool) {
	i, ok := z.byName[name]
	if !ok {
		return nil, false
	}
	return &z.Entries[i], true
}

// dataOffset reads the local header of e and returns the offset of its data.
// The data must end before the central directory.
func (z *zipArchive) dataOffset(e *zipEntry) (int64, error) {
	if e.dataOff > 0 || e.dataOffErr != nil {
		return e.dataOff, e.dataOffErr
	}
	e.dataOff, e.dataOffErr = z.readLocal(e)
	return e.dataOff, e.dataOffErr
}

func (z *zipArchive) readLocal(e *zipEntry) (int64, error) {
	h, err := readExact(z.r, e.HeaderOff, zipLocalLen, z.size, z.format, "zip local header of "+e.Name)
	if err != nil {
		return 0, err
	}
	if binary.LittleEndian.Uint32(h) != zipLocalSig {
		return 0, formatErr(z.format, e.HeaderOff, ErrMalformed, "zip: entry %q: no local header signature", e.Name)
	}
	nameLen := int64(binary.LittleEndian.Uint16(h[26:]))
	extraLen := int64(binary.LittleEndian.Uint16(h[28:]))
	if m := binary.LittleEndian.Uint16(h[8:]); m != e.Method {
		return 0, formatErr(z.format, e.HeaderOff+8, ErrMalformed, "zip: entry %q: local header method %d, central directory %d", e.Name, m, e.Method)
	}
	if nameLen != int64(len(e.Name)) {
		return 0, formatErr(z.format, e.HeaderOff+26, ErrMalformed, "zip: entry %q: local header name differs from the central directory", e.Name)
	}
	name, err := readExact(z.r, e.HeaderOff+zipLocalLen, nameLen, z.size, z.format, "zip local name of "+e.Name)
	if err != nil {
		return 0, err
	}
	if string(name) != e.Name {
		return 0, formatErr(z.format, e.HeaderOff+zipLocalLen, ErrMalformed, "zip: entry %q: local header name %q differs from the central directory", e.Name, name)
	}
	off := e.HeaderOff + zipLocalLen + nameLen + extraLen
	if off > z.DirOff || e.CompSize > z.DirOff-off {
		return 0, formatErr(z.format, e.HeaderOff, ErrOutOfRange, "zip: entry %q: data [%d,+%d) runs into the central directory at %d", e.Name, off, e.CompSize, z.DirOff)
	}
	if e.Method == zipStored && e.CompSize != e.Size && e.Flags&zipFlagEncrypted == 0 {
		return 0, formatErr(z.format, e.RecordOff, ErrMalformed, "zip: stored entry %q has compressed size %d but size %d", e.Name, e.CompSize, e.Size)
	}
	return off, nil
}

// storedData returns the byte range of e's data when e is stored
// uncompressed and unencrypted; ok is false otherwise.
func (z *zipArchive) storedData(e *zipEntry) (off int64, ok bool, err error) {
	if e.Method != zipStored || e.Flags&zipFlagEncrypted != 0 {
		return 0, false, nil
	}
	off, err = z.dataOffset(e)
	return off, err == nil, err
}

// read returns the uncompressed contents of e, which must be stored or
// deflated and at most limit bytes long. base is the file offset of the
// returned bytes when they are stored, or -1 when they were inflated.
func (z *zipArchive) read(e *zipEntry, limit int64) (b []byte, base int64, err error) {
	if e.Flags&zipFlagEncrypted != 0 {
		return nil, 0, formatErr(z.format, e.RecordOff, ErrUnsupported, "zip: entry %q is encrypted", e.Name)
	}
	if e.Size > limit {
		return nil, 0, formatErr(z.format, e.RecordOff, ErrTooLarge, "zip: entry %q of %d bytes exceeds the limit of %d bytes", e.Name, e.Size, limit)
	}
	off, err := z.dataOffset(e)
	if err != nil {
		return nil, 0, err
	}
	switch e.Method {
	case zipStored:
		b, err := readExact(z.r, off, e.Size, z.size, z.format, "zip entry "+e.Name)
		return b, off, err
	case zipDeflated:
		fr := flate.NewReader(io.NewSectionReader(z.r, off, e.CompSize))
		defer fr.Close()
		var buf bytes.Buffer
		grow := e.Size
		if e.CompSize < grow/1032 {
			grow = e.CompSize*1032 + 64 // deflate expands at most ~1032:1
		}
		buf.Grow(int(grow) + bytes.MinRead) // room for the read that finds the end: ReadFrom doubles the buffer otherwise
		n, err := io.Copy(&buf, io.LimitReader(fr, e.Size+1))
		if err != nil {
			var ce flate.CorruptInputError
			if errors.As(err, &ce) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, 0, formatErr(z.format, off, ErrMalformed, "zip: entry %q: corrupt deflate data: %v", e.Name, err)
			}
			return nil, 0, fmt.Errorf("checkpoint: %s: zip: reading entry %q: %w", z.format, e.Name, err)
		}
		if n != e.Size {
			return nil, 0, formatErr(z.format, off, ErrMalformed, "zip: entry %q inflates to more than %d bytes or fewer", e.Name, e.Size)
		}
		return buf.Bytes(), -1, nil
	}
	return nil, 0, formatErr(z.format, e.RecordOff, ErrUnsupported, "zip: entry %q uses compression method %d", e.Name, e.Method)
}

// zipFirstEntry parses the first local header at the start of head: the
// member's name, its compression method and, where its data starts inside
// head, the offset of the data. ok is false when head does not start with a
// complete local header.
func zipFirstEntry(head []byte) (name string, method uint16, dataOff int, ok bool) {
	if len(head) < zipLocalLen || binary.LittleEndian.Uint32(head) != zipLocalSig {
		return "", 0, 0, false
	}
	n := int(binary.LittleEndian.Uint16(head[26:]))
	m := int(binary.LittleEndian.Uint16(head[28:]))
	if zipLocalLen+n > len(head) {
		return "", 0, 0, false
	}
	return string(head[zipLocalLen : zipLocalLen+n]), binary.LittleEndian.Uint16(head[8:]), zipLocalLen + n + m, true
}

// zipDir returns the part of name before its first "/", and the rest; ok
// is false when name has no "/" or starts with one.
func zipDir(name string) (dir, rest string, ok bool) {
	dir, rest, ok = strings.Cut(name, "/")
	return dir, rest, ok && dir != ""
}

// readExact reads n bytes at off, which must lie inside the file of the
// given size.
func readExact(r io.ReaderAt, off, n, size int64, format, what string) ([]byte, error) {
	if off < 0 || n < 0 || off > size || n > size-off {
		return nil, formatErr(format, max(off, 0), ErrTruncated, "%s [%d,+%d) runs past end of file (size %d)", what, off, n, size)
	}
	b := make([]byte, n)
	m, err := r.ReadAt(b, off)
	if m == len(b) {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return nil, formatErr(format, off+int64(m), ErrTruncated, "file ends at %d, before its size %d", off+int64(m), size)
	}
	return nil, fmt.Errorf("checkpoint: %s: reading at %d: %w", format, off, err)
}
