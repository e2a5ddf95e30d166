package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"neuralzip/dtype"
)

// ---- torch-style archives for fixtures ----

var (
	ptRebuild     = pkGlobal{"torch._utils", "_rebuild_tensor_v2"}
	ptParameter   = pkGlobal{"torch._utils", "_rebuild_parameter"}
	ptOrderedDict = pkGlobal{"collections", "OrderedDict"}
)

// ptStorage is a persistent id of a storage, as torch.save writes it.
func ptStorage(typ, key string, numel int) pkPID {
	return pkPID{pkTuple{"storage", pkGlobal{"torch", typ}, key, "cpu", numel}}
}

// ptTensor is a _rebuild_tensor_v2 call viewing a storage.
func ptTensor(st pkPID, off int, size, stride []int) *pkCall {
	sz, sd := make(pkTuple, len(size)), make(pkTuple, len(stride))
	for i := range size {
		sz[i] = size[i]
	}
	for i := range stride {
		sd[i] = stride[i]
	}
	return &pkCall{Fn: ptRebuild, Args: pkTuple{st, off, sz, sd, false, &pkCall{Fn: ptOrderedDict, Args: pkTuple{}}}}
}

// ptDense is a contiguous tensor over a whole storage of the given type.
func ptDense(typ, key string, size ...int) *pkCall {
	n, stride := 1, make([]int, len(size))
	for i := len(size) - 1; i >= 0; i-- {
		stride[i] = n
		n *= size[i]
	}
	return ptTensor(ptStorage(typ, key, n), 0, size, stride)
}

// ptBytes returns n deterministic bytes that look like little-endian
// floats of the given element size.
func ptBytes(n, elem int, seed float64) []byte {
	b := make([]byte, 0, n)
	for i := 0; len(b) < n; i++ {
		v := math.Sin(seed + float64(i)*0.7)
		switch elem {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(math.Float32bits(float32(v))>>16))
		case 8:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		default:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		}
	}
	return b[:n]
}

// ptWant is a tensor segment a fixture must have.
type ptWant struct {
	Name  string
	DType dtype.DType
	Type  string
	Shape []int64
	Data  []byte
}

// ptCase is a generated archive and what its layout must hold.
type ptCase struct {
	File    string
	B       []byte
	Tensors []ptWant
	Meta    map[string]string
}

// torchArchive writes a torch.save archive the way torch 1.13 does: data.pkl,
// the storages in key order, version; 64-byte aligned data, descriptors,
// zip64 end records.
func torchArchive(prefix string, pkl []byte, storages map[string][]byte, more ...ztMember) []byte {
	ms := []ztMember{{Name: prefix + "/data.pkl", Data: pkl}}
	keys := make([]string, 0, len(storages))
	for k := range storages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ms = append(ms, ztMember{Name: prefix + "/data/" + k, Data: storages[k]})
	}
	ms = append(ms, more...)
	b, _ := ztBuild(ztOptions{Align: 64, Descriptor: true, Zip64End: true}, ms)
	return b
}

func ptVersion(prefix string) ztMember {
	return ztMember{Name: prefix + "/version", Data: []byte("3\n")}
}

