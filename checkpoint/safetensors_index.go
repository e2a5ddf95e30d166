package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// The index of a sharded safetensors model (model.safetensors.index.json):
// a JSON object whose "weight_map" maps each tensor name to the shard file
// that holds it, plus an optional "metadata" object. The index itself is one
// opaque segment; Layout.Shards lists the shard files, and [OpenPath] opens
// them from the index's directory.

func init() {
	Register(Format{
		Name:       FormatSafetensorsIndex,
		Extensions: []string{".safetensors.index.json"},
		Match:      matchSafetensorsIndex,
		Open:       openSafetensorsIndex,
	})
}

// FormatSafetensorsIndex is the Layout.Format of a sharded safetensors index.
const FormatSafetensorsIndex = "safetensors-index"

// indexMaxSize is the largest index file accepted.
const indexMaxSize = 100 << 20

func matchSafetensorsIndex(head []byte, size int64) bool {
	h := bytes.TrimLeft(head, " \t\r\n")
	return len(h) > 0 && h[0] == '{' && bytes.Contains(head, []byte(`"weight_map"`)) &&
		!bytes.Contains(head, []byte(`"weightsManifest"`)) && !bytes.Contains(head, []byte(`"modelTopology"`))
}

func openSafetensorsIndex(r io.ReaderAt, size int64) (*Layout, error) {
	l, _, err := readIndex(r, size)
	return l, err
}

// readIndex reads an index and returns its layout and its weight map.
func readIndex(r io.ReaderAt, size int64) (*Layout, map[string]string, error) {
	const format = FormatSafetensorsIndex
	if size > indexMaxSize {
		return nil, nil, formatErr(format, 0, ErrTooLarge, "index of %d bytes exceeds the limit of %d bytes", size, indexMaxSize)
	}
	c := newCursor(r, size, format)
	data, err := c.next(size, "index")
	if err != nil {
		return nil, nil, err
	}
	var idx struct {
		Metadata  map[string]json.RawMessage `json:"metadata"`
		WeightMap map[string]string          `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, nil, formatErr(format, se.Offset, ErrMalformed, "invalid JSON: %v", err)
		case errors.As(err, &te):
			return nil, nil, formatErr(format, te.Offset, ErrMalformed, "%v", err)
		}
		return nil, nil, formatErr(format, -1, ErrMalformed, "%v", err)
	}
	if idx.WeightMap == nil {
		return nil, nil, formatErr(format, -1, ErrMalformed, "no weight_map object")
	}
	l := &Layout{Format: format, Size: size, Segments: []Segment{{Offset: 0, Length: size}}}
	for name, shard := range idx.WeightMap {
		if name == "" {
			return nil, nil, formatErr(format, -1, ErrMalformed, "empty tensor name in weight_map")
		}
		if !validShardName(shard) {
			return nil, nil, formatErr(format, -1, ErrMalformed, "tensor %q: shard %q is not a plain file name", name, shard)
		}
		l.Shards = append(l.Shards, shard)
	}
	slices.Sort(l.Shards)
	l.Shards = slices.Compact(l.Shards)
	for _, sh := range l.Shards {
		l.Companions = append(l.Companions, Companion{Name: sh, Format: "safetensors"})
	}
	if len(idx.Metadata) > 0 {
		l.Metadata = make(map[string]string, len(idx.Metadata))
		for k, v := range idx.Metadata {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			l.Metadata[k] = s
		}
	}
	return l, idx.WeightMap, nil
}

// validShardName reports whether a shard name is a plain file name that
// stays in the index's directory.
func validShardName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`+"\x00") && filepath.IsLocal(s)
}
