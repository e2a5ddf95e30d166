package prog

// A records payload (codec/doc.go, "Records blocks"):
//
//	u8 type      the schema's ggml type number
//	streams      one per field of the schema, in order: n·Per symbols
//	             of the field's width, n = the block's length / Bytes
//
// No bytes may follow the last stream.

// maxStreamSymbols bounds the symbols of one field stream in a block
// (BlockRecords): a 4-stream huff0 block's jump table holds sizes below
// 64 KiB, which codes of ≤ 11 bits keep for quarters of 2^17 symbols.
const maxStreamSymbols = 1 << 17

// maxBlockBytes bounds a records block's original bytes.
const maxBlockBytes = 1<<19 - 4

// BlockRecords is the most records the codec puts in one block of s.
func (s *Schema) BlockRecords() int {
	per := 1
	for _, f := range s.fields {
		per = max(per, f.Per)
	}
	return min(maxBlockBytes/s.Bytes, maxStreamSymbols/per)
}

// Encoder codes runs of records. Its zero value is ready; reuse it (no
// allocations once its buffers have grown).
type Encoder struct {
	st     streamEncoder
	fields [][]byte
}

// Append appends the payload of the records of src, which must be a
// whole number of s's records, to dst.
func (e *Encoder) Append(dst, src []byte, s *Schema) []byte {
	n := len(src) / s.Bytes
	e.fields = grow(e.fields, s, n)
	s.split(src[:n*s.Bytes], n, e.fields)
	dst = append(dst, s.ID)
	for i, f := range s.fields {
		dst = e.st.appendStream(dst, e.fields[i][:n*f.Per], f.Width)
	}
	return dst
}

// grow gives fs one buffer of at least n·Per symbols per field of s.
func grow(fs [][]byte, s *Schema, n int) [][]byte {
	for len(fs) < len(s.fields) {
		fs = append(fs, nil)
	}
	for i, f := range s.fields {
		if cap(fs[i]) < n*f.Per {
			fs[i] = make([]byte, n*f.Per)
		}
		fs[i] = fs[i][:n*f.Per]
	}
	return fs
}

// Decoder decodes records payloads. Its zero value is ready; reuse it.
type Decoder struct {
	st     streamDecoder
	fields [][]byte
}

// Type returns the schema a payload names, or nil.
func Type(src []byte) *Schema {
	if len(src) == 0 {
		return nil
	}
	return byID[src[0]]
}

// Decode decodes the payload src into dst, whose length is the block's
// original length (a whole number of records). Every byte of dst is
// written when it succeeds.
func (d *Decoder) Decode(dst, src []byte) error {
	s := Type(src)
	if s == nil {
		if len(src) == 0 {
			return errf("empty payload")
		}
		return errf("unknown record type %d", src[0])
	}
	if len(dst)%s.Bytes != 0 {
		return errf("%d bytes are not a whole number of %s records", len(dst), s.Name)
	}
	n := len(dst) / s.Bytes
	// a stream takes at least one byte: refuse a payload too short to
	// hold them before making buffers for n records
	if len(src) < 1+len(s.fields) {
		return errf("%s payload of %d bytes", s.Name, len(src))
	}
	d.fields = grow(d.fields, s, n)
	src = src[1:]
	for i, f := range s.fields {
		var err error
		if src, err = d.st.readStream(d.fields[i], src, f.Width); err != nil {
			return errf("%s field %s: %v", s.Name, f.Name, err)
		}
	}
	if len(src) != 0 {
		return errf("%s payload: %d trailing bytes", s.Name, len(src))
	}
	s.merge(dst, n, d.fields)
	return nil
}
