package codec

import (
	"context"
	"fmt"
	"sync"

	"neuralzip/codec/search"
	"neuralzip/dtype"
)

// The program search (issue 48, "Search"; docs/programs.md): with
// EncodeOptions.Search = N above 1, each tensor large enough to have
// blocks of its own is coded, before the archive is planned, on a
// deterministic sample (searchSample) with up to N candidate codings
// (searchCandidates: the encoder's own choice first, then every program
// that applies, zstd with a second level under it). package search walks
// them best-first in the order the setup's prior ranks them, pruning by
// lower bounds, and this file supplies the costs: the sample's coded
// bytes scaled to the tensor, the program's own bytes (an index entry per
// block of the whole tensor) and its decoding time at the exchange rate
// of cost.go, from a fixed model of each coding's speed (searchPs: no
// clock is read, so the choice is the same on every run and at every
// thread count). A winner found on a sample is coded on the whole tensor
// beside the own choice and kept only where it is smaller there. The
// winner is written as the tensor's program: no format change. The
// default is no search (docs/programs.md, "Search": it costs 3-8× the
// compression time for 0.1-1.3 %).

// Search limits.
const (
	// searchMinBytes: smaller tensors are not searched (they share
	// blocks with their neighbours, and a search would cost more than
	// it saves).
	searchMinBytes = 16 << 10
	// searchWhole: tensors up to this many bytes are coded whole (the
	// estimate is exact); larger ones by searchWindows windows totalling
	// 1/searchFraction of the tensor, between searchWhole and searchMax
	// bytes. Twice these (32-128 KiB at 1/64) found 0.3-16 % more of the
	// savings on the unseen vision models of docs/programs.md ("Search")
	// for 1.2-2.8× the search's time.
	searchWhole    = 16 << 10
	searchMax      = 64 << 10
	searchFraction = 128
	searchWindows  = 4
	// searchIndexBytes: the index entry of a block (kind, lengths,
	// CRC-32C), the program's own bytes per block.
	searchIndexBytes = 12
	// searchZstdHigh: the second zstd level tried under ProgramZstd.
	searchZstdHigh = 11
)

// searchCheckMax: a sampled winner is checked on the whole tensor up to
// this many bytes, on a sample of them above (memory and time); a
// variable for tests.
var searchCheckMax int64 = 64 << 20

// searchPs is the model of each coding's decoding time, picoseconds a
// byte of the original on one core (the Tensors screen's measurements,
// docs/programs.md, rounded): the time term of a candidate's cost is
// bytes × searchPs / exchangePsPerByte.
func searchPs(p Program) int64 {
	switch p {
	case ProgramRaw:
		return 750
	case ProgramFields, ProgramFieldsOwn, ProgramAuto:
		return 1_400
	case ProgramSparse, ProgramZstd:
		return 1_500
	case ProgramPlanes, ProgramZstdPlanes:
		return 2_100
	case ProgramRecords:
		return 1_500 + costRecordsPs
	case ProgramCM:
		return 1_500 + costCMPs
	}
	return 1_400
}

// kindPs is searchPs of a block of the encoder's own choice, by its kind.
func kindPs(kind byte) int64 {
	switch kind {
	case kindStored:
		return searchPs(ProgramRaw)
	case kindZstd:
		return searchPs(ProgramZstd)
	case kindCM:
		return searchPs(ProgramCM)
	case kindRecords:
		return searchPs(ProgramRecords)
	}
	return searchPs(ProgramFields)
}

// choiceOf and pickOf convert between a pick and the search's Choice:
// 1 + the program, plus 256 × the zstd level.
func choiceOf(p pick) search.Choice { return search.Choice(1 + int(p.p) + p.level<<8) }

func pickOf(c search.Choice) pick { return pick{p: Program(c&0xff - 1), level: int(c >> 8)} }

// SearchStats sums a search over an archive's tensors.
type SearchStats struct {
	Tensors  int // tensors searched
	Expanded int // candidates coded on a sample (the own choice included)
	Pruned   int // candidates skipped by their bound
	Changed  int // tensors given another program than the encoder's own
	Verified int // sampled winners coded on their whole tensor
	Rejected int // of those, the ones not smaller there (the own choice kept)
}