// ptFixtures returns the generated archives of testdata/pytorch.
func ptFixtures() []ptCase {
	var cs []ptCase

	// A torch 1.13 state dict of several types, with _metadata.
	{
		w, b, m, n := ptBytes(48, 4, 1), ptBytes(12, 4, 2), ptBytes(16, 4, 3), []byte{7, 0, 0, 0, 0, 0, 0, 0}
		e, mask := ptBytes(20, 2, 4), []byte{1, 0, 1, 1, 0, 0}
		sd := &pkOrderedDict{
			Keys: []any{"fc.weight", "fc.bias", "bn.running_mean", "bn.num_batches_tracked", "emb.weight", "mask"},
			Vals: []any{ptDense("FloatStorage", "0", 3, 4), ptDense("FloatStorage", "1", 3), ptDense("FloatStorage", "2", 4),
				ptDense("LongStorage", "3"), ptDense("HalfStorage", "4", 5, 2), ptDense("BoolStorage", "5", 6)},
			State: &pkDict{Keys: []any{"_metadata"}, Vals: []any{&pkOrderedDict{Keys: []any{"", "fc"}, Vals: []any{&pkDict{Keys: []any{"version"}, Vals: []any{1}}, &pkDict{Keys: []any{"version"}, Vals: []any{1}}}}}},
		}
		cs = append(cs, ptCase{
			File: "state_dict.pt",
			B:    torchArchive("state_dict", pickleOf(2, sd), map[string][]byte{"0": w, "1": b, "2": m, "3": n, "4": e, "5": mask}, ptVersion("state_dict")),
			Tensors: []ptWant{
				{"fc.weight", dtype.F32, "FloatStorage", []int64{3, 4}, w}, {"fc.bias", dtype.F32, "FloatStorage", []int64{3}, b},
				{"bn.running_mean", dtype.F32, "FloatStorage", []int64{4}, m}, {"bn.num_batches_tracked", dtype.I64, "LongStorage", []int64{}, n},
				{"emb.weight", dtype.F16, "HalfStorage", []int64{5, 2}, e}, {"mask", dtype.Bool, "BoolStorage", []int64{6}, mask},
			},
			Meta: map[string]string{"archive": "state_dict", "kind": "torch.save", "version": "3"},
		})
	}

	// The legacy "archive/" prefix, a plain dict, F64.
	{
		w, b := ptBytes(32, 8, 5), ptBytes(16, 8, 6)
		d := &pkDict{Keys: []any{"w", "b"}, Vals: []any{ptDense("DoubleStorage", "0", 2, 2), ptDense("DoubleStorage", "1", 2)}}
		cs = append(cs, ptCase{
			File:    "legacy_archive.pt",
			B:       torchArchive("archive", pickleOf(2, d), map[string][]byte{"0": w, "1": b}, ptVersion("archive")),
			Tensors: []ptWant{{"w", dtype.F64, "DoubleStorage", []int64{2, 2}, w}, {"b", dtype.F64, "DoubleStorage", []int64{2}, b}},
			Meta:    map[string]string{"archive": "archive"},
		})
	}

	// Tied weights, a view into the middle of a storage, a transposed view,
	// and a storage member that no tensor references.
	{
		s0, s1, orphan := ptBytes(48, 4, 7), ptBytes(24, 4, 8), []byte("not referenced")
		st0 := ptStorage("FloatStorage", "0", 12)
		tied := ptTensor(st0, 0, []int{4, 3}, []int{3, 1})
		sd := &pkOrderedDict{
			Keys: []any{"head.weight", "embed.weight", "row", "t"},
			Vals: []any{tied, ptTensor(st0, 0, []int{4, 3}, []int{3, 1}), ptTensor(st0, 3, []int{3}, []int{1}),
				ptTensor(ptStorage("FloatStorage", "1", 6), 0, []int{3, 2}, []int{1, 3})},
		}
		cs = append(cs, ptCase{
			File: "shared.pt",
			B:    torchArchive("shared", pickleOf(2, sd), map[string][]byte{"0": s0, "1": s1, "9": orphan}, ptVersion("shared")),
			Tensors: []ptWant{{"embed.weight", dtype.F32, "FloatStorage", []int64{4, 3}, s0}, {"t", dtype.F32, "FloatStorage", []int64{6}, s1},
				{"storage:9", dtype.U8, "bytes", []int64{14}, orphan}},
			Meta: map[string]string{"storage:0": `["embed.weight","head.weight","row"]`},
		})
	}

	// torch 2.x: BF16 parameters in a nested training checkpoint, with
	// byteorder, .format_version and .data/ members.
	{
		lw, lb, step, avg := ptBytes(16, 2, 9), ptBytes(4, 2, 10), ptBytes(4, 4, 11), ptBytes(16, 2, 12)
		param := func(t *pkCall) *pkCall {
			return &pkCall{Fn: ptParameter, Args: pkTuple{t, true, &pkCall{Fn: ptOrderedDict, Args: pkTuple{}}}}
		}
		withMeta := ptDense("BFloat16Storage", "1", 2)
		withMeta.Args = append(withMeta.Args, &pkDict{})
		root := &pkDict{
			Keys: []any{"model", "optimizer", "epoch"},
			Vals: []any{
				&pkOrderedDict{Keys: []any{"layer.weight", "layer.bias"}, Vals: []any{param(ptDense("BFloat16Storage", "0", 2, 4)), param(withMeta)}},
				&pkDict{Keys: []any{"state", "param_groups"}, Vals: []any{
					&pkDict{Keys: []any{0}, Vals: []any{&pkDict{Keys: []any{"step", "exp_avg"}, Vals: []any{ptDense("FloatStorage", "2"), ptDense("BFloat16Storage", "3", 2, 4)}}}},
					pkList{&pkDict{Keys: []any{"lr", "params"}, Vals: []any{0.001, pkList{0, 1}}}},
				}},
				3,
			},
		}
		p := "bf16_nested"
		ms := []ztMember{{Name: p + "/data.pkl", Data: pickleOf(2, root)}, {Name: p + "/.format_version", Data: []byte("1")}, {Name: p + "/byteorder", Data: []byte("little")}}
		for i, d := range [][]byte{lw, lb, step, avg} {
			ms = append(ms, ztMember{Name: p + "/data/" + strconv.Itoa(i), Data: d})
		}
		ms = append(ms, ptVersion(p), ztMember{Name: p + "/.data/serialization_id", Data: []byte("0123456789012345678901234567890123456789")})
		b, _ := ztBuild(ztOptions{Align: 64, Descriptor: true, Zip64End: true}, ms)
		cs = append(cs, ptCase{
			File: "bf16_nested.pt", B: b,
			Tensors: []ptWant{{"model.layer.weight", dtype.BF16, "BFloat16Storage", []int64{2, 4}, lw}, {"model.layer.bias", dtype.BF16, "BFloat16Storage", []int64{2}, lb},
				{"optimizer.state.0.step", dtype.F32, "FloatStorage", []int64{}, step}, {"optimizer.state.0.exp_avg", dtype.BF16, "BFloat16Storage", []int64{2, 4}, avg}},
			Meta: map[string]string{"byteorder": "little", "version": "3"},
		})
	}

	// A deflated storage member is opaque.
	{
		a, b := ptBytes(400, 4, 13), ptBytes(40, 4, 14)
		sd := &pkOrderedDict{Keys: []any{"a", "b"}, Vals: []any{ptDense("FloatStorage", "0", 100), ptDense("FloatStorage", "1", 10)}}
		p := "deflated"
		bs, _ := ztBuild(ztOptions{Align: 64, Descriptor: true, Zip64End: true}, []ztMember{
			{Name: p + "/data.pkl", Data: pickleOf(2, sd)}, {Name: p + "/data/0", Data: a, Deflate: true}, {Name: p + "/data/1", Data: b}, ptVersion(p)})
		cs = append(cs, ptCase{File: "deflated.pt", B: bs, Tensors: []ptWant{{"b", dtype.F32, "FloatStorage", []int64{10}, b}}})
	}

	// Protocol 4 (FRAME, STACK_GLOBAL, SHORT_BINUNICODE, MEMOIZE) and
	// storage types named by dtype, as newer writers may.
	{
		a, b, c := ptBytes(12, 4, 15), ptBytes(6, 2, 16), ptBytes(8, 1, 17)
		sd := &pkOrderedDict{Keys: []any{"a", "b", "raw"}, Vals: []any{ptDense("float32", "0", 3), ptDense("float16", "1", 3), ptDense("UntypedStorage", "2", 8)}}
		cs = append(cs, ptCase{
			File:    "protocol4.pt",
			B:       torchArchive("protocol4", pickleOf(4, sd), map[string][]byte{"0": a, "1": b, "2": c}, ptVersion("protocol4")),
			Tensors: []ptWant{{"a", dtype.F32, "float32", []int64{3}, a}, {"b", dtype.F16, "float16", []int64{3}, b}, {"raw", dtype.U8, "UntypedStorage", []int64{8}, c}},
		})
	}

	// Written on a big-endian machine: multi-byte types lose their DType.
	{
		w, q := ptBytes(16, 4, 18), []byte{1, 2, 3}
		sd := &pkOrderedDict{Keys: []any{"w", "q"}, Vals: []any{ptDense("FloatStorage", "0", 4), ptDense("ByteStorage", "1", 3)}}
		cs = append(cs, ptCase{
			File: "bigendian.pt",
			B: torchArchive("bigendian", pickleOf(2, sd), map[string][]byte{"0": w, "1": q},
				ztMember{Name: "bigendian/byteorder", Data: []byte("big")}, ptVersion("bigendian")),
			Tensors: []ptWant{{"w", dtype.Invalid, "FloatStorage (big-endian)", []int64{4}, w}, {"q", dtype.U8, "ByteStorage", []int64{3}, q}},
			Meta:    map[string]string{"byteorder": "big"},
		})
	}

	// torch.save(model): nn.Module objects rebuilt by copyreg, their
	// _parameters, _buffers and _modules dicts, a tensor subclass rebuilt by
	// _rebuild_from_type_v2, an object with a (dict, slots) state, keys that
	// are not strings.
	{
		w, b, r, s, k := ptBytes(24, 4, 23), ptBytes(8, 4, 24), ptBytes(8, 4, 25), ptBytes(4, 4, 26), ptBytes(4, 4, 27)
		recon := pkGlobal{"copyreg", "_reconstructor"}
		module := func(cls string, kv ...any) *pkCall {
			st := &pkDict{Keys: []any{"training", "_parameters", "_buffers", "_modules"}, Vals: []any{true, &pkOrderedDict{}, &pkOrderedDict{}, &pkOrderedDict{}}}
			for i := 0; i < len(kv); i += 3 {
				d := st.Vals[kv[i].(int)].(*pkOrderedDict)
				d.Keys, d.Vals = append(d.Keys, kv[i+1]), append(d.Vals, kv[i+2])
			}
			return &pkCall{Fn: recon, Args: pkTuple{pkGlobal{"torch.nn", cls}, pkGlobal{"builtins", "object"}, nil}, State: st}
		}
		param := func(t *pkCall) *pkCall {
			return &pkCall{Fn: ptParameter, Args: pkTuple{t, true, &pkCall{Fn: ptOrderedDict, Args: pkTuple{}}}}
		}
		sub := &pkCall{Fn: pkGlobal{"torch._tensor", "_rebuild_from_type_v2"}, Args: pkTuple{ptRebuild, pkGlobal{"__main__", "MyTensor"},
			pkTuple{ptStorage("FloatStorage", "2", 2), 0, pkTuple{2}, pkTuple{1}, false, &pkCall{Fn: ptOrderedDict, Args: pkTuple{}}}, &pkDict{}}}
		fc := module("Linear", 1, "weight", param(ptDense("FloatStorage", "0", 2, 3)), 1, "bias", param(ptDense("FloatStorage", "1", 2)))
		slots := &pkCall{Fn: recon, Args: pkTuple{pkGlobal{"__main__", "Slotted"}, pkGlobal{"builtins", "object"}, nil},
			State: pkTuple{nil, &pkDict{Keys: []any{"slot"}, Vals: []any{ptDense("FloatStorage", "3", 1)}}}}
		net := module("Net", 2, "running", sub, 3, "fc", fc, 3, "extra", slots)
		net.State.(*pkDict).Keys = append(net.State.(*pkDict).Keys, "by_key")
		net.State.(*pkDict).Vals = append(net.State.(*pkDict).Vals, &pkDict{Keys: []any{7, true, nil, 1.5, pkTuple{1}}, Vals: []any{ptDense("FloatStorage", "4", 1), 1, 2, 3, 4}})
		cs = append(cs, ptCase{
			File: "module.pt",
			B:    torchArchive("module", pickleOf(2, net), map[string][]byte{"0": w, "1": b, "2": r, "3": s, "4": k}, ptVersion("module")),
			Tensors: []ptWant{{"fc.weight", dtype.F32, "FloatStorage", []int64{2, 3}, w}, {"fc.bias", dtype.F32, "FloatStorage", []int64{2}, b},
				{"running", dtype.F32, "FloatStorage", []int64{2}, r}, {"extra.slot", dtype.F32, "FloatStorage", []int64{1}, s},
				{"by_key.7", dtype.F32, "FloatStorage", []int64{1}, k}},
		})
	}

	// A TorchScript module: storages first, objects built by NEWOBJ and
	// BUILD, a tensor list, constants, deflated code.
	{
		w, b, s, c := ptBytes(24, 4, 19), ptBytes(8, 4, 20), ptBytes(4, 4, 21), ptBytes(8, 4, 22)
		attrs := func(kv ...any) *pkDict {
			d := &pkDict{}
			for i := 0; i < len(kv); i += 2 {
				d.Keys, d.Vals = append(d.Keys, kv[i]), append(d.Vals, kv[i+1])
			}
			return d
		}
		linear := &pkObject{Cls: pkGlobal{"__torch__.torch.nn.modules.linear", "Linear"}, Attrs: attrs("training", false, "weight", ptDense("FloatStorage", "0", 2, 3), "bias", ptDense("FloatStorage", "1", 2))}
		top := &pkObject{Cls: pkGlobal{"__torch__.model", "Net"}, Attrs: attrs("training", false, "_is_full_backward_hook", nil, "fc", linear,
			"scales", &pkCall{Fn: pkGlobal{"torch.jit._pickle", "build_tensorlist"}, Args: pkTuple{pkList{ptDense("FloatStorage", "2", 1)}}},
			"sizes", &pkCall{Fn: pkGlobal{"torch.jit._pickle", "build_intlist"}, Args: pkTuple{pkList{1, 2}}})}
		constants := pkTuple{ptDense("FloatStorage", "0", 2)}
		p := "net"
		code := []byte(strings.Repeat("def forward(self, x):\n    return self.fc(x)\n", 20))
		bs, _ := ztBuild(ztOptions{Align: 64, Descriptor: true, Zip64End: true}, []ztMember{
			{Name: p + "/data/0", Data: w}, {Name: p + "/data/1", Data: b}, {Name: p + "/data/2", Data: s},
			{Name: p + "/data.pkl", Data: pickleOf(2, top)},
			{Name: p + "/code/__torch__/model.py", Data: code, Deflate: true},
			{Name: p + "/code/__torch__/model.py.debug_pkl", Data: []byte("\x80\x02).")},
			{Name: p + "/constants/0", Data: c},
			{Name: p + "/constants.pkl", Data: pickleOf(2, constants)},
			ptVersion(p), {Name: p + "/byteorder", Data: []byte("little")},
			{Name: p + "/.data/serialization_id", Data: []byte("1234")},
		})
		cs = append(cs, ptCase{
			File: "torchscript.jit", B: bs,
			Tensors: []ptWant{{"fc.weight", dtype.F32, "FloatStorage", []int64{2, 3}, w}, {"fc.bias", dtype.F32, "FloatStorage", []int64{2}, b},
				{"scales.0", dtype.F32, "FloatStorage", []int64{1}, s}, {"constants.0", dtype.F32, "FloatStorage", []int64{2}, c}},
			Meta: map[string]string{"kind": "torchscript", "archive": "net"},
		})
	}
	return cs
}

