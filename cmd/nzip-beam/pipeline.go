package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"neuralzip/store"
)

// The ingest pipeline (store/ingest.go describes the steps):
//
//	models ─describe─▶ units ─GroupByKey(hash)─▶ new units ─GroupByKey(family)─▶ plans
//	       └─────────▶ files                                                      │
//	plans ─GroupByKey(model)─▶ code, write the model's chunk file ─▶ packs ─┐     │
//	files ──────────────────────────────────────────────────────────────────┴─CoGroupByKey─▶ commit (in order)
//
// Elements are coded by coder.go (files and models by gob). Each step is
// deterministic: a bundle the runner retries writes the same
// content-addressed packs, and a model is committed once (CommitModels
// leaves one already stored as it is).

// fileEl is one file of a model: its manifest entry.
type fileEl struct {
	Model int
	Name  string // the model's name
	File  int
	Entry store.FileEntry
}

// packEl is a model's new units, placed in its stored pack.
type packEl struct {
	Model int
	New   []store.NewUnit
}

var (
	cFiles    = beam.NewCounter("nzip", "files")
	cBytes    = beam.NewCounter("nzip", "bytes")
	cUnits    = beam.NewCounter("nzip", "units")
	cDedup    = beam.NewCounter("nzip", "units_deduplicated")
	cDedupB   = beam.NewCounter("nzip", "bytes_deduplicated")
	cCasts    = beam.NewCounter("nzip", "units_cast")
	cCastB    = beam.NewCounter("nzip", "bytes_cast")
	cDeltas   = beam.NewCounter("nzip", "units_delta")
	cCoded    = beam.NewCounter("nzip", "units_coded")
	cAdded    = beam.NewCounter("nzip", "bytes_added")
	cModels   = beam.NewCounter("nzip", "models_committed")
	cSkipped  = beam.NewCounter("nzip", "models_already_stored")
	cFamilies = beam.NewCounter("nzip", "families")
)

