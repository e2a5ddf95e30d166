package checkpoint

import (
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"neuralzip/dtype"
)

// PyTorch zip archives: torch.save files (.pt, .pth, .bin; torch >= 1.6)
// and TorchScript modules (.jit, .pt). All members sit in one top-level
// directory, the archive name (torch.save uses the file's stem, older
// versions "archive"): data.pkl is the pickled object, data/<key> holds the
// bytes of each storage, stored uncompressed; version, byteorder,
// .format_version and .data/* are small text members. TorchScript archives
// add code/ (Python source and debug pickles, often deflated),
// constants.pkl with its storages in constants/, and extra/.
//
// The pickles are read by a bounded unpickler that executes nothing
// (pickle.go). Tensors are recognised by the functions torch pickles them
// with (torch._utils._rebuild_tensor_v2 and relatives, _rebuild_parameter,
// torch._tensor._rebuild_from_type_v2); their storages are the persistent
// ids ('storage', torch.FloatStorage, key, location, numel).
//
// The layout has one tensor segment per stored storage member: its data,
// with the storage's element type, named after the tensor that views it.
// Names are the paths to the tensor through the pickled object: dict keys
// and object attributes joined by ".", list and tuple items by their index
// (a state dict gives its own keys; a TorchScript module its attribute
// paths, "_model.encoder.0.weight"; a pickled nn.Module skips its
// _parameters, _buffers and _modules dicts). Tensors of TorchScript
// constants are named "constants.<index>" (their storages are in
// constants/, or in .data/ in lite-interpreter files). When several tensors
// view one storage (tied weights, views, slices) the segment takes the
// first of their names in byte order and Metadata["storage:<key>"] lists
// all of them as a JSON array (at most torchMaxViews). A storage that no
// tensor reaches is named "storage:<key>"; a data/ member that no pickle
// references is a U8 tensor "storage:<key>". The segment's shape is its
// tensor's when that tensor covers the whole storage contiguously, and
// otherwise the storage's element count. Deflated or encrypted storages are
// opaque, as is everything else: zip headers, descriptors, the pickles,
// code, the central directory.
//
// A storage member must hold exactly numel elements of its type. One that
// is referenced as two types (torch >= 2 can save views of different dtypes
// over one untyped storage) has DType dtype.Invalid, both names in Type
// ("FloatStorage+HalfStorage") and its byte count as Shape. Archives
// written on big-endian machines (byteorder "big") keep their types in Type
// ("FloatStorage (big-endian)") with DType dtype.Invalid, since the float
// codec reads little-endian values. Metadata also gives the archive name
// ("archive"), "torchscript" or "torch.save" ("kind"), and the version and
// byteorder members when present.
//
// Pickles are read up to torchMaxPickle bytes, nested up to torchMaxDepth
// levels, with names of torchNameBudget bytes in all. A file's pickles
// (inflated) and their values take at most pickleBudget(size) bytes of
// memory in all, 64 per byte of the file + 1 MiB, and its tensor names as
// many: a deflated pickle can be a thousand times its file. Beyond that,
// and for anything the format does not allow, Open returns a FormatError.
// Legacy (non-zip) torch.save files and pre-1.4 TorchScript archives
// (model.json) are not read.

func init() {
	Register(Format{
		Name:       formatPyTorch,
		Extensions: []string{".pt", ".pth", ".bin", ".ckpt", ".jit", ".ptl"},
		Match:      matchPyTorch,
		Open:       openPyTorch,
	})
}

const (
	formatPyTorch = "pytorch"

	torchMaxPickle   = 64 << 20 // largest data.pkl or constants.pkl read
	torchMaxDepth    = 256      // nesting of containers and objects in a pickle
	torchMaxDims     = 64       // dimensions of a tensor
	torchMaxRebuild  = 8        // nested _rebuild_from_type_v2 calls
	torchNameBudget  = 64 << 20 // bytes of tensor names built, in all (and at most pickleBudget(size))
	torchMaxViews    = 1024     // names kept per storage for Metadata
	torchMaxTextSize = 64       // version and byteorder members read
)

// torchType is a storage element type.
type torchType struct {
	DType dtype.DType
	Size  int64 // bytes per element
}