// checkTorchCase opens a generated archive and compares its layout with
// what the case wants: every tensor, and nothing else as a tensor.
func checkTorchCase(t *testing.T, c ptCase, format string) *Layout {
	t.Helper()
	l := openBytes(t, c.B)
	if l.Format != format {
		t.Fatalf("format %q, want %q", l.Format, format)
	}
	ts := byName(l)
	if len(ts) != len(c.Tensors) {
		var names []string
		for n := range ts {
			names = append(names, n)
		}
		t.Fatalf("tensors %q, want %d", names, len(c.Tensors))
	}
	for _, w := range c.Tensors {
		s, ok := ts[w.Name]
		if !ok {
			t.Fatalf("no tensor %q", w.Name)
		}
		if s.DType != w.DType || s.Type != w.Type || !equalShape(s.Shape, w.Shape) || (s.Shape == nil) != (w.Shape == nil) {
			t.Errorf("tensor %q: %v %q %v, want %v %q %v", w.Name, s.DType, s.Type, s.Shape, w.DType, w.Type, w.Shape)
		}
		if !bytes.Equal(c.B[s.Offset:s.End()], w.Data) {
			t.Errorf("tensor %q: bytes at [%d,%d) differ", w.Name, s.Offset, s.End())
		}
	}
	for k, v := range c.Meta {
		if l.Metadata[k] != v {
			t.Errorf("metadata %q = %q, want %q", k, l.Metadata[k], v)
		}
	}
	return l
}

