package checkpoint

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"neuralzip/dtype"
)

// TF.js (TensorFlow.js) models: a JSON file, usually model.json, that holds
// the model ("modelTopology": a GraphDef for "format": "graph-model", a Keras
// config for "layers-model") and a "weightsManifest", and binary weight files
// beside it.
//
// The manifest is a list of groups {"paths": [file, ...], "weights":
// [{"name", "shape", "dtype", "quantization"?}, ...]}. The weights of a group
// are concatenated in manifest order, little-endian and without padding, into
// one byte stream that is cut into the group's files in order (the converter
// cuts every 4 MiB, so a weight may straddle two or more files). A weight
// occupies numel × the size of its stored type: quantization.dtype
// ("float16", "uint8", "uint16") when present, else dtype ("float32",
// "int32", "bool", "uint8", "uint16", "float16", "complex64"). A "string"
// weight is numel strings, each a little-endian uint32 byte length followed
// by the bytes.
//
// The layout of model.json is one opaque segment; Layout.Companions lists
// every weight file (DataFormat "tfjs-weights") with the tensors it holds.
// Tensor types are the stored ones: float16-quantised float32 weights are F16
// tensors and affine-quantised ones (value = min + scale·q) are U8 or U16
// tensors, because those are the bytes in the file; Segment.Type says both
// ("float32 as uint8"). A weight that straddles files becomes one tensor per
// file that holds at least one whole element of it, with a 1-D shape: the
// first keeps the weight's name, the next are "<name>#1", "<name>#2", ...
// (these built names are bounded in all by a budget proportional to the size
// of model.json, see nameBudget). The bytes of an element cut by a file
// boundary are opaque. Strings are opaque
// too; bytes after the group's last weight are opaque.
//
// Where the group's stream is cut depends on the files' sizes, which
// model.json does not record. Open, which sees model.json alone, places a
// group of one file exactly; for a group of n > 1 files it assumes the
// converter's default (every file but the last holds 4 MiB) when the group's
// size agrees with that, and otherwise describes no tensors in those files.
// The size of a string weight is only known from its data, so Open describes
// no tensors after a string weight of the group. [OpenPath] places every group
// by the real sizes of its files and reads the length prefixes of strings;
// files too small for their group are an error.
//
// Match: the first non-space byte (after an optional UTF-8 byte order mark)
// is '{', and the first HeadSize bytes contain the key "weightsManifest" or
// "modelTopology", or the pair "format": "graph-model" or "layers-model".
// Writers put "format" or "modelTopology" first, so the rule holds even when
// the manifest comes after megabytes of topology; a file that has none of
// them in its first 4 KiB is not recognised (and is compressed as opaque
// bytes).

func init() {
	Register(Format{
		Name:       FormatTFJS,
		Extensions: []string{".json"},
		Match:      matchTFJS,
		Open:       openTFJS,
	})
}

const (
	// FormatTFJS is the Layout.Format of a TF.js model.json.
	FormatTFJS = "tfjs"

	// FormatTFJSWeights is the Layout.Format of a TF.js weight file, as
	// OpenPath names it from the model.json that describes it.
	FormatTFJSWeights = "tfjs-weights"
)

const (
	// tfjsMaxSize is the largest model.json accepted.
	tfjsMaxSize = 200 << 20

	// tfjsShardSize is the size of every weight file but the last of a group
	// as the TF.js converter writes them by default
	// (--weight_shard_size_bytes).
	tfjsShardSize = 4 << 20
)

var utf8BOM = []byte("\xef\xbb\xbf")

