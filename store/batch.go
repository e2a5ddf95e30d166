package store

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"neuralzip/dtype"
)

// BatchModel is one model of AddBatch: its name and its files.
type BatchModel struct {
	Name  string
	Files []Input
}

// AddBatch adds models as Add adds them one after another, in the order
// given — the same units, kinds, bases, depths, chunk files and
// manifests, recasts included (TestAddBatchMatchesAdd; the ingest's
// planner, PlanFamily, plans each model on the index as the earlier ones
// leave it; plan.go says where it can still differ) — but as one ingest
// (ingest.go's steps, run here): the units of every model are read,
// hashed and coded on the store's threads together; each family of
// same-size tensors is planned once, its bases read from the inputs
// rather than decoded from the store; a model's chunk file is written
// while its units are coded (each payload dropped once written); and all
// the models enter the index in one transaction. After a crash they are
// all there or all absent (their chunk files orphans that GC removes).
//
// Every unit's bytes are at hand until the commit: an input that is an
// *os.File is mapped in place where the platform allows (mapInput; it
// must not change until AddBatch returns — the CLI's BeforeCommit checks
// that it did not — and one cut short meanwhile is ErrInputChanged: the
// goroutines reading it recover the memory fault, fault.go), any
// other is read into memory: the caller bounds a batch (the CLI:
// BatchBytes of files; a larger model comes alone, and goes through Add,
// which holds one unit at a time, unless it is mapped: streamable). The results are in the order of models. A name given
// twice or already stored is an error before anything is read.
func (s *Store) AddBatch(models []BatchModel, opt AddOptions) (_ []*Manifest, _ []AddStats, err error) {
	if err := s.checkBatch(models); err != nil {
		return nil, nil, err
	}
	b := &batch{s: s, models: models, opt: opt, threads: s.opt.threads()}
	defer b.release()
	defer guardFaults()()
	defer recoverFault(&err)
	if err := b.read(); err != nil {
		return nil, nil, err
	}
	hook("read")
	b.startSHA256()
	if err := b.sortNew(); err != nil {
		return nil, nil, err
	}
	if err := b.plan(); err != nil {
		return nil, nil, err
	}
	if err := b.code(); err != nil {
		return nil, nil, err
	}
	hook("packed")
	if opt.BeforeCommit != nil {
		if err := opt.BeforeCommit(); err != nil {
			return nil, nil, fmt.Errorf("store: %w", err)
		}
	}
	out, skipped, err := s.commitModels(b.ms)
	if err != nil {
		return nil, nil, err
	}
	if len(skipped) > 0 {
		// added meanwhile by another writer with the same files
		return nil, nil, fmt.Errorf("%w: %q", ErrExists, skipped[0])
	}
	return out, b.stats(out), nil
}

// checkBatch refuses a batch before anything is read: a read-only store,
// a bad name, a name given twice or already stored.
func (s *Store) checkBatch(models []BatchModel) error {
	if s.opt.ReadOnly {
		return errors.New("store: opened read-only")
	}
	given := map[string]bool{}
	for _, bm := range models {
		if err := checkModel(bm.Name, bm.Files); err != nil {
			return err
		}
		if given[bm.Name] {
			return fmt.Errorf("store: model %q given twice", bm.Name)
		}
		given[bm.Name] = true
	}
	return s.kv.view(func(t tx) error {
		for _, bm := range models {
			if t.get(bModels, []byte(bm.Name)) != nil {
				return fmt.Errorf("%w: %q", ErrExists, bm.Name)
			}
		}
		return nil
	})
}