func TestPyTorchFixtures(t *testing.T) {
	var names []string
	defer func() { ztCheckFixtureDir(t, filepath.Join("testdata", "pytorch"), names) }()
	for _, c := range ptFixtures() {
		names = append(names, c.File)
		t.Run(c.File, func(t *testing.T) {
			ztCheckFixture(t, filepath.Join("testdata", "pytorch", c.File), c.B)
			ztCompare(t, c.B)
			checkTorchCase(t, c, "pytorch")
		})
	}
}

// TestPyTorchRealStateDict checks the torch 1.13 state dict of the
// tinygpt-fortunes trajectory against its safetensors twin: the same 53
// tensor names, shapes and bytes.
func TestPyTorchRealStateDict(t *testing.T) {
	dir := sharedDir(t)
	pb, err1 := os.ReadFile(filepath.Join(dir, "models/original/step_001000.pt"))
	sb, err2 := os.ReadFile(filepath.Join(dir, "trajectories/tinygpt-fortunes/step_001000.f32.safetensors"))
	if err1 != nil || err2 != nil {
		t.Skipf("corpus files missing: %v %v", err1, err2)
	}
	l := openBytes(t, pb)
	if l.Format != "pytorch" || l.Metadata["kind"] != "torch.save" || l.Metadata["archive"] != "step_001000" || l.Metadata["version"] != "3" {
		t.Fatalf("format %q, metadata %v", l.Format, l.Metadata)
	}
	pt, st := byName(l), byName(openBytes(t, sb))
	if len(pt) != 53 || len(st) != 53 {
		t.Fatalf("%d tensors, safetensors has %d; want 53", len(pt), len(st))
	}
	var values int64
	for name, s := range st {
		p, ok := pt[name]
		if !ok {
			t.Fatalf("tensor %q missing", name)
		}
		if p.DType != dtype.F32 || p.Type != "FloatStorage" || !equalShape(p.Shape, s.Shape) {
			t.Errorf("tensor %q: %v %s %v, safetensors %v %v", name, p.DType, p.Type, p.Shape, s.DType, s.Shape)
		}
		if !bytes.Equal(pb[p.Offset:p.End()], sb[s.Offset:s.End()]) {
			t.Errorf("tensor %q: bytes differ", name)
		}
		n, _ := p.NumElements()
		values += n
	}
	if values != 875264 {
		t.Errorf("%d values, want 875264", values)
	}
	checkFloats(t, pb, l.Tensors(), nil)
}