// torchTypes maps the storage classes (torch.FloatStorage) and dtypes
// (torch.float32) that persistent ids name to element types. Types that
// package dtype does not cover keep their name with dtype.Invalid.
var torchTypes = map[string]torchType{
	"FloatStorage": {dtype.F32, 4}, "HalfStorage": {dtype.F16, 2}, "BFloat16Storage": {dtype.BF16, 2},
	"DoubleStorage": {dtype.F64, 8}, "LongStorage": {dtype.I64, 8}, "IntStorage": {dtype.I32, 4},
	"ShortStorage": {dtype.I16, 2}, "CharStorage": {dtype.I8, 1}, "ByteStorage": {dtype.U8, 1},
	"BoolStorage": {dtype.Bool, 1}, "ComplexFloatStorage": {dtype.C64, 8},
	"ComplexDoubleStorage": {dtype.Invalid, 16}, "UInt16Storage": {dtype.U16, 2},
	"UInt32Storage": {dtype.U32, 4}, "UInt64Storage": {dtype.U64, 8},
	"QInt8Storage": {dtype.I8, 1}, "QUInt8Storage": {dtype.U8, 1}, "QInt32Storage": {dtype.I32, 4},
	"QUInt4x2Storage": {dtype.Invalid, 1}, "QUInt2x4Storage": {dtype.Invalid, 1},
	"Float8_e4m3fnStorage": {dtype.F8E4M3, 1}, "Float8_e5m2Storage": {dtype.F8E5M2, 1},
	"Float8_e4m3fnuzStorage": {dtype.Invalid, 1}, "Float8_e5m2fnuzStorage": {dtype.Invalid, 1},
	"UntypedStorage": {dtype.U8, 1},

	"float32": {dtype.F32, 4}, "float": {dtype.F32, 4}, "float16": {dtype.F16, 2}, "half": {dtype.F16, 2},
	"bfloat16": {dtype.BF16, 2}, "float64": {dtype.F64, 8}, "double": {dtype.F64, 8},
	"int64": {dtype.I64, 8}, "long": {dtype.I64, 8}, "int32": {dtype.I32, 4}, "int": {dtype.I32, 4},
	"int16": {dtype.I16, 2}, "short": {dtype.I16, 2}, "int8": {dtype.I8, 1}, "uint8": {dtype.U8, 1},
	"uint16": {dtype.U16, 2}, "uint32": {dtype.U32, 4}, "uint64": {dtype.U64, 8}, "bool": {dtype.Bool, 1},
	"complex64": {dtype.C64, 8}, "cfloat": {dtype.C64, 8}, "complex128": {dtype.Invalid, 16},
	"cdouble": {dtype.Invalid, 16}, "float8_e4m3fn": {dtype.F8E4M3, 1}, "float8_e5m2": {dtype.F8E5M2, 1},
	"float8_e4m3fnuz": {dtype.Invalid, 1}, "float8_e5m2fnuz": {dtype.Invalid, 1},
	"qint8": {dtype.I8, 1}, "quint8": {dtype.U8, 1}, "qint32": {dtype.I32, 4},
}

// matchPyTorch wants a zip file whose first member is one that torch writes
// first, inside a top-level directory: data.pkl (torch.save), data/<digits>
// (TorchScript writes its storages first), or a small text member.
func matchPyTorch(head []byte, _ int64) bool {
	name, _, _, ok := zipFirstEntry(head)
	if !ok {
		return false
	}
	_, rest, ok := zipDir(name)
	if !ok {
		return false
	}
	switch rest {
	case "data.pkl", "constants.pkl", "version", "byteorder", ".format_version", ".data/version", ".data/serialization_id":
		return true
	}
	key, ok := strings.CutPrefix(rest, "data/")
	return ok && key != "" && strings.Trim(key, "0123456789") == ""
}

// A torchStorage is one storage member, as the pickles reference it.
type torchStorage struct {
	Key   string // name under its directory
	Dir   string // "data" or "constants"
	Entry *zipEntry
	Types []string // storage types it was referenced with, in order of appearance
	Type  torchType
	Numel int64

	minName string       // the first view name in byte order
	minView *torchTensor // the tensor with that name
	names   map[string]struct{}
	more    int // names beyond torchMaxViews
}

// A torchStorageRef is a persistent id: a storage as one type.
type torchStorageRef struct {
	St    *torchStorage
	Type  torchType
	Numel int64
}