func gobEnc(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

func gobDec(b []byte, v any) error { return gob.NewDecoder(bytes.NewReader(b)).Decode(v) }

func init() {
	beam.RegisterCoder(reflect.TypeOf(modelRef{}), func(v modelRef) ([]byte, error) { return gobEnc(v) },
		func(b []byte) (v modelRef, err error) { err = gobDec(b, &v); return })
	beam.RegisterCoder(reflect.TypeOf(store.UnitInfo{}), encUnit, decUnit)
	beam.RegisterCoder(reflect.TypeOf(store.Plan{}), encPlan, decPlan)
	beam.RegisterCoder(reflect.TypeOf(fileEl{}), func(v fileEl) ([]byte, error) { return gobEnc(v) },
		func(b []byte) (v fileEl, err error) { err = gobDec(b, &v); return })
	beam.RegisterCoder(reflect.TypeOf(packEl{}), encPack, decPack)

	register.DoFn4x1[context.Context, modelRef, func(store.UnitInfo), func(fileEl), error](&describeFn{})
	register.Function2x0(keyByHash)
	register.DoFn4x1[context.Context, string, func(*store.UnitInfo) bool, func(store.UnitInfo), error](&firstFn{})
	register.Function3x0(splitFamily)
	register.DoFn4x1[context.Context, string, func(*store.UnitInfo) bool, func(store.Plan), error](&planFn{})
	register.Function2x0(keyPlan)
	register.DoFn4x1[context.Context, int, func(*store.Plan) bool, func(string, packEl), error](&modelFn{})
	register.Function2x0(keyFile)
	register.DoFn4x1[context.Context, string, func(*fileEl) bool, func(*packEl) bool, error](&commitFn{})
	register.Emitter1[store.UnitInfo]()
	register.Emitter1[fileEl]()
	register.Emitter2[string, store.UnitInfo]()
	register.Emitter1[store.Plan]()
	register.Emitter2[int, store.Plan]()
	register.Emitter2[string, packEl]()
	register.Emitter2[string, fileEl]()
	register.Iter1[store.UnitInfo]()
	register.Iter1[store.Plan]()
	register.Iter1[fileEl]()
	register.Iter1[packEl]()
}

// stores holds this process's open stores, by location: the driver's (a
// directory store is held for writing by the driver, whose in-process
// workers share it) and those workers on other machines open (s3://).
var stores struct {
	sync.Mutex
	m map[string]*store.Store
}

func openStore(loc string) (*store.Store, error) {
	stores.Lock()
	defer stores.Unlock()
	if s, ok := stores.m[loc]; ok {
		return s, nil
	}
	if !store.IsS3(loc) {
		return nil, fmt.Errorf("%s: a directory store is open only in the process that runs the pipeline (use -runner prism, or an s3:// store)", loc)
	}
	s, err := store.Open(loc, store.Options{Threads: 1})
	if err != nil {
		return nil, err
	}
	if stores.m == nil {
		stores.m = map[string]*store.Store{}
	}
	stores.m[loc] = s
	return s, nil
}

// holdStore registers the driver's open store; the returned func drops it.
func holdStore(loc string, s *store.Store) func() {
	stores.Lock()
	defer stores.Unlock()
	if stores.m == nil {
		stores.m = map[string]*store.Store{}
	}
	stores.m[loc] = s
	return func() {
		stores.Lock()
		delete(stores.m, loc)
		stores.Unlock()
	}
}

// describeFn reads models' files and describes every unit (hash,
// fingerprint, cast hashes); it emits the units and the files' manifest
// entries (their units' hashes and the file's SHA-256). Like modelFn it
// works on a few models at a time, on every core.
type describeFn struct {
	buf []modelRef
}

func (f *describeFn) ProcessElement(ctx context.Context, m modelRef, emitUnit func(store.UnitInfo), emitFile func(fileEl)) error {
	f.buf = append(f.buf, m)
	if len(f.buf) >= 2*runtime.GOMAXPROCS(0) {
		return f.flush(ctx, emitUnit, emitFile)
	}
	return nil
}

func (f *describeFn) FinishBundle(ctx context.Context, emitUnit func(store.UnitInfo), emitFile func(fileEl)) error {
	return f.flush(ctx, emitUnit, emitFile)
}

type described struct {
	units []store.UnitInfo
	files []fileEl
}

func (f *describeFn) flush(ctx context.Context, emitUnit func(store.UnitInfo), emitFile func(fileEl)) error {
	ms := f.buf
	f.buf = nil
	out := make([]described, len(ms))
	errs := make([]error, len(ms))
	onCores(len(ms), func(i int) { out[i], errs[i] = describe(ms[i]) })
	for i, d := range out {
		if errs[i] != nil {
			return errs[i]
		}
		for _, u := range d.units {
			emitUnit(u)
		}
		for _, fe := range d.files {
			emitFile(fe)
			cBytes.Inc(ctx, fe.Entry.Size)
		}
		cUnits.Inc(ctx, int64(len(d.units)))
		cFiles.Inc(ctx, int64(len(d.files)))
	}
	return nil
}

func describe(m modelRef) (d described, err error) {
	files, err := openModel(m.Path, warnings)
	if err != nil {
		return d, err
	}
	defer closeFiles(files)
	for fi, in := range files {
		fe := store.FileEntry{Name: in.Name, Size: in.Size, Format: in.Format}
		fh := sha256.New()
		var raw []byte
		for ui, sp := range store.Spans(in.Size, in.Segs) {
			if int64(cap(raw)) < sp.N {
				raw = make([]byte, sp.N)
			}
			raw = raw[:sp.N]
			if n, err := in.R.ReadAt(raw, sp.Off); err != nil && !(errors.Is(err, io.EOF) && int64(n) == sp.N) {
				return d, fmt.Errorf("%s: %w", in.Src, err)
			}
			fh.Write(raw)
			h, fp, casts := store.Describe(raw, sp.DType)
			d.units = append(d.units, store.UnitInfo{Model: m.Seq, File: fi, Index: ui, Src: in.Src, Span: sp, Hash: h, FP: fp, Casts: casts})
			fe.Units = append(fe.Units, h)
		}
		copy(fe.SHA256[:], fh.Sum(nil))
		d.files = append(d.files, fileEl{Model: m.Seq, Name: m.Name, File: fi, Entry: fe})
	}
	return d, nil
}

// onCores runs fn(0..n-1) on every core.
func onCores(n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func keyByHash(u store.UnitInfo, emit func(string, store.UnitInfo)) {
	emit(hex.EncodeToString(u.Hash[:]), u)
}

// firstFn keeps the first unit of each hash (in the ingest order) unless
// the store holds it; the others are references to it.
type firstFn struct{ Store string }

func (f *firstFn) ProcessElement(ctx context.Context, _ string, units func(*store.UnitInfo) bool, emit func(store.UnitInfo)) error {
	var first store.UnitInfo
	var u store.UnitInfo
	n := 0
	var bytes int64
	for units(&u) {
		if n == 0 || u.Before(first) {
			first = u
		}
		n++
		bytes += u.N
	}
	s, err := openStore(f.Store)
	if err != nil {
		return err
	}
	stored, err := s.Has(first.Hash)
	if err != nil {
		return err
	}
	if !stored {
		emit(first)
		n--
		bytes -= first.N
	}
	cDedup.Inc(ctx, int64(n))
	cDedupB.Inc(ctx, bytes)
	return nil
}

// splitFamily sends float tensors to their family's planning and plans
// the rest (coded alone) at once.
func splitFamily(u store.UnitInfo, family func(string, store.UnitInfo), alone func(store.Plan)) {
	if k := u.Family(); k != "" {
		family(k, u)
	} else {
		alone(store.Plan{Unit: u, Kind: store.KindNzip})
	}
}

// planFn plans one family (store.PlanFamily).
type planFn struct{ Store string }

func (f *planFn) ProcessElement(ctx context.Context, _ string, units func(*store.UnitInfo) bool, emit func(store.Plan)) error {
	var us []store.UnitInfo
	var u store.UnitInfo
	for units(&u) {
		us = append(us, u)
		u = store.UnitInfo{}
	}
	s, err := openStore(f.Store)
	if err != nil {
		return err
	}
	plans, err := s.PlanFamily(us)
	if err != nil {
		return err
	}
	for _, p := range plans {
		emit(p)
	}
	cFamilies.Inc(ctx, 1)
	return nil
}

func keyPlan(p store.Plan, emit func(int, store.Plan)) { emit(p.Unit.Model, p) }

// codeUnit codes a planned unit, reading its bytes (and its base's) again.
func codeUnit(loc string, p store.Plan) (store.NewUnit, []byte, error) {
	raw, err := readSpan(p.Unit.Src, p.Unit.Off, p.Unit.N)
	if err != nil {
		return store.NewUnit{}, nil, err
	}
	var base []byte
	if p.Kind == store.KindDelta || p.Kind == store.KindCast {
		// a cast found from the fingerprints is confirmed on its base's bytes
		if p.BaseAt != nil {
			base, err = readSpan(p.BaseAt.Src, p.BaseAt.Off, p.BaseAt.N)
		} else {
			var s *store.Store
			if s, err = openStore(loc); err == nil {
				base, err = s.UnitBytes(p.Base)
			}
		}
		if err != nil {
			return store.NewUnit{}, nil, fmt.Errorf("base %x of %s: %w", p.Base[:8], p.Unit.Src, err)
		}
	}
	nu, payload, err := store.Code(p, raw, base)
	if err != nil {
		return store.NewUnit{}, nil, fmt.Errorf("%s: %w", p.Unit.Src, err)
	}
	return nu, payload, nil
}

// packHook, when set (tests), runs after each chunk file is written with
// the number written so far by this process; an error ends the pipeline.
var packHook func(written int) error

var packsWritten atomic.Int64

// modelFn codes one model's planned units, on every core of its worker,
// and writes their payloads as the model's chunk file: the payloads never
// travel between workers, only the units' places in the chunk do.
type modelFn struct{ Store string }

func (f *modelFn) ProcessElement(ctx context.Context, model int, planned func(*store.Plan) bool, emit func(string, packEl)) error {
	var plans []store.Plan
	var p store.Plan
	for planned(&p) {
		plans = append(plans, p)
		p = store.Plan{}
	}
	sort.Slice(plans, func(i, j int) bool { return plans[i].Unit.Before(plans[j].Unit) })
	units := make([]store.NewUnit, len(plans))
	payloads := make([][]byte, len(plans))
	errs := make([]error, len(plans))
	onCores(len(plans), func(i int) { units[i], payloads[i], errs[i] = codeUnit(f.Store, plans[i]) })
	for i, u := range units {
		if errs[i] != nil {
			return errs[i]
		}
		switch u.Kind {
		case store.KindCast:
			cCasts.Inc(ctx, 1)
			cCastB.Inc(ctx, u.Unit.N)
		case store.KindDelta:
			cDeltas.Inc(ctx, 1)
		default:
			cCoded.Inc(ctx, 1)
		}
	}
	if pack := store.Pack(units, payloads); len(pack) > 0 {
		s, err := openStore(f.Store)
		if err != nil {
			return err
		}
		id, err := s.PutPack(pack)
		if err != nil {
			return err
		}
		for i := range units {
			if units[i].Kind != store.KindCast {
				units[i].Pack = id
			}
		}
		cAdded.Inc(ctx, int64(len(pack)))
		if packHook != nil {
			if err := packHook(int(packsWritten.Add(1))); err != nil {
				return err
			}
		}
	}
	emit("", packEl{Model: model, New: units})
	return nil
}

func keyFile(f fileEl, emit func(string, fileEl)) { emit("", f) }

// commitHook, when set (tests), runs before each commit with the number
// of models committed so far; an error ends the pipeline there.
var commitHook func(done int) error

// commitFn commits the models in the ingest order, Batch at a time.
type commitFn struct {
	Store string
	Batch int
}

func (f *commitFn) ProcessElement(ctx context.Context, _ string, files func(*fileEl) bool, packs func(*packEl) bool) error {
	byModel := map[int]*store.ModelCommit{}
	get := func(m int) *store.ModelCommit {
		if byModel[m] == nil {
			byModel[m] = &store.ModelCommit{}
		}
		return byModel[m]
	}
	var fes []fileEl
	var fe fileEl
	for files(&fe) {
		fes = append(fes, fe)
		fe = fileEl{}
	}
	sort.Slice(fes, func(i, j int) bool {
		if fes[i].Model != fes[j].Model {
			return fes[i].Model < fes[j].Model
		}
		return fes[i].File < fes[j].File
	})
	for _, fe := range fes {
		mc := get(fe.Model)
		mc.Name = fe.Name
		mc.Files = append(mc.Files, fe.Entry)
	}
	var pe packEl
	for packs(&pe) {
		get(pe.Model).New = pe.New
		pe = packEl{}
	}
	order := make([]int, 0, len(byModel))
	for m, mc := range byModel {
		if mc.Name == "" {
			return fmt.Errorf("model %d: units but no files", m)
		}
		order = append(order, m)
	}
	slices.Sort(order)
	s, err := openStore(f.Store)
	if err != nil {
		return err
	}
	batch := max(f.Batch, 1)
	for done := 0; done < len(order); done += batch {
		if commitHook != nil {
			if err := commitHook(done); err != nil {
				return err
			}
		}
		var ms []store.ModelCommit
		for _, m := range order[done:min(done+batch, len(order))] {
			ms = append(ms, *byModel[m])
		}
		skipped, err := s.CommitModels(ms)
		if err != nil {
			return err
		}
		cModels.Inc(ctx, int64(len(ms)-len(skipped)))
		cSkipped.Inc(ctx, int64(len(skipped)))
	}
	return nil
}

// build makes the ingest pipeline of models into the store at loc.
func build(loc string, models []modelRef, batch int) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	ms := beam.Reshuffle(s, beam.CreateList(s, models))
	units, files := beam.ParDo2(s, &describeFn{}, ms)
	first := beam.ParDo(s.Scope("first"), &firstFn{Store: loc}, beam.GroupByKey(s, beam.ParDo(s, keyByHash, units)))
	fam, alone := beam.ParDo2(s, splitFamily, first)
	plans := beam.ParDo(s.Scope("plan"), &planFn{Store: loc}, beam.GroupByKey(s, fam))
	all := beam.Reshuffle(s, beam.Flatten(s, plans, alone))
	packs := beam.ParDo(s.Scope("code"), &modelFn{Store: loc}, beam.GroupByKey(s, beam.ParDo(s, keyPlan, all)))
	beam.ParDo0(s.Scope("commit"), &commitFn{Store: loc, Batch: batch}, beam.CoGroupByKey(s, beam.ParDo(s, keyFile, files), packs))
	return p
}