// TestPyTorchRealTorchScript checks silero_vad.jit: 32 fp32 storages of
// 2,181,128 bytes in data/, named by module attribute paths, and one empty
// constant.
func TestPyTorchRealTorchScript(t *testing.T) {
	dir := sharedDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "models/original/silero_vad.jit"))
	if err != nil {
		t.Skipf("corpus file missing: %v", err)
	}
	l := openBytes(t, b)
	if l.Format != "pytorch" || l.Metadata["kind"] != "torchscript" || l.Metadata["byteorder"] != "little" {
		t.Fatalf("format %q, metadata %v", l.Format, l.Metadata)
	}
	var data, consts int
	var bytesData int64
	for _, s := range l.Tensors() {
		if s.DType != dtype.F32 || s.Type != "FloatStorage" {
			t.Errorf("tensor %q is %v %s", s.Name, s.DType, s.Type)
		}
		if strings.HasPrefix(s.Name, "constants.") {
			consts++
			continue
		}
		data++
		bytesData += s.Length
	}
	if data != 32 || bytesData != 2181128 || consts != 1 {
		t.Errorf("%d data storages of %d bytes and %d constants; want 32 of 2181128 and 1", data, bytesData, consts)
	}
	ts := byName(l)
	for name, shape := range map[string][]int64{
		"_model.stft.forward_basis_buffer":     {258, 1, 256},
		"_model_8k.decoder.rnn.weight_ih":      {512, 128},
		"_model.encoder.0.reparam_conv.weight": {128, 129, 3},
		"_model.decoder.decoder.2.bias":        {1},
	} {
		if s, ok := ts[name]; !ok || !equalShape(s.Shape, shape) {
			t.Errorf("tensor %q: %+v, want shape %v", name, s, shape)
		}
	}
	nonEmpty := l.Tensors()[2:]
	checkFloats(t, b, slices.DeleteFunc(slices.Clone(nonEmpty), func(s Segment) bool { return s.Length == 0 }), nil)
}