// A torchTensor is a view of a storage.
type torchTensor struct {
	Ref    *torchStorageRef
	Offset int64
	Size   []int64
	Stride []int64
}

func (*torchTensor) setState(any) {} // tensor attributes (requires_grad, hooks): not needed

// torchReader reads one archive.
type torchReader struct {
	z        *zipArchive
	prefix   string // archive directory, with the trailing "/"
	storages map[string]*torchStorage
	order    []*torchStorage
	names    int64 // bytes of names allowed in all
	budget   int64 // bytes of names still allowed
	mem      int64 // bytes the pickles and their values may still take
}

func openPyTorch(r io.ReaderAt, size int64) (*Layout, error) {
	z, err := readZip(r, size, formatPyTorch)
	if err != nil {
		return nil, err
	}
	if len(z.Entries) == 0 {
		return nil, formatErr(formatPyTorch, -1, ErrMalformed, "empty zip archive")
	}
	// Like torch, take the archive name from the first member.
	dir, _, ok := zipDir(z.Entries[0].Name)
	if !ok {
		return nil, formatErr(formatPyTorch, z.Entries[0].RecordOff, ErrMalformed, "first member %q is not inside an archive directory", z.Entries[0].Name)
	}
	tr := &torchReader{z: z, prefix: dir + "/", storages: make(map[string]*torchStorage), mem: pickleBudget(size)}
	tr.names = min(torchNameBudget, pickleBudget(size))
	tr.budget = tr.names
	meta := map[string]string{"archive": dir, "kind": "torch.save"}
	for _, e := range z.Entries {
		if rest, ok := strings.CutPrefix(e.Name, tr.prefix); ok && (rest == "constants.pkl" || strings.HasPrefix(rest, "code/")) {
			meta["kind"] = "torchscript"
			break
		}
	}
	for _, m := range []struct{ key, name string }{{"version", "version"}, {"version", ".data/version"}, {"byteorder", "byteorder"}} {
		e, ok := z.entry(tr.prefix + m.name)
		if _, done := meta[m.key]; done || !ok || e.Size > torchMaxTextSize {
			continue
		}
		b, _, err := z.read(e, torchMaxTextSize)
		if err != nil {
			return nil, err
		}
		meta[m.key] = strings.TrimSpace(string(b))
	}
	bigEndian := false
	switch bo, ok := meta["byteorder"]; {
	case !ok || bo == "little":
	case bo == "big":
		bigEndian = true
	default:
		e, _ := z.entry(tr.prefix + "byteorder")
		return nil, formatErr(formatPyTorch, e.RecordOff, ErrMalformed, "byteorder member holds %q, not \"little\" or \"big\"", bo)
	}

	pkl, ok := z.entry(tr.prefix + "data.pkl")
	if !ok {
		if e, legacy := z.entry(tr.prefix + "model.json"); legacy {
			return nil, formatErr(formatPyTorch, e.RecordOff, ErrUnsupported, "legacy TorchScript archive (model.json, torch < 1.4) is not supported")
		}
		return nil, formatErr(formatPyTorch, -1, ErrMalformed, "archive %q has no data.pkl", dir)
	}
	if err := tr.load(pkl, "data", ""); err != nil {
		return nil, err
	}
	if c, ok := z.entry(tr.prefix + "constants.pkl"); ok && meta["kind"] == "torchscript" {
		if err := tr.load(c, "constants", "constants"); err != nil {
			return nil, err
		}
	}

	// Unreferenced members of data/ are storages too.
	for i := range z.Entries {
		e := &z.Entries[i]
		key, ok := strings.CutPrefix(e.Name, tr.prefix+"data/")
		if !ok || key == "" {
			continue
		}
		if _, seen := tr.storages[e.Name]; !seen {
			st := &torchStorage{Key: key, Dir: "data", Entry: e, Types: []string{"bytes"}, Type: torchType{dtype.U8, 1}, Numel: e.Size}
			tr.storages[e.Name] = st
			tr.order = append(tr.order, st)
		}
	}

	used := make(map[string]struct{})
	var ts []Segment
	for _, st := range tr.order {
		off, ok, err := z.storedData(st.Entry)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // deflated or encrypted: opaque
		}
		seg := Segment{DType: st.Type.DType, Type: strings.Join(st.Types, "+"), Offset: off, Length: st.Entry.Size}
		if len(st.Types) > 1 {
			seg.DType = dtype.Invalid
		} else if bigEndian && st.Type.Size > 1 {
			seg.DType = dtype.Invalid
			seg.Type += " (big-endian)"
		}
		seg.Shape = []int64{st.Numel}
		if len(st.Types) > 1 {
			seg.Shape = []int64{st.Entry.Size}
		} else if t := st.minView; t != nil && t.Offset == 0 && contiguous(t.Size, t.Stride) {
			if n, _ := numElements(t.Size); n == st.Numel {
				seg.Shape = t.Size
			}
		}
		id := st.Key
		if st.Dir != "data" {
			id = st.Dir + "/" + st.Key
		}
		seg.Name = st.minName
		if _, taken := used[seg.Name]; taken || seg.Name == "" {
			seg.Name = "storage:" + id
			for i := 2; ; i++ {
				if _, taken := used[seg.Name]; !taken {
					break
				}
				seg.Name = "storage:" + id + "#" + strconv.Itoa(i)
			}
		}
		used[seg.Name] = struct{}{}
		if len(st.names)+st.more > 1 {
			names := make([]string, 0, len(st.names))
			for n := range st.names {
				names = append(names, n)
			}
			slices.Sort(names)
			if st.more > 0 {
				names = append(names, "... "+strconv.Itoa(st.more)+" more")
			}
			b, _ := json.Marshal(names)
			meta["storage:"+id] = string(b)
		}
		ts = append(ts, seg)
	}
	l, err := build(formatPyTorch, size, 0, ts)
	if err != nil {
		return nil, err
	}
	l.Metadata = meta
	return l, nil
}

