package checkpoint

import "io"

// FormatUnknown is the Layout.Format of files that no registered format
// matches. It is the fallback of [Open], not a registered [Format].
const FormatUnknown = "unknown"

// openUnknown returns the layout of a file whose format is not known: one
// opaque segment covering all of it, or none when it is empty.
func openUnknown(_ io.ReaderAt, size int64) (*Layout, error) {
	l := &Layout{Format: FormatUnknown, Size: size}
	if size > 0 {
		l.Segments = []Segment{{Offset: 0, Length: size}}
	}
	return l, nil
}