// TestPyTorchSniff checks that torch archives, npz files and other zip
// files are told apart by content.
func TestPyTorchSniff(t *testing.T) {
	pt := ptFixtures()[0].B
	npz, _ := ztBuild(ztOptions{}, []ztMember{{Name: "x.npy", Data: npyFile(1, "<f4", false, []int64{2}, make([]byte, 8))}})
	docx, _ := ztBuild(ztOptions{}, []ztMember{{Name: "[Content_Types].xml", Data: []byte("<xml/>")}, {Name: "word/document.xml", Data: []byte("<w/>")}})
	project, _ := ztBuild(ztOptions{}, []ztMember{{Name: "project/data/readme.txt", Data: []byte("hi")}, {Name: "project/data.pkl.bak", Data: []byte("x")}})
	npyInDir, _ := ztBuild(ztOptions{}, []ztMember{{Name: "arrays/data/0.npy", Data: npyFile(1, "<f4", false, []int64{1}, make([]byte, 4))}})
	for name, c := range map[string]struct {
		b      []byte
		format string
	}{
		"pt": {pt, "pytorch"}, "npz": {npz, "npz"}, "docx": {docx, FormatUnknown},
		"project": {project, FormatUnknown}, "npz in dir": {npyInDir, "npz"},
	} {
		t.Run(name, func(t *testing.T) {
			head := c.b[:min(len(c.b), HeadSize)]
			if got := matchPyTorch(head, int64(len(c.b))); got != (c.format == "pytorch") {
				t.Errorf("matchPyTorch = %v", got)
			}
			if got := matchNPZ(head, int64(len(c.b))); got != (c.format == "npz") {
				t.Errorf("matchNPZ = %v", got)
			}
			if l := openBytes(t, c.b); l.Format != c.format {
				t.Errorf("format %q, want %q", l.Format, c.format)
			}
		})
	}
}

// ptEdit builds a state dict archive {"w": F32 storage "0" of 4 elements},
// with the pickle and members changed by the callers.
func ptEdit(pkl []byte, members ...ztMember) []byte {
	if pkl == nil {
		pkl = pickleOf(2, &pkOrderedDict{Keys: []any{"w"}, Vals: []any{ptDense("FloatStorage", "0", 4)}})
	}
	ms := []ztMember{{Name: "x/data.pkl", Data: pkl}}
	if members == nil {
		members = []ztMember{{Name: "x/data/0", Data: make([]byte, 16)}}
	}
	b, _ := ztBuild(ztOptions{Align: 64}, append(ms, members...))
	return b
}