// load reads the pickle member e, whose storages live in dir, and names the
// tensors it holds starting from root.
func (tr *torchReader) load(e *zipEntry, dir, root string) error {
	if limit := min(torchMaxPickle, tr.mem); e.Size > limit {
		return formatErr(formatPyTorch, e.RecordOff, ErrTooLarge, "zip: entry %q of %d bytes exceeds the limit of %d bytes for a pickle in a file of %d bytes",
			e.Name, e.Size, limit, tr.z.size)
	}
	b, base, err := tr.z.read(e, torchMaxPickle)
	if err != nil {
		return err
	}
	tr.mem -= int64(len(b))
	u := &unpickler{b: b, format: formatPyTorch, what: strings.TrimPrefix(e.Name, tr.prefix), base: base, exact: base >= 0, budget: max(tr.mem, 1)}
	if base < 0 {
		u.base, _ = tr.z.dataOffset(e)
	}
	u.persistentLoad = func(pid any, at int) (any, error) { return tr.persistent(u, pid, at, dir) }
	u.call = func(fn any, args *pyTuple, at int) (any, bool, error) { return tr.rebuild(u, fn, args, at, 0) }
	v, err := u.load()
	if err != nil {
		return err
	}
	tr.mem -= u.mem
	w := torchWalk{tr: tr, u: u, seen: make(map[any]struct{})}
	var p *torchPath
	if root != "" {
		p = &torchPath{key: root}
	}
	return w.walk(v, p, 0, false)
}

