package prog

import "encoding/binary"

// StreamLayout is where one field stream of a records payload lies, as
// Layout finds it: for inspection (nzip inspect -programs), without
// decoding the symbols.
type StreamLayout struct {
	Field   Field
	Symbols int   // n·Per
	Mode    uint8 // 0 packed, 1 const, 2 huff1, 3 huff4 (the codec's stream modes)
	Start   int   // the mode byte's position in the payload
	End     int   // the byte after the stream
}

// Layout reads the schema and the field streams' positions of a records
// payload src whose block holds length original bytes. It reads mode
// bytes and lengths only; every position is checked against src, and a
// payload Decode would refuse for its framing (unknown type, a length
// that is not a whole number of records, a stream past the end, bytes
// after the last) is an error, never a panic. The streams' bytes plus
// the type byte add up to len(src).
func Layout(src []byte, length int) (*Schema, []StreamLayout, error) {
	s := Type(src)
	if s == nil {
		if len(src) == 0 {
			return nil, nil, errf("empty payload")
		}
		return nil, nil, errf("unknown record type %d", src[0])
	}
	if length < 0 || length > 1<<40 || length%s.Bytes != 0 {
		return nil, nil, errf("%d bytes are not a whole number of %s records", length, s.Name)
	}
	n := length / s.Bytes
	out := make([]StreamLayout, 0, len(s.fields))
	pos := 1
	for _, f := range s.fields {
		st := StreamLayout{Field: f, Symbols: n * f.Per, Start: pos}
		if pos >= len(src) {
			return nil, nil, errf("%s field %s: missing stream", s.Name, f.Name)
		}
		st.Mode = src[pos]
		pos++
		switch st.Mode {
		case modePacked:
			l := packedLen(st.Symbols, f.Width)
			if len(src)-pos < l {
				return nil, nil, errf("%s field %s: packed stream: %d bytes, want %d", s.Name, f.Name, len(src)-pos, l)
			}
			pos += l
		case modeConst:
			if pos >= len(src) || src[pos]>>f.Width != 0 {
				return nil, nil, errf("%s field %s: const stream: no symbol of width %d", s.Name, f.Name, f.Width)
			}
			pos++
		case modeHuff1, modeHuff4:
			l, k := binary.Uvarint(src[pos:])
			if k <= 0 || l > uint64(len(src)-pos-k) {
				return nil, nil, errf("%s field %s: huffman stream: bad length", s.Name, f.Name)
			}
			pos += k + int(l)
		default:
			return nil, nil, errf("%s field %s: stream mode %d", s.Name, f.Name, st.Mode)
		}
		st.End = pos
		out = append(out, st)
	}
	if pos != len(src) {
		return nil, nil, errf("%s payload: %d trailing bytes", s.Name, len(src)-pos)
	}
	return s, out, nil
}