// batch is the state of one AddBatch, step by step.
type batch struct {
	s       *Store
	models  []BatchModel
	opt     AddOptions
	threads int

	us     []*bunit        // every unit of every file, in the ingest order (read)
	unmaps []func()        // the files read maps (read; release ends them)
	shas   [][32]byte      // every file's SHA-256 (startSHA256)
	shaEnd []chan struct{} // closed once shas[k] is there (startSHA256)
	shaWG  sync.WaitGroup  // startSHA256's goroutine
	shaErr error           // why it stopped early (set before the shaEnd it did not fill close)
	stop   atomic.Bool     // release: startSHA256's goroutine stops
	frs    []fileRef       // every file (read)
	first  map[Hash]*bunit // the first unit of each hash (sortNew)
	fresh  []*bunit        // the first units the store does not hold, in order (sortNew)
	plans  []Plan          // the fresh units' plans, in the ingest order (plan)
	news   []NewUnit       // plans[i] coded (code)
	ms     []ModelCommit   // what enters the index (code)
}

// bunit is one unit of a batch: its description and its bytes.
type bunit struct {
	info UnitInfo
	raw  []byte // a slice of its file's bytes
}

// fileRef is one file of a batch: its units are us[lo:hi].
type fileRef struct{ mi, fi, lo, hi int }

// bySize orders units the largest first, so that no thread is left with a
// large one at the end.
func bySize(v []*bunit) []*bunit {
	v = slices.Clone(v)
	sort.SliceStable(v, func(a, b int) bool { return v[a].info.N > v[b].info.N })
	return v
}

// read cuts every file into its units, maps or reads them (mapInput: a
// file in place; else one buffer per file, the units slices of it, each
// unit read by one task: a large file is read on every thread) and
// hashes every unit.
func (b *batch) read() error {
	var fileOf []int // per unit, its file (frs index)
	for mi, bm := range b.models {
		for fi, in := range bm.Files {
			lo := len(b.us)
			for ui, sp := range Spans(in.Size, in.Segments) {
				b.us = append(b.us, &bunit{info: UnitInfo{Model: mi, File: fi, Index: ui, Span: sp}})
				fileOf = append(fileOf, len(b.frs))
			}
			b.frs = append(b.frs, fileRef{mi, fi, lo, len(b.us)})
		}
	}
	at := map[*bunit]int{}
	for i, u := range b.us {
		at[u] = fileOf[i]
	}
	mapped := make([]bool, len(b.frs))
	for k, fr := range b.frs {
		in := b.models[fr.mi].Files[fr.fi]
		buf, unmap, ok := mapInput(in.R, in.Size)
		if ok {
			b.unmaps = append(b.unmaps, unmap)
		} else {
			buf = make([]byte, in.Size)
		}
		mapped[k] = ok
		for _, u := range b.us[fr.lo:fr.hi] {
			u.raw = buf[u.info.Off : u.info.Off+u.info.N]
		}
	}
	sized := bySize(b.us)
	return parallel(len(sized), b.threads, func(k int) error {
		u := sized[k]
		fr := b.frs[at[u]]
		in := b.models[fr.mi].Files[fr.fi]
		if !mapped[at[u]] {
			if n, err := in.R.ReadAt(u.raw, u.info.Off); err != nil && !(errors.Is(err, io.EOF) && n == len(u.raw)) {
				return fmt.Errorf("store: model %q: file %q: %w", b.models[fr.mi].Name, in.Name, err)
			}
		}
		u.info.Hash = b.s.sum(u.raw)
		return nil
	})
}

// release ends the mappings of read once nothing reads them: no unit's
// bytes are used after.
func (b *batch) release() {
	b.stop.Store(true)
	b.shaWG.Wait()
	for _, unmap := range b.unmaps {
		unmap()
	}
	b.unmaps = nil
}