// persistent resolves a persistent id ('storage', type, key, location,
// numel) to its storage member.
func (tr *torchReader) persistent(u *unpickler, pid any, at int, dir string) (any, error) {
	t, ok := pid.(*pyTuple)
	if !ok || len(t.Items) < 5 || t.Items[0] != "storage" {
		if ok && len(t.Items) > 0 {
			if s, isStr := t.Items[0].(string); isStr && s != "storage" {
				return nil, u.errorf(at, ErrUnsupported, "persistent id of kind %q", s)
			}
		}
		return nil, u.errorf(at, ErrMalformed, "persistent id is a %s, not ('storage', type, key, location, numel)", pyTypeName(pid))
	}
	g, ok := t.Items[1].(*pyGlobal)
	if !ok || (g.Module != "torch" && g.Module != "torch.cuda") {
		return nil, u.errorf(at, ErrMalformed, "storage type is %s, not a torch class", pyTypeName(t.Items[1]))
	}
	typ, ok := torchTypes[g.Name]
	if !ok {
		return nil, u.errorf(at, ErrUnsupported, "unknown storage type torch.%s", g.Name)
	}
	var key string
	switch k := t.Items[2].(type) {
	case string:
		key = k
	case int64:
		key = strconv.FormatInt(k, 10)
	default:
		return nil, u.errorf(at, ErrMalformed, "storage key is a %s", pyTypeName(t.Items[2]))
	}
	numel, ok := t.Items[4].(int64)
	if !ok || numel < 0 {
		return nil, u.errorf(at, ErrMalformed, "storage %q: element count is %v", key, t.Items[4])
	}
	// The name is built and hashed for every persistent id: one memoized
	// with a long key would otherwise cost its length per 3 bytes.
	n := int64(len(tr.prefix) + len(dir) + 1 + len(key))
	if err := u.charge(at, n, 3*n); err != nil {
		return nil, err
	}
	name := tr.prefix + dir + "/" + key
	e, ok := tr.z.entry(name)
	if !ok {
		// the lite interpreter keeps storages shared by its pickles in .data/
		if e, ok = tr.z.entry(tr.prefix + ".data/" + key); ok {
			dir, name = ".data", tr.prefix+".data/"+key
		}
	}
	if !ok {
		return nil, u.errorf(at, ErrMalformed, "storage %q: archive has no member %q", key, name)
	}
	if numel > maxInt64/typ.Size {
		return nil, u.errorf(at, ErrTooLarge, "storage %q: %d elements of torch.%s overflow int64", key, numel, g.Name)
	}
	if numel*typ.Size != e.Size {
		return nil, u.errorf(at, ErrMalformed, "storage %q: %d elements of torch.%s need %d bytes, member %q has %d",
			key, numel, g.Name, numel*typ.Size, name, e.Size)
	}
	st := tr.storages[name]
	if st == nil {
		st = &torchStorage{Key: key, Dir: dir, Entry: e, Type: typ, Numel: numel, Types: []string{g.Name}}
		tr.storages[name] = st
		tr.order = append(tr.order, st)
	} else if !slices.Contains(st.Types, g.Name) {
		st.Types = append(st.Types, g.Name)
	}
	return &torchStorageRef{St: st, Type: typ, Numel: numel}, nil
}

// rebuild is the unpickler's REDUCE hook: it builds tensors and ordered
// dicts, and leaves every other call to be recorded.
func (tr *torchReader) rebuild(u *unpickler, fn any, args *pyTuple, at, depth int) (any, bool, error) {
	g, ok := fn.(*pyGlobal)
	if !ok {
		return nil, false, nil
	}
	a := args.Items
	// Module and name are compared apart: joining them would copy a long
	// memoized name at every REDUCE.
	switch mn := [2]string{g.Module, g.Name}; mn {
	case [2]string{"collections", "OrderedDict"}:
		if len(a) == 0 {
			return &pyDict{}, true, nil
		}
	case [2]string{"torch._utils", "_rebuild_tensor"}, [2]string{"torch._utils", "_rebuild_tensor_v2"},
		[2]string{"torch._utils", "_rebuild_tensor_v3"}, [2]string{"torch._utils", "_rebuild_qtensor"}:
		t, err := tr.tensor(u, g.Name, a, at)
		return t, err == nil, err
	case [2]string{"torch._utils", "_rebuild_parameter"}, [2]string{"torch._utils", "_rebuild_parameter_with_state"}:
		if len(a) > 0 {
			if t, ok := a[0].(*torchTensor); ok {
				return t, true, nil
			}
		}
	case [2]string{"torch._tensor", "_rebuild_from_type_v2"}, [2]string{"torch._tensor", "_rebuild_from_type"}:
		// (func, type, args, state): a tensor subclass rebuilt by func(*args)
		if len(a) >= 3 && depth < torchMaxRebuild {
			if inner, ok := a[2].(*pyTuple); ok {
				return tr.rebuild(u, a[0], inner, at, depth+1)
			}
		}
	}
	return nil, false, nil
}