func TestPyTorchHostile(t *testing.T) {
	sd := func(vs ...any) []byte {
		d := &pkOrderedDict{}
		for i, v := range vs {
			d.Keys, d.Vals = append(d.Keys, "t"+strconv.Itoa(i)), append(d.Vals, v)
		}
		return pickleOf(2, d)
	}
	pklOff := int64(64) // data.pkl data is aligned to 64
	deep := append([]byte{0x80, 2}, bytes.Repeat([]byte{']'}, 100000)...)
	deep = append(append(deep, bytes.Repeat([]byte{'a'}, 99999)...), '.')
	cases := []struct {
		name     string
		b        []byte
		sentinel error
		off      int64
		sub      string
	}{
		{"unknown opcode", ptEdit([]byte("\x80\x02K\x01\xfe.")), ErrMalformed, pklOff + 4, "data.pkl byte 4: unknown pickle opcode 0xfe"},
		{"huge string", ptEdit([]byte("\x80\x02X\x00\x00\x00\x80.")), ErrTooLarge, pklOff + 2, "length 2147483648"},
		{"deep nesting", ptEdit(deep), ErrTooLarge, pklOff, "nested deeper than 256"},
		{"missing storage", ptEdit(sd(ptDense("FloatStorage", "7", 4))), ErrMalformed, -1, `archive has no member "x/data/7"`},
		{"storage size", ptEdit(sd(ptDense("FloatStorage", "0", 5))), ErrMalformed, -1, "5 elements of torch.FloatStorage need 20 bytes"},
		{"huge numel", ptEdit(sd(ptDense("DoubleStorage", "0", 1<<61))), ErrTooLarge, -1, "2305843009213693952 elements of torch.DoubleStorage overflow int64"},
		{"view beyond storage", ptEdit(sd(ptTensor(ptStorage("FloatStorage", "0", 4), 2, []int{3}, []int{1}))), ErrOutOfRange, -1, "reaches element 4"},
		{"view overflow", ptEdit(sd(ptTensor(ptStorage("FloatStorage", "0", 4), 0, []int{3, 3}, []int{1 << 62, 1 << 62}))), ErrOutOfRange, -1, "overflows"},
		{"size overflow", ptEdit(sd(ptTensor(ptStorage("FloatStorage", "0", 4), 0, []int{1 << 40, 1 << 40}, []int{0, 0}))), ErrTooLarge, -1, "overflows int64"},
		{"stride length", ptEdit(sd(ptTensor(ptStorage("FloatStorage", "0", 4), 0, []int{4}, []int{1, 1}))), ErrMalformed, -1, "differ in length"},
		{"negative size", ptEdit(sd(ptTensor(ptStorage("FloatStorage", "0", 4), 0, []int{-1}, []int{1}))), ErrMalformed, -1, "size[0] is -1"},
		{"unknown type", ptEdit(sd(ptDense("FancyStorage", "0", 4))), ErrUnsupported, -1, "torch.FancyStorage"},
		{"bad pid", ptEdit(sd(pkPID{pkTuple{"module", "x"}})), ErrUnsupported, -1, `persistent id of kind "module"`},
		{"short pid", ptEdit(sd(pkPID{pkTuple{"storage"}})), ErrMalformed, -1, "not ('storage'"},
		{"rebuild args", ptEdit(sd(&pkCall{Fn: ptRebuild, Args: pkTuple{1, 2}})), ErrMalformed, -1, "at least 4 arguments"},
		{"rebuild storage", ptEdit(sd(&pkCall{Fn: ptRebuild, Args: pkTuple{1, 0, pkTuple{}, pkTuple{}}})), ErrMalformed, -1, "storage is a int"},
		{"no data.pkl", func() []byte {
			b, _ := ztBuild(ztOptions{}, []ztMember{{Name: "x/data/0", Data: make([]byte, 4)}})
			return b
		}(), ErrMalformed, -1, "has no data.pkl"},
		{"byteorder", ptEdit(nil, ztMember{Name: "x/data/0", Data: make([]byte, 16)}, ztMember{Name: "x/byteorder", Data: []byte("middle")}), ErrMalformed, -1, `"middle"`},
		{"first member outside a directory", func() []byte {
			b, _ := ztBuild(ztOptions{}, []ztMember{{Name: "data.pkl", Data: []byte("\x80\x02N.")}})
			return b
		}(), ErrMalformed, -1, "not inside an archive directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := openPyTorch(bytes.NewReader(c.b), int64(len(c.b)))
			wantFormatError(t, err, c.sentinel, c.off, c.sub)
		})
	}

	// A storage member whose data holds another member's local header.
	t.Run("overlapping members", func(t *testing.T) {
		pkl := sd(ptDense("FloatStorage", "0", 16), ptDense("FloatStorage", "1", 2))
		inner, _ := ztBuild(ztOptions{}, []ztMember{{Name: "x/data/1", Data: make([]byte, 8)}})
		inner = inner[:zipLocalLen+len("x/data/1")+8]
		outer := append(inner, make([]byte, 64-len(inner))...)
		b, offs := ztBuild(ztOptions{}, []ztMember{{Name: "x/data.pkl", Data: pkl}, {Name: "x/data/0", Data: outer}, {Name: "x/data/1", Data: make([]byte, 8)}})
		// point the directory record of x/data/1 at the header inside x/data/0
		dirOff := int(binary.LittleEndian.Uint32(b[len(b)-zipEndLen+16:]))
		rec := bytes.Index(b[dirOff:], []byte("x/data/1")) + dirOff - zipCentralLen
		binary.LittleEndian.PutUint32(b[rec+42:], uint32(offs[1]))
		_, err := openPyTorch(bytes.NewReader(b), int64(len(b)))
		wantFormatError(t, err, ErrOverlap, -1, "overlaps")
	})
}