// startSHA256 hashes every file (SHA-256, the manifests') in order on a
// goroutine of its own, beside the steps before the coding, whose
// lookups and planning leave a thread idle; hashFile waits for its
// file's sum.
func (b *batch) startSHA256() {
	b.shas = make([][32]byte, len(b.frs))
	b.shaEnd = make([]chan struct{}, len(b.frs))
	for k := range b.shaEnd {
		b.shaEnd[k] = make(chan struct{})
	}
	b.shaWG.Add(1)
	go func() {
		defer b.shaWG.Done()
		defer guardFaults()()
		k := 0
		defer func() { // a fault: the files not hashed fail (hashFile)
			if r := recover(); r != nil {
				b.shaErr = faultError(r)
			}
			for ; k < len(b.frs); k++ {
				close(b.shaEnd[k])
			}
		}()
		for ; k < len(b.frs); k++ {
			fr := b.frs[k]
			fh := sha256.New()
			for _, u := range b.us[fr.lo:fr.hi] {
				if b.stop.Load() {
					b.shaErr = errStopped
					return
				}
				fh.Write(u.raw)
			}
			fh.Sum(b.shas[k][:0])
			close(b.shaEnd[k])
		}
	}()
}

// sortNew finds the new units — the first of each hash, unless the store
// holds it — and describes them (fingerprints and cast hashes,
// Describe's).
func (b *batch) sortNew() error {
	b.first = map[Hash]*bunit{}
	var firsts []*bunit
	for _, u := range b.us {
		if _, ok := b.first[u.info.Hash]; !ok {
			b.first[u.info.Hash] = u
			firsts = append(firsts, u)
		}
	}
	if err := b.s.kv.view(func(t tx) error {
		for _, u := range firsts {
			if t.get(bUnits, u.info.Hash[:]) == nil {
				b.fresh = append(b.fresh, u)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	sized := bySize(b.fresh)
	if err := parallel(len(sized), b.threads, func(k int) error {
		u := sized[k]
		u.info.FP, u.info.Casts = b.s.describeValues(u.raw, u.info.DType)
		return nil
	}); err != nil {
		return err
	}
	if b.s.ver == Version2 {
		return b.castHashes()
	}
	return nil
}

// castHashes hashes the casts of the fresh F32 units whose cast
// fingerprint is that of a fresh 16-bit unit of the batch or of a stored
// one (castMatches): version 2's stand-in for the cast hints, so that the
// commit recasts those units (recastStored).
func (b *batch) castHashes() error {
	fps := castFPs{} // the fresh 16-bit units'
	var f32 []*bunit
	for _, u := range b.fresh {
		switch {
		case u.info.FP == nil:
		case castable(u.info.DType):
			fps.add(u.info.DType, u.info.N/2, u.info.FP)
		case u.info.DType == dtype.F32:
			f32 = append(f32, u)
		}
	}
	var need []*bunit
	if err := b.s.kv.view(func(t tx) error {
		cands := b.s.candidates(t)
		infos := make([]UnitInfo, len(f32))
		for i, u := range f32 {
			infos[i] = u.info
		}
		prefetchPlans(t, infos...)
		for _, u := range f32 {
			numel := u.info.N / 4
			hit := fps.castOf(u.info.FP, numel)
			if !hit {
				var err error
				if hit, err = castMatches(t, u.info.FP, numel, cands); err != nil {
					return err
				}
			}
			if hit {
				need = append(need, u)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return parallel(len(need), b.threads, func(k int) error {
		need[k].info.Casts = castHashes(need[k].raw, b.s.sum)
		return nil
	})
}

// plan plans each family of new float units together (PlanFamily), the
// rest alone.
func (b *batch) plan() error {
	families := map[string][]UnitInfo{}
	var fams []string
	for _, u := range b.fresh {
		if f := u.info.Family(); f != "" {
			if families[f] == nil {
				fams = append(fams, f)
			}
			families[f] = append(families[f], u.info)
		} else {
			b.plans = append(b.plans, Plan{Unit: u.info, Kind: KindNzip})
		}
	}
	var pmu sync.Mutex
	if err := parallel(len(fams), b.threads, func(k int) error {
		ps, err := b.s.PlanFamily(families[fams[k]])
		if err != nil {
			return err
		}
		pmu.Lock()
		b.plans = append(b.plans, ps...)
		pmu.Unlock()
		return nil
	}); err != nil {
		return err
	}
	sort.Slice(b.plans, func(i, j int) bool { return b.plans[i].Unit.Before(b.plans[j].Unit) })
	return nil
}

// task is one piece of coding work: a file's hash (and -compare archive)
// or a plan.
type task struct {
	mi   int
	file int // frs index, or -1
	plan int // plans index, or -1
}

// code runs one pool of tasks, model after model: the model's file
// hashes (and -compare archives), then its plans in the ingest order (the
// order of its chunk file). Each model's chunk file is written while its
// units are coded (streamPack: a goroutine of its own, each payload
// written and dropped as soon as those before it are), so that the file
// is not held whole and the write overlaps the coding.
func (b *batch) code() error {
	b.ms = make([]ModelCommit, len(b.models))
	for mi, bm := range b.models {
		b.ms[mi] = ModelCommit{Name: bm.Name, Files: make([]FileEntry, len(bm.Files))}
	}
	byModel := make([][]int, len(b.models))
	for i, p := range b.plans {
		byModel[p.Unit.Model] = append(byModel[p.Unit.Model], i)
	}
	var tasks []task
	fi := 0
	for mi := range b.models {
		for ; fi < len(b.frs) && b.frs[fi].mi == mi; fi++ {
			tasks = append(tasks, task{mi, fi, -1})
		}
		for _, i := range byModel[mi] {
			tasks = append(tasks, task{mi, -1, i})
		}
	}
	b.news = make([]NewUnit, len(b.plans))
	payloads := make([][]byte, len(b.plans))
	coded := make([]chan struct{}, len(b.plans))
	for i := range coded {
		coded[i] = make(chan struct{})
	}
	alone := make([]int64, len(b.frs))
	var (
		wg    sync.WaitGroup
		perr  = make([]error, len(b.models))
		quit  = make(chan struct{})
		slots = make(chan struct{}, packWriters)
	)
	for mi := range b.models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			perr[mi] = b.streamPack(mi, byModel[mi], payloads, coded, quit, slots)
		}()
	}
	err := parallel(len(tasks), b.threads, func(k int) error {
		t := tasks[k]
		if t.file >= 0 {
			var err error
			alone[t.file], err = b.hashFile(t.file)
			return err
		}
		if err := b.codeUnit(t.plan, payloads); err != nil {
			return err
		}
		close(coded[t.plan])
		return nil
	})
	if err != nil {
		close(quit)
	}
	wg.Wait()
	if err != nil {
		return err
	}
	for _, err := range perr {
		if err != nil {
			return err
		}
	}
	for k, fr := range b.frs {
		b.ms[fr.mi].Alone += alone[k]
	}
	return nil
}

// hashFile makes file k's entry (its units and SHA-256, startSHA256's)
// and, with -compare, returns the size of its own archive.
func (b *batch) hashFile(k int) (int64, error) {
	fr := b.frs[k]
	in := b.models[fr.mi].Files[fr.fi]
	fe := FileEntry{Name: in.Name, Size: in.Size, Format: in.Format}
	for _, u := range b.us[fr.lo:fr.hi] {
		fe.Units = append(fe.Units, u.info.Hash)
	}
	<-b.shaEnd[k]
	if b.shaErr != nil { // set before the channel closed
		return 0, b.shaErr
	}
	fe.SHA256 = b.shas[k]
	b.ms[fr.mi].Files[fr.fi] = fe
	if !b.opt.Compare {
		return 0, nil
	}
	alone, err := archiveSize(in)
	if err != nil {
		return 0, fmt.Errorf("store: model %q: file %q: %w", b.models[fr.mi].Name, in.Name, err)
	}
	return alone, nil
}

// codeUnit codes plan i, its base read from the batch's inputs or
// decoded from the store.
func (b *batch) codeUnit(i int, payloads [][]byte) error {
	p := b.plans[i]
	name := b.models[p.Unit.Model].Name
	var base []byte
	if p.Kind == KindDelta || p.Kind == KindCast && b.s.ver == Version2 {
		if bu, ok := b.first[p.Base]; ok && p.BaseAt != nil {
			base = bu.raw
		} else {
			var err error
			if base, err = b.s.UnitBytes(p.Base); err != nil {
				return fmt.Errorf("store: model %q: base %s: %w", name, p.Base, err)
			}
		}
	}
	nu, payload, err := codePlan(p, b.first[p.Unit.Hash].raw, base, b.s.ver == Version2)
	if err != nil {
		return fmt.Errorf("store: model %q: %w", name, err)
	}
	b.news[i], payloads[i] = nu, payload
	return nil
}

// streamPack writes model mi's chunk file (its plans are plans[idx], in
// pack order) as its units are coded (coded[i] closed), each payload
// dropped once written, and sets its new units' places in it; it stops
// when quit is closed (the coding failed). slots bounds the chunk files
// synced at once (each sync mostly waits for the disk).
func (b *batch) streamPack(mi int, idx []int, payloads [][]byte, coded []chan struct{}, quit, slots chan struct{}) error {
	nus := make([]NewUnit, len(idx))
	var w packWriter
	off := int64(0)
	fail := func(err error) error {
		if w != nil {
			w.abort()
		}
		return err
	}
	for k, i := range idx {
		select {
		case <-coded[i]:
		case <-quit:
			return fail(nil)
		}
		nus[k] = b.news[i]
		if nus[k].Kind == KindCast {
			continue
		}
		if w == nil {
			var err error
			if w, err = b.s.bl.create(); err != nil {
				return fmt.Errorf("store: model %q: %w", b.models[mi].Name, err)
			}
		}
		off = placeUnit(&nus[k], off, payloads[i])
		if err := w.write(payloads[i]); err != nil {
			return fail(fmt.Errorf("store: model %q: %w", b.models[mi].Name, err))
		}
		payloads[i] = nil
	}
	if w != nil {
		slots <- struct{}{}
		id, err := w.finish()
		<-slots
		if err != nil {
			return fmt.Errorf("store: model %q: %w", b.models[mi].Name, err)
		}
		for k := range nus {
			if nus[k].Kind != KindCast {
				nus[k].Pack = id
			}
		}
	}
	b.ms[mi].New = nus
	return nil
}

// stats counts what each model's add did, as Add counts it.
func (b *batch) stats(out []*Manifest) []AddStats {
	sts := make([]AddStats, len(b.models))
	kinds := map[Hash]uint8{}
	for _, nu := range b.news {
		kinds[nu.Unit.Hash] = nu.Kind
	}
	for _, u := range b.us {
		st := &sts[u.info.Model]
		st.Units++
		st.Raw += u.info.N
		k, ok := kinds[u.info.Hash]
		switch {
		case !ok || b.first[u.info.Hash] != u: // stored, or a repeat
			st.Dedup++
			st.Skipped += u.info.N
		case k == KindCast:
			st.Casts++
			st.Skipped += u.info.N
		case k == KindDelta:
			st.Deltas++
		default:
			st.Coded++
		}
	}
	for mi := range b.models {
		sts[mi].Added = out[mi].Added
	}
	return sts
}

// packWriters: chunk files synced at once by AddBatch (each waits mostly
// for its fsync).
const packWriters = 4

// mapMin: inputs of at least this many bytes are mapped, not read
// (mapInput).
var mapMin int64 = 1 << 20

// The batches of nzip store add: at most BatchBytes of files (held in
// memory while the batch is coded) and BatchModels models (their files
// open) in one AddBatch; a model larger than BatchBytes is added alone,
// through AddBatch where its files are mapped, not read (streamable),
// else through Add.
const (
	BatchBytes  = 256 << 20
	BatchModels = 64
)

// streamable says whether a model larger than BatchBytes, of files of
// size bytes in all, may go through AddBatch on a machine of mem bytes
// of memory: every file is mapped (mappable: AddBatch then holds none of
// its bytes in memory of its own, and streams the payloads to the chunk
// file), and the model fits in half the memory, so that the page cache
// keeps its bytes between AddBatch's passes over them (hashes and
// fingerprints, the SHA-256, the coding). Otherwise Add, which reads one
// unit at a time and makes every pass over it before the next, reads a
// model larger than the page cache from disk once, not once per pass.
// Never on a 32-bit platform: a mapping that its address space refuses
// would have AddBatch read the whole model into memory instead.
func streamable(files []Input, size int64, mem uint64) bool {
	if bits.UintSize < 64 || size <= 0 || mem/2 < uint64(size) {
		return false
	}
	for _, in := range files {
		if _, ok := mappable(in.R, in.Size); !ok {
			return false
		}
	}
	return true
}

// batching places the next model, of n bytes, when the batch being
// gathered holds models models of size bytes: alone (through Add, after
// the batch is added), or into the batch, which is added first when the
// model does not fit (flush).
func batching(models int, size, n int64) (alone, flush bool) {
	if n > BatchBytes {
		return true, true
	}
	return false, size+n > BatchBytes || models == BatchModels
}

// Batcher adds models in the order given as nzip store add adds them:
// gathered into batches (batching) that AddBatch adds, a model too large
// for one through Add. Opt is the options of every add (its BeforeCommit
// is replaced by the models' checks); Added, if set, hears of each model
// once it is added.
type Batcher struct {
	Store *Store
	Opt   AddOptions
	Added func(m *Manifest, st AddStats)

	batch  []BatchModel
	checks []func() error
	dones  []func()
	size   int64
}

// Add adds model name of files, now or with its batch. check (may be
// nil) runs before the model's batch commits and fails it; done (may be
// nil) runs once the model is added or has failed, or is discarded, and
// only then (the caller's files stay open until it runs).
func (b *Batcher) Add(name string, files []Input, check func() error, done func()) error {
	var n int64
	for _, in := range files {
		n += in.Size
	}
	alone, full := batching(len(b.batch), b.size, n)
	if full {
		if err := b.Flush(); err != nil {
			if done != nil {
				done()
			}
			return err
		}
	}
	b.batch = append(b.batch, BatchModel{Name: name, Files: files})
	b.checks = append(b.checks, check)
	b.dones = append(b.dones, done)
	b.size += n
	if alone {
		return b.Flush()
	}
	return nil
}

// Flush adds the models gathered: one through Add, several through
// AddBatch (none of which is added when it fails; the error says so).
func (b *Batcher) Flush() error {
	if len(b.batch) == 0 {
		return nil
	}
	defer b.Discard()
	opt := b.Opt
	checks := b.checks
	opt.BeforeCommit = func() error {
		for _, c := range checks {
			if c != nil {
				if err := c(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var ms []*Manifest
	var sts []AddStats
	var err error
	if len(b.batch) == 1 && b.size > BatchBytes && !streamable(b.batch[0].Files, b.size, physMem()) {
		// one tensor in memory at a time
		m, st, aerr := b.Store.Add(b.batch[0].Name, b.batch[0].Files, opt)
		ms, sts, err = []*Manifest{m}, []AddStats{st}, aerr
	} else {
		ms, sts, err = b.Store.AddBatch(b.batch, opt)
	}
	if err != nil {
		if n := len(b.batch); n > 1 {
			return fmt.Errorf("%w (none of this batch's %d models was added)", err, n)
		}
		return err
	}
	if b.Added != nil {
		for i, m := range ms {
			b.Added(m, sts[i])
		}
	}
	return nil
}

// Discard drops the models gathered and not added, running their dones.
func (b *Batcher) Discard() {
	for _, d := range b.dones {
		if d != nil {
			d()
		}
	}
	b.batch, b.checks, b.dones, b.size = b.batch[:0], b.checks[:0], b.dones[:0], 0
}