func matchTFJS(head []byte, size int64) bool {
	h := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(h) == 0 || h[0] != '{' {
		return false
	}
	if bytes.Contains(h, []byte(`"weightsManifest"`)) || bytes.Contains(h, []byte(`"modelTopology"`)) {
		return true
	}
	for rest := h; ; {
		i := bytes.Index(rest, []byte(`"format"`))
		if i < 0 {
			return false
		}
		rest = rest[i+len(`"format"`):]
		v := bytes.TrimLeft(rest, " \t\r\n")
		if len(v) == 0 || v[0] != ':' {
			continue
		}
		v = bytes.TrimLeft(v[1:], " \t\r\n")
		if bytes.HasPrefix(v, []byte(`"graph-model"`)) || bytes.HasPrefix(v, []byte(`"layers-model"`)) {
			return true
		}
	}
}

// A tfjsWeight is one entry of a weights manifest.
type tfjsWeight struct {
	name   string
	dt     dtype.DType // stored element type; Invalid for strings
	typ    string      // Segment.Type
	shape  []int64
	numel  int64
	length int64 // bytes in the group's stream; -1 for strings
	at     int64 // offset of the entry in model.json
}

// A tfjsGroup is one group of a weights manifest.
type tfjsGroup struct {
	paths   []string
	weights []tfjsWeight
	length  int64 // bytes of the weights before the first string
	strings bool  // whether the group holds a string weight
	at      int64 // offset of the group in model.json
}

