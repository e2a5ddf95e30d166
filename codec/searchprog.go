package codec

import (
	"context"
	"fmt"
	"io"

	"neuralzip/codec/search"
	"neuralzip/dtype"
)

// The program search's adapter (issue 48, "Search"; docs/programs.md):
// with EncodeOptions.Search = N above 1, each tensor large enough to have
// blocks of its own is searched, before the archive is planned, by
// package search (search.Tensor: the sample, the costs, the best-first
// walk in the order the setup's prior ranks the candidates, the check of
// a sampled winner on the whole tensor). This file gives it what needs
// the codec: which tensors are searched (searchable), the candidates
// (searchCandidates: the encoder's own choice first, then every program
// that applies, zstd with a second level under it), the samples
// (searchSample) coded by the encoder's own code paths (codeSample, with
// the whole input's probe: archProbe), the blocks and the decoding-time
// model of each program (searchPs: no clock is read, so the choice is
// the same on every run and at every thread count) and the bounds known
// without coding (planesBound). The winner is written as the tensor's
// program: no format change. The default is no search
// (docs/programs.md, "Search").

// Search limits.
const (
	// searchMinBytes: smaller tensors are not searched (they share
	// blocks with their neighbours, and a search would cost more than
	// it saves: every tensor up to 2 MiB costs a 16 KiB sample per
	// candidate, the savings grow with the tensor). From 16 KiB to this
	// the search of -search 2 costs 16-26 % fewer instructions on the
	// unseen BF16 models of docs/programs.md ("Search") and finds the
	// same programs, but for 478 of hm-f32's 66,046 bytes saved; 64 KiB
	// would lose 5-7 % of the BF16 models' savings.
	searchMinBytes = 32 << 10
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
type SearchStats = search.Stats

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
	err := search.Each(ctx, opt.ThreadCount(), len(jobs), func(j int) error {
		o := opt
		o.arch = arch[jobs[j].in]
		var err error
		if jobs[j].r, err = searchTensor(inputs[jobs[j].in].R, jobs[j].g, o, opt.Setup.prior(), opt.Search); err != nil {
			return fmt.Errorf("codec: searching %q: %w", jobs[j].g.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, st, err
	}
	picks := make([]map[string]pick, len(inputs))
	for _, jb := range jobs {
		st.Add(jb.r.Report, jb.r.Best.p != ProgramAuto)
		if jb.r.Best.p != ProgramAuto {
			if picks[jb.in] == nil {
				picks[jb.in] = map[string]pick{}
			}
			picks[jb.in][jb.g.Name] = jb.r.Best
		}
	}
	return picks, st, nil
}

// searchReport is one tensor's search: package search's report, its
// winner as a pick and the prior's key.
type searchReport struct {
	search.Report
	Best pick
	Key  search.Key
}

// cost is what the search found candidate pk to cost (zero when it was
// not coded).
func (r *searchReport) cost(pk pick) search.Cost { return r.Costs[choiceOf(pk)] }

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

// searchLimits are the sizes and rates of a tensor's search.
func searchLimits() search.Limits {
	return search.Limits{Whole: searchWhole, Max: searchMax, Fraction: searchFraction, Windows: searchWindows,
		IndexBytes: searchIndexBytes, PsPerByte: exchangePsPerByte, CheckMax: searchCheckMax, CheckWindows: 16}
}

// searchTensor searches tensor g's program (read from r) with at most
// budget candidates coded on its sample (package search: search.Tensor).
func searchTensor(r io.ReaderAt, g Segment, opt EncodeOptions, prior *search.Prior, budget int) (searchReport, error) {
	var rep searchReport
	chunk := opt.ChunkValues
	if chunk == 0 {
		chunk = DefaultChunkValues
	}
	sopt := opt
	sopt.Threads, sopt.Search, sopt.Progress, sopt.Ref, sopt.Sums = 1, 0, nil, nil, nil
	src := &tensorSource{r: r, g: g, opt: sopt, chunk: chunk}
	var cands []search.Candidate
	for _, pk := range searchCandidates(g, &opt) {
		c := search.Candidate{Choice: choiceOf(pk)}
		if pk.level != 0 {
			c.Parent = choiceOf(pick{p: pk.p})
		}
		cands = append(cands, c)
	}
	ft := floatType(g.DType)
	rep.Key = search.Key{DType: uint8(ft), Class: search.ShapeClass(g.Shape)}
	if ft == dtype.Invalid {
		rep.Key.DType = 0xff // records and bytes: one key apart from every float type
	}
	var err error
	rep.Report, err = search.Tensor(src, cands, rep.Key, prior, budget, searchLimits())
	rep.Best = pickOf(rep.Report.Best)
	return rep, err
}

// tensorSource is a tensor as the search sees it (search.Source): its
// samples coded by the encoder's own code paths.
type tensorSource struct {
	r     io.ReaderAt
	g     Segment
	opt   EncodeOptions // one thread, no search
	chunk int
}

func (t *tensorSource) Length() int64 { return t.g.Length }

func (t *tensorSource) Sample(target, windows int64) (search.Sample, error) {
	b, sg, err := searchSample(t.r, t.g, target, windows)
	if err != nil {
		return nil, err
	}
	return &tensorSample{in: Input{Name: "sample", R: memArchive(b), Size: sg.Length, Segments: []Segment{sg}}, opt: t.opt}, nil
}

// Blocks is the number of blocks the encoder cuts the whole tensor into
// with candidate c: its own plan for the own choice, the program's plan
// otherwise.
func (t *tensorSource) Blocks(c search.Choice) int {
	pk := pickOf(c)
	if pk.p == ProgramAuto {
		g := t.g
		g.Offset = 0
		plans, _ := planBlocks([]Segment{g}, g.Length, t.chunk, nil)
		return len(plans)
	}
	return len(planProgram(nil, t.g, pk, t.chunk))
}

func (t *tensorSource) Ps(c search.Choice) int64 { return searchPs(pickOf(c).p) }

// Bound: raw's exact size; byte planes' order-0 entropy (planesBound).
func (t *tensorSource) Bound(c search.Choice, s search.Sample) int64 {
	switch pickOf(c).p {
	case ProgramRaw:
		return s.Len()
	case ProgramPlanes:
		return planesBound(s.(*tensorSample).in.R.(memArchive), floatType(t.g.DType).Size())
	}
	return 0
}

// tensorSample is a sample of a tensor as a one-tensor input.
type tensorSample struct {
	in  Input
	opt EncodeOptions
}

func (s *tensorSample) Len() int64 { return s.in.Size }

func (s *tensorSample) Code(c search.Choice) (search.Coded, error) {
	opt := s.opt
	opt.picks = []map[string]pick{{s.in.Segments[0].Name: pickOf(c)}}
	bytes, ps, blocks, err := codeSample(s.in, opt)
	return search.Coded{Bytes: bytes, Ps: ps, Blocks: blocks}, err
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
	a.sparse, a.lzPlanes = probeBlocks(in.R, plans, opt.Best)
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
// bytes, else windows windows at fixed, evenly spread positions
// (search.Windows), of whole rows where the rows are short enough (sparse
// blocks' column contexts), else of whole values or records.
func searchSample(r io.ReaderAt, g Segment, target int64, windows int64) ([]byte, Segment, error) {
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
	rowUnit := false
	if row := sparseRow(g); row > 0 && unit > 1 && recordSchema(g) == nil && row*unit <= target/windows && g.Length%(row*unit) == 0 {
		unit, rowUnit = row*unit, true
	}
	win, offs := search.Windows(g.Length, unit, target, windows)
	b := make([]byte, 0, win*int64(len(offs)))
	for _, off := range offs {
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