// searchable reports whether tensor g is searched: a float tensor with
// blocks of its own (mergeValues values or more) or a records tensor, at
// least searchMinBytes, with no program chosen for it.
func searchable(g Segment, opt *EncodeOptions) bool {
	if !g.IsTensor() || g.Length < searchMinBytes {
		return false
	}
	if _, ok := opt.Programs[g.Name]; ok {
		return false
	}
	if opt.Setup.ProgramFor(g.Name) != ProgramAuto {
		return false
	}
	if recordSchema(g) != nil {
		return true
	}
	ft := floatType(g.DType)
	return ft != dtype.Invalid && g.Length%int64(ft.Size()) == 0 && g.Length/int64(ft.Size()) >= mergeValues
}

// searchInputs searches every searchable tensor of the inputs (on up to
// opt's threads; each tensor's result depends on its bytes alone) and
// returns each input's picks, the tensors whose winner is not the
// encoder's own choice.
func searchInputs(ctx context.Context, inputs []Input, opt EncodeOptions) ([]map[string]pick, SearchStats, error) {
	type job struct {
		in int
		g  Segment
		r  searchReport
	}
	var jobs []*job
	arch := make([]*archProbe, len(inputs))
	for i, in := range inputs {
		// picks go by name: a name that two tensors of the file share
		// is not searched
		names := map[string]int{}
		for _, g := range in.Segments {
			names[g.Name]++
		}
		for _, g := range in.Segments {
			if searchable(g, &opt) && g.Offset >= 0 && g.Offset+g.Length <= in.Size && names[g.Name] == 1 {
				jobs = append(jobs, &job{in: i, g: g})
			}
		}
		var err error
		if arch[i], err = archProbeOf(in, &opt); err != nil {
			return nil, SearchStats{}, fmt.Errorf("codec: input %q: %w", in.Name, err)
		}
	}
	var st SearchStats
	errs := make([]error, len(jobs))
	var next sync.Mutex
	k := 0
	var wg sync.WaitGroup
	for range min(opt.ThreadCount(), max(1, len(jobs))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				j := k
				k++
				next.Unlock()
				if j >= len(jobs) || ctx.Err() != nil {
					return
				}
				o := opt
				o.arch = arch[jobs[j].in]
				jobs[j].r, errs[j] = searchTensor(inputs[jobs[j].in].R, jobs[j].g, o, opt.Setup.prior(), opt.Search)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	picks := make([]map[string]pick, len(inputs))
	for j, jb := range jobs {
		if errs[j] != nil {
			return nil, st, fmt.Errorf("codec: searching %q: %w", jb.g.Name, errs[j])
		}
		st.Tensors++
		st.Expanded += jb.r.Expanded
		st.Pruned += jb.r.Pruned
		if jb.r.Verified {
			st.Verified++
		}
		if jb.r.Rejected {
			st.Rejected++
		}
		if jb.r.Best.p != ProgramAuto {
			st.Changed++
			if picks[jb.in] == nil {
				picks[jb.in] = map[string]pick{}
			}
			picks[jb.in][jb.g.Name] = jb.r.Best
		}
	}
	return picks, st, nil
}

// searchReport is one tensor's search.
type searchReport struct {
	search.Result
	Best       pick
	Candidates []search.Candidate
	Key        search.Key
	Costs      map[pick]search.Cost // every candidate expanded
	Verified   bool                 // the winner was coded on the whole tensor (a sampled search)
	Rejected   bool                 // and was not smaller there: the own choice is kept
}

// searchCandidates lists the candidates for tensor g, the encoder's own
// choice first, then in the order expanded when the prior has no counts:
// the programs that most often beat the own choice first (zstd planes,
// zstd, the fields without the setup's tables, sparse), zstd at a higher
// level under zstd, then the rest.
func searchCandidates(g Segment, opt *EncodeOptions) []pick {
	order := []Program{ProgramZstdPlanes, ProgramZstd, ProgramFieldsOwn, ProgramSparse, ProgramRecords, ProgramFields, ProgramPlanes, ProgramRaw, ProgramCM}
	out := []pick{{p: ProgramAuto}}
	for _, p := range order {
		if !p.Applies(g, opt.Setup) {
			continue
		}
		if opt.NoSparse && p.version() > denseVersion {
			continue
		}
		if p == ProgramCM && !opt.Best {
			continue // as the encoder: cm blocks only by bytes alone (cost.go)
		}
		out = append(out, pick{p: p})
		if p == ProgramZstd && opt.level() < searchZstdHigh {
			out = append(out, pick{p: p, level: searchZstdHigh})
		}
	}
	return out
}

// level is the archive's zstd level.
func (o *EncodeOptions) level() int {
	if o.ZstdLevel == 0 {
		return 3
	}
	return o.ZstdLevel
}

// searchTensor reads tensor g's sample from r and searches its program
// with at most budget candidates coded.
func searchTensor(r interface {
	ReadAt([]byte, int64) (int, error)
}, g Segment, opt EncodeOptions, prior *search.Prior, budget int) (searchReport, error) {
	var rep searchReport
	sample, sg, err := searchSample(r, g, min(max(g.Length/searchFraction, searchWhole), searchMax), searchWindows)
	if err != nil {
		return rep, err
	}
	whole := int64(len(sample)) == g.Length
	picks := searchCandidates(g, &opt)
	chunk := opt.ChunkValues
	if chunk == 0 {
		chunk = DefaultChunkValues
	}
	timeBytes := func(ps int64) int64 { return g.Length * ps / exchangePsPerByte }
	scale := func(b int64) int64 { return (b*g.Length + int64(len(sample)) - 1) / int64(len(sample)) }
	rep.Costs = map[pick]search.Cost{}
	var autoBytes int64
	for _, pk := range picks {
		c := search.Candidate{Choice: choiceOf(pk)}
		if pk.level != 0 {
			c.Parent = choiceOf(pick{p: pk.p})
		}
		if pk.p != ProgramAuto {
			own := int64(searchIndexBytes * len(planProgram(nil, g, pk, chunk)))
			c.Bound = own + timeBytes(searchPs(pk.p))
			switch pk.p {
			case ProgramRaw:
				c.Bound += g.Length
			case ProgramPlanes:
				c.Bound += scale(planesBound(sample, floatType(g.DType).Size()))
			}
		}
		rep.Candidates = append(rep.Candidates, c)
	}
	sopt := opt
	sopt.Threads, sopt.Search, sopt.Progress, sopt.Ref, sopt.Sums = 1, 0, nil, nil, nil
	in := Input{Name: "sample", R: memArchive(sample), Size: int64(len(sample)), Segments: []Segment{sg}}
	var evalErr error
	eval := func(c search.Choice) search.Cost {
		pk := pickOf(c)
		sopt.picks = []map[string]pick{{sg.Name: pk}}
		bytes, kindTime, blocks, err := codeSample(in, sopt)
		if err != nil {
			if evalErr == nil {
				evalErr = err
			}
			return search.Cost{}
		}
		var cost search.Cost
		if whole {
			cost.Bytes = bytes + int64(searchIndexBytes*blocks)
		} else {
			cost.Bytes = scale(bytes)
			if pk.p == ProgramAuto {
				cost.Bytes += int64(searchIndexBytes * len(autoBlocks(g, chunk)))
			} else {
				cost.Bytes += int64(searchIndexBytes * len(planProgram(nil, g, pk, chunk)))
			}
		}
		ps := searchPs(pk.p)
		if pk.p == ProgramAuto {
			ps = kindTime
			autoBytes = cost.Bytes
		}
		cost.Cost = cost.Bytes + timeBytes(ps)
		// never estimated larger than the own choice; a sampled estimate
		// must win by 1/64 (the sample's error)
		margin := int64(0)
		if !whole {
			margin = autoBytes / 64
		}
		cost.OK = pk.p == ProgramAuto || cost.Bytes < autoBytes-margin
		rep.Costs[pk] = cost
		return cost
	}
	ft := floatType(g.DType)
	rep.Key = search.Key{DType: uint8(ft), Class: search.ShapeClass(g.Shape)}
	if ft == dtype.Invalid {
		rep.Key.DType = 0xff // records and bytes: one key apart from every float type
	}
	rep.Result = search.Run(search.Problem{Key: rep.Key, Candidates: rep.Candidates, Eval: eval}, prior, budget)
	if evalErr != nil {
		return rep, evalErr
	}
	rep.Best = pickOf(rep.Result.Best)
	if rep.Best.p != ProgramAuto && !whole {
		// A sample misses what spans the tensor (an STFT basis repeats
		// values across all its rows: zstd of the whole finds them, zstd
		// of four windows does not): the winner of a sampled search is
		// coded on the whole tensor beside the own choice, and kept only
		// where it is smaller there too (a tensor above searchCheckMax:
		// on a sample of searchCheckMax bytes in 16 windows, by 1/64).
		rep.Verified = true
		full, fg, err := searchSample(r, g, searchCheckMax, 16)
		if err != nil {
			return rep, err
		}
		fin := Input{Name: "tensor", R: memArchive(full), Size: fg.Length, Segments: []Segment{fg}}
		var sizes [2]int64
		for i, pk := range []pick{{p: ProgramAuto}, rep.Best} {
			sopt.picks = []map[string]pick{{fg.Name: pk}}
			b, _, blocks, err := codeSample(fin, sopt)
			if err != nil {
				return rep, err
			}
			sizes[i] = b + int64(searchIndexBytes*blocks)
		}
		margin := int64(0)
		if fg.Length < g.Length {
			margin = sizes[0] / 64
		}
		if sizes[1] >= sizes[0]-margin {
			rep.Best, rep.Rejected = pick{p: ProgramAuto}, true
		}
	}
	return rep, nil
}

// autoBlocks is the blocks the encoder's own plan cuts tensor g into.
func autoBlocks(g Segment, chunk int) []blockPlan {
	g.Offset = 0
	plans, _ := planBlocks([]Segment{g}, g.Length, chunk, nil)
	return plans
}

// archProbe is what planEncode's probe finds in a whole input, which the
// encoder's own choice depends on beyond the tensor: sparse blocks and
// zstd-coded planes are allowed in every block once one tensor has zeros
// or repeats.
type archProbe struct{ sparse, lzPlanes bool }

// archProbeOf probes input in as planEncode does (nil with NoSparse).
func archProbeOf(in Input, opt *EncodeOptions) (*archProbe, error) {
	if opt.NoSparse {
		return nil, nil
	}
	chunk := opt.ChunkValues
	if chunk == 0 {
		chunk = DefaultChunkValues
	}
	plans, err := planBlocks(in.Segments, in.Size, chunk, nil)
	if err != nil {
		return nil, err
	}
	a := &archProbe{}
	a.sparse, a.lzPlanes = probeBlocks(in.R, plans)
	return a, nil
}

// codeSample codes the one-tensor input in with opt (its picks choose the
// program) and returns the blocks' bytes, the own choice's decoding time
// model (searchPs by block kind, weighted by bytes of the original) and
// the number of blocks.
func codeSample(in Input, opt EncodeOptions) (bytes, ps int64, blocks int, err error) {
	e, err := planEncode([]Input{in}, opt)
	if err != nil {
		return 0, 0, 0, err
	}
	e.trees, e.shas = nil, nil
	if a := opt.arch; a != nil {
		e.sparse, e.lzPlanes = e.sparse || a.sparse, e.lzPlanes || a.lzPlanes
	}
	var orig int64
	for _, t := range e.tasks {
		be := e.blockEncoder()
		e.code(be, t)
		blockEncoders.Put(be)
		if t.err != nil {
			return 0, 0, 0, t.err
		}
		for _, b := range t.info {
			bytes += b.compLen
			ps += kindPs(b.kind) * b.origLen
			orig += b.origLen
			blocks++
		}
		putBuf(t.out)
		if !t.inMem {
			putBuf(t.in)
		}
	}
	if orig > 0 {
		ps /= orig
	}
	return bytes, ps, blocks, nil
}

// searchSample returns a sample of tensor g of about target bytes and
// the segment describing it (offset 0): the whole tensor up to target
// bytes, else windows windows at fixed, evenly spread positions, of whole
// rows where the rows are short enough (sparse blocks' column contexts),
// else of whole values or records.
func searchSample(r interface {
	ReadAt([]byte, int64) (int, error)
}, g Segment, target int64, windows int64) ([]byte, Segment, error) {
	sg := Segment{Name: g.Name, DType: g.DType, Type: g.Type, Shape: g.Shape, Length: g.Length}
	if g.Length <= target {
		if m, ok := r.(memArchive); ok {
			if b, ok := inPlace(m, g.Offset, g.Length); ok {
				return b, sg, nil
			}
		}
		b := make([]byte, g.Length)
		err := readFull(r, b, g.Offset)
		return b, sg, err
	}
	unit := int64(1)
	if s := recordSchema(g); s != nil {
		unit = int64(s.Bytes)
	} else if ft := floatType(g.DType); ft != dtype.Invalid {
		unit = int64(ft.Size())
	}
	win := target / windows
	rowUnit := false
	if row := sparseRow(g); row > 0 && unit > 1 && recordSchema(g) == nil && row*unit <= win && g.Length%(row*unit) == 0 {
		unit, rowUnit = row*unit, true
	}
	win = max(win/unit, 1) * unit
	span := g.Length - win
	b := make([]byte, 0, win*windows)
	for j := int64(0); j < windows; j++ {
		off := span * j / (windows - 1) / unit * unit
		b = b[:len(b)+int(win)]
		if err := readFull(r, b[len(b)-int(win):], g.Offset+off); err != nil {
			return nil, sg, err
		}
	}
	sg.Length = int64(len(b))
	if rowUnit {
		sg.Shape = []int64{sg.Length / unit, g.Shape[len(g.Shape)-1]}
	} else {
		sg.Shape = []int64{sg.Length / unit}
	}
	return b, sg, nil
}

// planesBound is a lower bound of the bytes of the byte planes of the
// values in b (size bytes each) coded one symbol at a time: the sum of
// each plane's order-0 entropy, rounded down, in fixed point (log2Fixed:
// the same on every platform).
func planesBound(b []byte, size int) int64 {
	if size <= 0 || len(b) < size {
		return 0
	}
	n := len(b) / size
	var bits uint64
	for p := 0; p < size; p++ {
		var hist [256]uint64
		for i := p; i < n*size; i += size {
			hist[b[i]]++
		}
		ln := log2Fixed(uint64(n))
		for _, c := range hist {
			if c > 0 {
				bits += c * (ln - min(ln, log2Fixed(c)))
			}
		}
	}
	// log2Fixed is accurate to a few units in the last place: take
	// 4 units a symbol off so the bound stays below the entropy
	slack := uint64(4 * n * size)
	if bits <= slack {
		return 0
	}
	return int64((bits - slack) >> log2Frac >> 3)
}

// PriorCount is one count of a setup's search prior, named.
type PriorCount struct {
	DType  string // the tensor's dtype ("records" for records and byte tensors)
	Class  uint8  // search.ShapeClass of its shape
	Parent string // the node it refines ("" for the root)
	Choice string // the program, with "@level" for a zstd level
	Count  uint32
}

// PriorCounts lists s's prior (nil without one), in its canonical order.
func (s *Setup) PriorCounts() []PriorCount {
	var out []PriorCount
	s.prior().Each(func(k search.Key, c search.Choice, n uint32) {
		pc := PriorCount{DType: "records", Class: k.Class, Choice: choiceName(c), Count: n}
		if k.DType != 0xff {
			pc.DType = dtype.DType(k.DType).String()
		}
		if k.Parent != 0 {
			pc.Parent = choiceName(k.Parent)
		}
		out = append(out, pc)
	})
	return out
}

// choiceName is the name of a search choice: its program, and its zstd
// level after "@".
func choiceName(c search.Choice) string {
	pk := pickOf(c)
	if pk.level != 0 {
		return fmt.Sprintf("%v@%d", pk.p, pk.level)
	}
	return pk.p.String()
}