// TestPyTorchRoot checks a pickle that is itself a tensor, and one that
// is a storage, and dict keys that are not strings.
func TestPyTorchRoot(t *testing.T) {
	for name, v := range map[string]any{"data": ptDense("FloatStorage", "0", 2, 2), "x": &pkDict{Keys: []any{"x"}, Vals: []any{ptStorage("FloatStorage", "0", 4)}}} {
		b := ptEdit(pickleOf(2, v))
		l := openBytes(t, b)
		if ts := l.Tensors(); len(ts) != 1 || ts[0].Name != name || ts[0].Length != 16 {
			t.Errorf("tensors %+v", ts)
		}
	}
	// one storage viewed as two types
	b := ptEdit(pickleOf(2, &pkDict{Keys: []any{"f", "h"}, Vals: []any{ptDense("FloatStorage", "0", 4), ptDense("HalfStorage", "0", 8)}}))
	l := openBytes(t, b)
	if ts := l.Tensors(); len(ts) != 1 || ts[0].Name != "f" || ts[0].DType != dtype.Invalid || ts[0].Type != "FloatStorage+HalfStorage" || !equalShape(ts[0].Shape, []int64{16}) {
		t.Errorf("tensors %+v", ts)
	}
	if l.Metadata["storage:0"] != `["f","h"]` {
		t.Errorf("metadata %v", l.Metadata)
	}
	for k, want := range map[any]string{"s": "s", pyBytes("b"): "b", int64(-3): "-3", true: "True", false: "False", nil: "None", 0.5: "0.5", &pyTuple{}: "#4"} {
		if got := pyKeyName(k, 4); got != want {
			t.Errorf("pyKeyName(%v) = %q, want %q", k, got, want)
		}
	}
}

// TestPyTorchBounded checks that sharing, cycles and many views cost time
// and memory in proportion to the pickle.
func TestPyTorchBounded(t *testing.T) {
	// 100000 names for one tensor: Metadata keeps 1024 of them.
	var p bytes.Buffer
	p.WriteString("\x80\x02}q\x00(")
	t0 := ptDense("FloatStorage", "0", 4)
	w := &pkWriter{proto: 2, memo: map[any]int{"s:x": 0}}
	w.save(t0)
	tensorPickle := w.b
	p.Write([]byte("X\x01\x00\x00\x00a")) // key "a"
	p.Write(tensorPickle)
	p.WriteString("r\x00\x01\x00\x00") // LONG_BINPUT 256: the tensor
	for i := 0; i < 100000; i++ {
		p.WriteString("X\x06\x00\x00\x00" + strconv.Itoa(100000+i))
		p.WriteString("j\x00\x01\x00\x00")
	}
	p.WriteString("u.")
	start := time.Now()
	l, err := openPyTorch(bytes.NewReader(ptEdit(p.Bytes())), int64(len(ptEdit(p.Bytes()))))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := json.Unmarshal([]byte(l.Metadata["storage:0"]), &names); err != nil || len(names) != torchMaxViews+1 || !strings.Contains(names[torchMaxViews], "more") {
		t.Errorf("metadata has %d names (%v)", len(names), err)
	}
	if ts := l.Tensors(); len(ts) != 1 || ts[0].Name != "100000" {
		t.Errorf("tensors %+v", ts)
	}

	// A dict that contains itself, and tuples that share their halves 2^60
	// ways, around one tensor.
	var q bytes.Buffer
	q.WriteString("\x80\x02}q\x00X\x04\x00\x00\x00selfh\x00s")
	w = &pkWriter{proto: 2, memo: map[any]int{"s:x": 0, "s:y": 1}}
	w.save(t0)
	q.WriteString("X\x01\x00\x00\x00t")
	q.Write(w.b)
	q.WriteString("q\x010")
	for i := 0; i < 60; i++ {
		q.WriteString("h\x01h\x01\x86q\x010")
	}
	q.WriteString("h\x01s.")
	b := ptEdit(q.Bytes())
	l, err = openPyTorch(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if ts := l.Tensors(); len(ts) != 1 || !strings.HasPrefix(ts[0].Name, "t.0.0.0") {
		t.Errorf("tensors %+v", ts)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// ptFailReader fails every read that reaches past limit.
type ptFailReader struct {
	b     []byte
	limit int64
	err   error
}

func (r ptFailReader) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.limit {
		return 0, r.err
	}
	return copy(p, r.b[off:]), nil
}

// TestPyTorchReadErrors checks that read errors are returned, wrapped, and
// that a reader shorter than the size given is ErrTruncated.
func TestPyTorchReadErrors(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range append(ptFixtures(), npFixtures()[len(npFixtures())-2:]...) {
		open := openPyTorch
		if strings.HasSuffix(c.File, ".npz") {
			open = openNPZ
		}
		for _, limit := range []int64{int64(len(c.B)) - 100, 200, 10} {
			_, err := open(ptFailReader{c.B, limit, boom}, int64(len(c.B)))
			if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "checkpoint: ") {
				t.Errorf("%s, reads up to %d: %v", c.File, limit, err)
			}
		}
		_, err := open(bytes.NewReader(c.B[:len(c.B)-10]), int64(len(c.B)))
		wantFormatError(t, err, ErrTruncated, -1)
	}
	b := npFixtures()[0].B
	_, err := openNPY(ptFailReader{b, 20, boom}, int64(len(b)))
	if !errors.Is(err, boom) {
		t.Errorf("npy: %v", err)
	}
}