func openTFJS(r io.ReaderAt, size int64) (*Layout, error) {
	l, groups, err := readTFJS(r, size)
	if err != nil {
		return nil, err
	}
	l.Companions, err = tfjsCompanions(groups, size, nil)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// tfjsPlaceInShards gives f, a TF.js model.json that Open has read, the
// companions that OpenPath needs: every group placed in its weight files by
// their real sizes, string weights sized from their data. A missing weight
// file is an error wrapping fs.ErrNotExist; weight files too small for their
// group are an ErrTruncated FormatError.
func tfjsPlaceInShards(f *File) error {
	if f == nil || f.Layout == nil || f.Layout.Format != FormatTFJS {
		return nil
	}
	mf, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer mf.Close()
	st, err := mf.Stat()
	if err != nil {
		return err
	}
	_, groups, err := readTFJS(mf, st.Size())
	if err != nil {
		return err
	}
	comps, err := tfjsCompanions(groups, st.Size(), os.DirFS(filepath.Dir(f.Path)))
	if err != nil {
		return err
	}
	f.Layout.Companions = comps
	return nil
}

// readTFJS reads model.json: its layout (without companions) and its
// weights manifest.
func readTFJS(r io.ReaderAt, size int64) (*Layout, []tfjsGroup, error) {
	const format = FormatTFJS
	if size > tfjsMaxSize {
		return nil, nil, formatErr(format, 0, ErrTooLarge, "model.json of %d bytes exceeds the limit of %d bytes", size, tfjsMaxSize)
	}
	b, err := newCursor(r, size, format).next(size, "model.json")
	if err != nil {
		return nil, nil, err
	}
	if !utf8.Valid(b) {
		i := 0
		for i < len(b) {
			c, n := utf8.DecodeRune(b[i:])
			if c == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, nil, formatErr(format, int64(i), ErrMalformed, "model.json is not valid UTF-8")
	}
	sc := &jsonScanner{b: b, format: format}
	if bytes.HasPrefix(b, utf8BOM) {
		sc.i = len(utf8BOM)
	}
	if sc.peek() != '{' {
		return nil, nil, sc.errorf(ErrMalformed, "model.json is not a JSON object")
	}
	sc.i++
	var groups []tfjsGroup
	meta := map[string]string{}
	seen := map[string]bool{}
	err = sc.members(func(key string, at int64) error {
		switch key {
		case "weightsManifest", "modelTopology", "format", "generatedBy", "convertedBy":
			if seen[key] {
				return formatErr(format, at, ErrMalformed, "duplicate key %q", key)
			}
			seen[key] = true
		}
		switch key {
		case "weightsManifest":
			var err error
			groups, err = tfjsManifest(sc)
			return err
		case "format", "generatedBy", "convertedBy":
			if sc.peek() == '"' {
				v, err := sc.str()
				meta[key] = v
				return err
			}
		}
		return sc.skipValue(0)
	})
	if err != nil {
		return nil, nil, err
	}
	sc.skipSpace()
	if sc.i < len(b) {
		return nil, nil, sc.errorf(ErrMalformed, "unexpected data after the JSON object")
	}
	if err := tfjsCheck(groups); err != nil {
		return nil, nil, err
	}
	l := &Layout{Format: format, Size: size}
	if size > 0 {
		l.Segments = []Segment{{Offset: 0, Length: size}}
	}
	if len(meta) > 0 {
		l.Metadata = meta
	}
	return l, groups, nil
}

// tfjsManifest reads the weights manifest: an array of groups, or null.
func tfjsManifest(sc *jsonScanner) ([]tfjsGroup, error) {
	if sc.peek() == 'n' {
		return nil, sc.literal("null")
	}
	if sc.peek() != '[' {
		return nil, sc.errorf(ErrMalformed, "weightsManifest is not an array")
	}
	sc.i++
	groups := []tfjsGroup{}
	if sc.peek() == ']' {
		sc.i++
		return groups, nil
	}
	for {
		g, err := tfjsGroupEntry(sc, len(groups))
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
		more, err := sc.next(']')
		if err != nil || !more {
			return groups, err
		}
	}
}

// tfjsGroupEntry reads one group {"paths", "weights"}; other fields are
// skipped.
func tfjsGroupEntry(sc *jsonScanner, index int) (tfjsGroup, error) {
	const format = FormatTFJS
	sc.skipSpace()
	g := tfjsGroup{at: sc.off()}
	if sc.peek() != '{' {
		return g, sc.errorf(ErrMalformed, "weightsManifest[%d] is not an object", index)
	}
	sc.i++
	var paths, weights bool
	err := sc.members(func(key string, at int64) error {
		switch key {
		case "paths":
			if paths {
				return formatErr(format, at, ErrMalformed, "weightsManifest[%d]: duplicate field %q", index, key)
			}
			paths = true
			return sc.elements(func() error {
				pat := sc.off()
				if sc.peek() != '"' {
					return sc.errorf(ErrMalformed, "weightsManifest[%d]: path is not a string", index)
				}
				p, err := sc.str()
				if err != nil {
					return err
				}
				if !ValidCompanionName(p) {
					return formatErr(format, pat, ErrMalformed, "weight file path %q is not a relative path inside the model's directory", p)
				}
				g.paths = append(g.paths, p)
				return nil
			})
		case "weights":
			if weights {
				return formatErr(format, at, ErrMalformed, "weightsManifest[%d]: duplicate field %q", index, key)
			}
			weights = true
			return sc.elements(func() error {
				w, err := tfjsWeightEntry(sc)
				if err != nil {
					return err
				}
				g.weights = append(g.weights, w)
				return nil
			})
		}
		return sc.skipValue(0)
	})
	if err != nil {
		return g, err
	}
	if !paths || !weights {
		return g, formatErr(format, g.at, ErrMalformed, "weightsManifest[%d] lacks \"paths\" or \"weights\"", index)
	}
	return g, nil
}

// tfjsWeightEntry reads one weight {"name", "shape", "dtype",
// "quantization"?}; other fields are skipped.
func tfjsWeightEntry(sc *jsonScanner) (tfjsWeight, error) {
	const format = FormatTFJS
	sc.skipSpace()
	w := tfjsWeight{at: sc.off()}
	if sc.peek() != '{' {
		return w, sc.errorf(ErrMalformed, "weight entry is not an object")
	}
	sc.i++
	var hasName bool
	var dtName, qName string
	var hasQ bool
	fail := func(sentinel error, msg string, args ...any) (tfjsWeight, error) {
		return w, formatErr(format, w.at, sentinel, "weight "+strconv.Quote(w.name)+": "+msg, args...)
	}
	err := sc.members(func(key string, at int64) error {
		dup := false
		var err error
		switch key {
		case "name":
			dup = hasName
			hasName = true
			if sc.peek() != '"' {
				return formatErr(format, at, ErrMalformed, "weight name is not a string")
			}
			w.name, err = sc.str()
		case "shape":
			dup = w.shape != nil
			w.shape, err = sc.counts(func() string { return "weight " + strconv.Quote(w.name) + ": shape" })
		case "dtype":
			dup = dtName != ""
			if sc.peek() != '"' {
				return formatErr(format, at, ErrMalformed, "weight %q: dtype is not a string", w.name)
			}
			if dtName, err = sc.str(); err == nil && dtName == "" {
				return formatErr(format, at, ErrUnsupported, "weight %q: empty dtype", w.name)
			}
		case "quantization":
			dup = hasQ
			hasQ = true
			if sc.peek() == 'n' {
				hasQ = false
				return sc.literal("null")
			}
			qName, err = tfjsQuantization(sc, w.name)
		default:
			err = sc.skipValue(0)
		}
		if err == nil && dup {
			err = formatErr(format, at, ErrMalformed, "weight %q: duplicate field %q", w.name, key)
		}
		return err
	})
	if err != nil {
		return w, err
	}
	switch {
	case !hasName:
		return fail(ErrMalformed, "missing name")
	case w.name == "":
		return fail(ErrMalformed, "empty name")
	case w.shape == nil:
		return fail(ErrMalformed, "missing shape")
	case dtName == "":
		return fail(ErrMalformed, "missing dtype")
	}
	stored := dtName
	w.typ = dtName
	if hasQ {
		switch qName {
		case "uint8", "uint16", "float16":
		default:
			return fail(ErrUnsupported, "unknown quantization dtype %q", qName)
		}
		stored = qName
		w.typ = dtName + " as " + qName
	}
	var ok bool
	w.numel, ok = numElements(w.shape)
	if !ok {
		return fail(ErrTooLarge, "element count of shape %v overflows int64", w.shape)
	}
	if stored == "string" {
		w.length = -1
		return w, nil
	}
	w.dt = tfjsDType(stored)
	if w.dt == dtype.Invalid {
		return fail(ErrUnsupported, "unknown dtype %q", stored)
	}
	if w.length, ok = w.dt.ByteLen(w.numel); !ok {
		return fail(ErrTooLarge, "size of %d %s elements overflows int64", w.numel, stored)
	}
	return w, nil
}

// tfjsQuantization reads a quantization object and returns its dtype.
func tfjsQuantization(sc *jsonScanner, name string) (string, error) {
	const format = FormatTFJS
	sc.skipSpace()
	at := sc.off()
	if sc.peek() != '{' {
		return "", sc.errorf(ErrMalformed, "weight %q: quantization is not an object", name)
	}
	sc.i++
	var dt string
	seen := false
	err := sc.members(func(key string, kat int64) error {
		if key != "dtype" {
			return sc.skipValue(0)
		}
		if seen {
			return formatErr(format, kat, ErrMalformed, "weight %q: duplicate quantization dtype", name)
		}
		seen = true
		if sc.peek() != '"' {
			return formatErr(format, kat, ErrMalformed, "weight %q: quantization dtype is not a string", name)
		}
		var err error
		dt, err = sc.str()
		return err
	})
	if err == nil && !seen {
		err = formatErr(format, at, ErrMalformed, "weight %q: quantization has no dtype", name)
	}
	return dt, err
}

// tfjsDType maps a TF.js dtype name to a DType, Invalid if unknown.
func tfjsDType(s string) dtype.DType {
	switch s {
	case "float32":
		return dtype.F32
	case "float16":
		return dtype.F16
	case "int32":
		return dtype.I32
	case "uint8":
		return dtype.U8
	case "uint16":
		return dtype.U16
	case "bool":
		return dtype.Bool
	case "complex64":
		return dtype.C64
	}
	return dtype.Invalid
}

// tfjsCheck checks the manifest as a whole: weight names unique, every
// weight file named once, group sizes that fit in int64, a file for every
// group that holds bytes. It sets each group's length and strings.
func tfjsCheck(groups []tfjsGroup) error {
	const format = FormatTFJS
	names := map[string]struct{}{}
	paths := map[string]struct{}{}
	for gi := range groups {
		g := &groups[gi]
		for _, p := range g.paths {
			if _, dup := paths[p]; dup {
				return formatErr(format, g.at, ErrMalformed, "weight file %q is listed twice", p)
			}
			paths[p] = struct{}{}
		}
		for _, w := range g.weights {
			if _, dup := names[w.name]; dup {
				return formatErr(format, w.at, ErrMalformed, "duplicate weight %q", w.name)
			}
			names[w.name] = struct{}{}
			if w.length < 0 {
				g.strings = true
				continue
			}
			if g.strings {
				continue
			}
			if w.length > maxInt64-g.length {
				return formatErr(format, w.at, ErrTooLarge, "weightsManifest[%d]: size of the group overflows int64 at weight %q", gi, w.name)
			}
			g.length += w.length
		}
		if len(g.paths) == 0 && (g.length > 0 || g.strings) {
			return formatErr(format, g.at, ErrMalformed, "weightsManifest[%d] holds weights but names no weight files", gi)
		}
	}
	return nil
}

// A tfjsShard is one weight file of a group and the range of the group's
// stream it holds.
type tfjsShard struct {
	name       string
	start, end int64 // [start, end) in the group's stream
}

// tfjsCompanions places the weights of every group of a model.json of size
// bytes in its files. With fsys, the files are read from it: their sizes cut
// the streams and string lengths are read from them. Without, sizes are
// assumed as the file comment describes, and groups are described up to
// their first string. The names it builds for the parts of weights that
// span files ("<name>#1", ...) are charged to a nameBudget of size.
func tfjsCompanions(groups []tfjsGroup, size int64, fsys fs.FS) ([]Companion, error) {
	const format = FormatTFJS
	nPaths := 0
	for _, g := range groups {
		nPaths += len(g.paths)
	}
	comps := make([]Companion, 0, nPaths)
	budget := newNameBudget(size)
	for gi, g := range groups {
		shards := make([]tfjsShard, len(g.paths))
		segs := make([][]Segment, len(g.paths))
		for i, p := range g.paths {
			shards[i].name = p
			segs[i] = []Segment{} // not nil: the file is described by model.json
		}
		known := true
		if fsys != nil {
			var pos int64
			for i, p := range g.paths {
				st, err := fs.Stat(fsys, p)
				if err != nil {
					return nil, fmt.Errorf("checkpoint: %s: weight file %q: %w", format, p, err)
				}
				if !st.Mode().IsRegular() {
					return nil, fmt.Errorf("checkpoint: %s: weight file %q is not a regular file", format, p)
				}
				if st.Size() > maxInt64-pos {
					return nil, formatErr(format, g.at, ErrTooLarge, "weightsManifest[%d]: the sizes of its weight files overflow int64", gi)
				}
				shards[i] = tfjsShard{name: p, start: pos, end: pos + st.Size()}
				pos += st.Size()
			}
		} else {
			known = tfjsAssumeSizes(g, shards)
		}
		if known && len(shards) > 0 {
			if err := tfjsPlace(gi, g, shards, segs, fsys, &budget); err != nil {
				return nil, err
			}
		}
		for i, p := range g.paths {
			comps = append(comps, Companion{Name: p, Segments: segs[i], DataFormat: FormatTFJSWeights})
		}
	}
	slices.SortFunc(comps, func(a, b Companion) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return comps, nil
}

// tfjsAssumeSizes sets the stream ranges of a group's files when model.json
// alone is known: one file holds everything; n > 1 files hold 4 MiB each but
// the last when the group's size (without strings) agrees with that. It
// reports false when the cuts cannot be inferred.
func tfjsAssumeSizes(g tfjsGroup, shards []tfjsShard) bool {
	n := int64(len(shards))
	switch {
	case n == 0:
		return false
	case n == 1:
		shards[0].end = maxInt64
		return true
	case g.strings || g.length == 0 || (g.length-1)/tfjsShardSize != n-1:
		return false // not (n-1)·4 MiB < length ≤ n·4 MiB
	}
	for i := range shards {
		shards[i].start = int64(i) * tfjsShardSize
		shards[i].end = shards[i].start + tfjsShardSize
	}
	shards[n-1].end = maxInt64
	return true
}

// tfjsPlace cuts the weights of group gi into tensor segments of its files.
// With fsys, string weights are sized by reading them and the files must
// hold the whole group; without, placing stops at the first string. The
// names of the parts of weights that span files are charged to budget.
func tfjsPlace(gi int, g tfjsGroup, shards []tfjsShard, segs [][]Segment, fsys fs.FS, budget *nameBudget) error {
	const format = FormatTFJS
	total := shards[len(shards)-1].end
	// Weight names are unique, and "<name>#<k>" of one weight cannot equal
	// "<other>#<k'>" of another (the last '#' splits both the same way), so
	// a file can only get one tensor name twice when a part of a weight is
	// named like a weight whose name holds a '#': only those names are
	// tracked, per file.
	var clash map[string]struct{} // names of weights that hold a '#'
	for _, w := range g.weights {
		if strings.Contains(w.name, "#") {
			if clash == nil {
				clash = make(map[string]struct{})
			}
			clash[w.name] = struct{}{}
		}
	}
	type fileName struct {
		file int
		name string
	}
	names := make(map[fileName]struct{}) // the clash names of each file
	emit := func(j int, s Segment) error {
		if _, ok := clash[s.Name]; ok {
			k := fileName{j, s.Name}
			if _, dup := names[k]; dup {
				return formatErr(format, -1, ErrMalformed, "tensor name %q occurs twice in weight file %q", s.Name, shards[j].name)
			}
			names[k] = struct{}{}
		}
		s.Offset -= shards[j].start
		segs[j] = append(segs[j], s)
		return nil
	}
	var pos int64
	j := 0 // the first file whose range ends after pos, or the last
	for _, w := range g.weights {
		n := w.length
		if n < 0 {
			if fsys == nil {
				return nil
			}
			var err error
			if n, err = tfjsStringBytes(fsys, shards, pos, w); err != nil {
				return err
			}
		}
		if n > total-pos {
			return formatErr(format, w.at, ErrTruncated, "weightsManifest[%d]: weight %q needs bytes [%d,%d) of the group, but its %d weight files hold %d bytes",
				gi, w.name, pos, uint64(pos)+uint64(n), len(shards), total)
		}
		for j < len(shards)-1 && shards[j].end <= pos {
			j++
		}
		switch {
		case w.length < 0:
			// a string weight: opaque
		case n == 0:
			if err := emit(j, Segment{Name: w.name, DType: w.dt, Type: w.typ, Shape: w.shape, Offset: pos}); err != nil {
				return err
			}
		case pos+n <= shards[j].end:
			if err := emit(j, Segment{Name: w.name, DType: w.dt, Type: w.typ, Shape: w.shape, Offset: pos, Length: n}); err != nil {
				return err
			}
		default:
			e := int64(w.dt.Size())
			part := 0
			for k := j; k < len(shards) && shards[k].start < pos+n; k++ {
				a, b := max(pos, shards[k].start), min(pos+n, shards[k].end)
				i0, i1 := (a-pos+e-1)/e, (b-pos)/e
				if i1 <= i0 {
					continue
				}
				name := w.name
				if part > 0 {
					suffix := "#" + strconv.Itoa(part)
					if !budget.take(len(name) + len(suffix)) {
						return budget.err(format, w.at)
					}
					name += suffix
				}
				part++
				if err := emit(k, Segment{Name: name, DType: w.dt, Type: w.typ, Shape: []int64{i1 - i0}, Offset: pos + i0*e, Length: (i1 - i0) * e}); err != nil {
					return err
				}
			}
		}
		pos += n
	}
	return nil
}

// tfjsStringBytes returns the size of string weight w, which starts at
// stream offset pos of a group whose files are shards: numel times a
// little-endian uint32 length and that many bytes.
func tfjsStringBytes(fsys fs.FS, shards []tfjsShard, pos int64, w tfjsWeight) (int64, error) {
	const format = FormatTFJS
	total := shards[len(shards)-1].end
	if w.numel > (total-pos)/4 {
		return 0, formatErr(format, w.at, ErrTruncated, "string weight %q of %d strings needs more than the %d bytes left in its weight files", w.name, w.numel, total-pos)
	}
	s := &tfjsStream{fsys: fsys, shards: shards, off: pos}
	defer s.close()
	br := bufio.NewReaderSize(s, 64<<10)
	var n int64
	var lb [4]byte
	for i := int64(0); i < w.numel; i++ {
		if _, err := io.ReadFull(br, lb[:]); err != nil {
			return 0, s.fail(err, w, pos+n)
		}
		m := int64(binary.LittleEndian.Uint32(lb[:]))
		n += 4
		if m > total-pos-n {
			return 0, formatErr(format, w.at, ErrTruncated, "string %d of weight %q (%d bytes at byte %d of the group) runs past the end of its weight files", i, w.name, m, pos+n)
		}
		if _, err := br.Discard(int(m)); err != nil {
			return 0, s.fail(err, w, pos+n)
		}
		n += m
	}
	return n, nil
}

// A tfjsStream reads the stream of a group sequentially from its files.
type tfjsStream struct {
	fsys   fs.FS
	shards []tfjsShard
	off    int64 // stream offset of the next byte
	j      int   // file being read
	f      fs.File
	err    error // the read error that stopped the stream, if any
}

func (s *tfjsStream) Read(p []byte) (int, error) {
	for s.j < len(s.shards) {
		sh := s.shards[s.j]
		if s.off >= sh.end {
			s.close()
			s.j++
			continue
		}
		if s.f == nil {
			f, err := s.fsys.Open(sh.name)
			if err != nil {
				s.err = fmt.Errorf("checkpoint: %s: weight file %q: %w", FormatTFJS, sh.name, err)
				return 0, s.err
			}
			s.f = f
			skip := s.off - sh.start
			if sk, ok := f.(io.Seeker); ok {
				_, err = sk.Seek(skip, io.SeekStart)
			} else {
				_, err = io.CopyN(io.Discard, f, skip)
			}
			if err != nil {
				s.err = fmt.Errorf("checkpoint: %s: weight file %q: %w", FormatTFJS, sh.name, err)
				return 0, s.err
			}
		}
		n, err := s.f.Read(p[:min(int64(len(p)), sh.end-s.off)])
		s.off += int64(n)
		if n > 0 {
			return n, nil
		}
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			err = formatErr(FormatTFJS, -1, ErrTruncated, "weight file %q ended before its size %d", sh.name, sh.end-sh.start)
		} else {
			err = fmt.Errorf("checkpoint: %s: weight file %q: %w", FormatTFJS, sh.name, err)
		}
		s.err = err
		return 0, err
	}
	return 0, io.EOF
}

func (s *tfjsStream) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// fail turns a read error from the stream into the error to return.
func (s *tfjsStream) fail(err error, w tfjsWeight, at int64) error {
	if s.err != nil {
		return s.err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return formatErr(FormatTFJS, w.at, ErrTruncated, "string weight %q runs past the end of its weight files at byte %d of the group", w.name, at)
	}
	return fmt.Errorf("checkpoint: %s: weight %q: %w", FormatTFJS, w.name, err)
}