// tensor reads the arguments (storage, storage_offset, size, stride, ...)
// of a tensor rebuild function.
func (tr *torchReader) tensor(u *unpickler, fn string, a []any, at int) (*torchTensor, error) {
	if len(a) < 4 {
		return nil, u.errorf(at, ErrMalformed, "%s takes at least 4 arguments, got %d", fn, len(a))
	}
	ref, ok := a[0].(*torchStorageRef)
	if !ok {
		return nil, u.errorf(at, ErrMalformed, "%s: storage is a %s, not a persistent storage", fn, pyTypeName(a[0]))
	}
	off, ok := a[1].(int64)
	if !ok || off < 0 {
		return nil, u.errorf(at, ErrMalformed, "%s: storage offset is %v", fn, a[1])
	}
	size, err := torchInts(u, fn, "size", a[2], at)
	if err != nil {
		return nil, err
	}
	stride, err := torchInts(u, fn, "stride", a[3], at)
	if err != nil {
		return nil, err
	}
	if len(stride) != len(size) {
		return nil, u.errorf(at, ErrMalformed, "%s: size %v and stride %v differ in length", fn, size, stride)
	}
	if err := u.charge(at, 16*int64(len(size)), 0); err != nil {
		return nil, err
	}
	n, ok := numElements(size)
	if !ok {
		return nil, u.errorf(at, ErrTooLarge, "%s: element count of size %v overflows int64", fn, size)
	}
	if n > 0 {
		// the last element viewed must lie inside the storage
		last := off
		for i, d := range size {
			if stride[i] != 0 && d-1 > (maxInt64-last)/stride[i] {
				return nil, u.errorf(at, ErrOutOfRange, "%s: view offset %d, size %v, stride %v overflows", fn, off, size, stride)
			}
			last += (d - 1) * stride[i]
		}
		if last >= ref.Numel {
			return nil, u.errorf(at, ErrOutOfRange, "%s: view offset %d, size %v, stride %v reaches element %d of storage %q, which has %d",
				fn, off, size, stride, last, ref.St.Key, ref.Numel)
		}
	}
	return &torchTensor{Ref: ref, Offset: off, Size: size, Stride: stride}, nil
}

// torchInts reads a tuple of non-negative ints (a size or stride).
func torchInts(u *unpickler, fn, what string, v any, at int) ([]int64, error) {
	t, ok := v.(*pyTuple)
	if !ok {
		return nil, u.errorf(at, ErrMalformed, "%s: %s is a %s, not a tuple", fn, what, pyTypeName(v))
	}
	if len(t.Items) > torchMaxDims {
		return nil, u.errorf(at, ErrTooLarge, "%s: %s has %d dimensions, more than %d", fn, what, len(t.Items), torchMaxDims)
	}
	out := make([]int64, len(t.Items))
	for i, x := range t.Items {
		d, ok := x.(int64)
		if !ok || d < 0 {
			return nil, u.errorf(at, ErrMalformed, "%s: %s[%d] is %v", fn, what, i, x)
		}
		out[i] = d
	}
	return out, nil
}

// contiguous reports whether strides are the row-major strides of size
// (dimensions of size 1 may have any stride).
func contiguous(size, stride []int64) bool {
	want := int64(1)
	for i := len(size) - 1; i >= 0; i-- {
		if size[i] != 1 && stride[i] != want {
			return false
		}
		want *= size[i]
	}
	return true
}

// A torchPath is the path from the root of a pickle to a value, built only
// into a name when a tensor is found.
type torchPath struct {
	parent *torchPath
	key    string
}

// torchWalk walks an unpickled tree and records each tensor it finds under
// its path. Containers are walked once (shared ones, and cycles, are not
// revisited), so the work is bounded by the size of the pickle.
type torchWalk struct {
	tr   *torchReader
	u    *unpickler
	seen map[any]struct{}
}

func (w *torchWalk) errorf(sentinel error, msg string, args ...any) error {
	return formatErr(formatPyTorch, w.u.base, sentinel, w.u.what+": "+msg, args...)
}

// walk visits v at path p. attrs says that v's items are object attributes.
func (w *torchWalk) walk(v any, p *torchPath, depth int, attrs bool) error {
	if depth > torchMaxDepth {
		return w.errorf(ErrTooLarge, "objects nested deeper than %d levels", torchMaxDepth)
	}
	switch x := v.(type) {
	case *torchTensor:
		return w.view(x, p)
	case *torchStorageRef:
		return w.view(&torchTensor{Ref: x, Size: []int64{x.Numel}, Stride: []int64{1}}, p)
	case *pyDict, *pyList, *pyTuple, *pySet, *pyObject:
		if _, done := w.seen[v]; done {
			return nil
		}
		w.seen[v] = struct{}{}
	default:
		return nil // scalars, strings, globals
	}
	switch x := v.(type) {
	case *pyDict:
		if err := w.items(x, p, depth, attrs); err != nil {
			return err
		}
		return w.state(x.State, p, depth)
	case *pyList:
		return w.list(x.Items, p, depth)
	case *pyTuple:
		return w.list(x.Items, p, depth)
	case *pySet:
		return w.list(x.Items, p, depth)
	case *pyObject:
		if x.Dict != nil {
			if err := w.items(x.Dict, p, depth, false); err != nil {
				return err
			}
		}
		if err := w.list(x.List, p, depth); err != nil {
			return err
		}
		if err := w.state(x.State, p, depth); err != nil {
			return err
		}
		if a, ok := x.Args.(*pyTuple); ok {
			if len(a.Items) == 1 {
				return w.walk(a.Items[0], p, depth+1, false) // build_tensorlist([...]) and the like
			}
			return w.list(a.Items, p, depth)
		}
	}
	return nil
}

// state walks the state an object or dict was given by BUILD: a dict of
// attributes, or a (dict, slots dict) pair.
func (w *torchWalk) state(s any, p *torchPath, depth int) error {
	if t, ok := s.(*pyTuple); ok && len(t.Items) == 2 {
		if _, done := w.seen[t]; done {
			return nil
		}
		w.seen[t] = struct{}{}
		for _, x := range t.Items {
			if err := w.state(x, p, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return w.walk(s, p, depth+1, true)
}

func (w *torchWalk) items(d *pyDict, p *torchPath, depth int, attrs bool) error {
	for i, k := range d.Keys {
		v := d.Vals[i]
		if !torchMayHold(v) {
			continue
		}
		key := pyKeyName(k, i)
		if attrs && (key == "_parameters" || key == "_buffers" || key == "_modules") {
			if err := w.walk(v, p, depth+1, false); err != nil {
				return err
			}
			continue
		}
		if err := w.walk(v, &torchPath{parent: p, key: key}, depth+1, false); err != nil {
			return err
		}
	}
	return nil
}

func (w *torchWalk) list(items []any, p *torchPath, depth int) error {
	for i, v := range items {
		if !torchMayHold(v) {
			continue
		}
		if err := w.walk(v, &torchPath{parent: p, key: strconv.Itoa(i)}, depth+1, false); err != nil {
			return err
		}
	}
	return nil
}

// torchMayHold reports whether v can hold a tensor.
func torchMayHold(v any) bool {
	switch v.(type) {
	case *torchTensor, *torchStorageRef, *pyDict, *pyList, *pyTuple, *pySet, *pyObject:
		return true
	}
	return false
}

// pyKeyName turns a dict key into a name component; keys that are not
// scalars are named by their position.
func pyKeyName(k any, i int) string {
	switch x := k.(type) {
	case string:
		return x
	case pyBytes:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		if x {
			return "True"
		}
		return "False"
	case nil:
		return "None"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return "#" + strconv.Itoa(i)
}

// view records tensor t, found at path p, as a view of its storage.
func (w *torchWalk) view(t *torchTensor, p *torchPath) error {
	n := 0
	for q := p; q != nil; q = q.parent {
		n += len(q.key) + 1
	}
	if int64(n) > w.tr.budget {
		return w.errorf(ErrTooLarge, "tensor names exceed %d bytes in all", w.tr.names)
	}
	w.tr.budget -= int64(n)
	parts := make([]string, 0, 8)
	for q := p; q != nil; q = q.parent {
		parts = append(parts, q.key)
	}
	slices.Reverse(parts)
	name := strings.Join(parts, ".")
	if p == nil {
		name = "data" // the pickled object is itself a tensor
	}
	st := t.Ref.St
	if st.minView == nil || name < st.minName {
		st.minName, st.minView = name, t
	}
	if st.names == nil {
		st.names = make(map[string]struct{})
	}
	if _, ok := st.names[name]; !ok {
		if len(st.names) < torchMaxViews {
			st.names[name] = struct{}{}
		} else {
			st.more++
		}
	}
	return nil
}
