package serve

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"sort"
	"strconv"

	"neuralzip/store"
)

// HubPath is the endpoint that lists a served store's structure, page by
// page, for the workbench's Hub screen (GET; docs/serve.md):
//
//	GET /api/nzip/hub?store=K&from=I&limit=N
//
// answers a HubPage of models I.. of the K-th store the server serves
// (in the order the command named them; 0 by default).
const HubPath = "/api/nzip/hub"

// HubFormat names the JSON of a HubPage; a client refuses another.
const HubFormat = "nzip-hub/1"

// HubMatrixMax is the most models of a store whose shared-bytes matrix is
// computed (the matrix is models², the rest linear): a store of more
// lists its models without the matrix.
const HubMatrixMax = 300

// Page sizes of HubPath: the default and the most a request may ask.
const (
	HubPageDefault = 200
	HubPageMax     = 1000
)

// hubMaxModels bounds the models a page may claim the store holds (a
// client allocates per model).
const hubMaxModels = 1 << 22

// HubPage is one answer of HubPath.
type HubPage struct {
	Format string `json:"format"` // HubFormat
	Store  int    `json:"store"`  // the store's number among the server's stores
	Stores int    `json:"stores"` // how many stores the server serves
	Name   string `json:"name"`   // the store's base name (not its path on the server)
	Total  int    `json:"total"`  // models in the store
	Raw    int64  `json:"raw_bytes"`
	Alone  int64  `json:"nzip_bytes"` // Σ own nzip archives (0 unless every model has one)
	Stored int64  `json:"stored_bytes"`
	// Matrix says the models carry their rows of the shared-bytes matrix
	// (stores of up to HubMatrixMax models).
	Matrix bool       `json:"matrix"`
	From   int        `json:"from"`           // the first model's number in the store
	Next   int        `json:"next,omitempty"` // the next page's from (0: this is the last)
	Models []HubModel `json:"models"`
}

// HubModel is one stored model as the Hub screen lists it.
type HubModel struct {
	Name string `json:"name"`
	// Repo is the repository serving its files ("": a name that cannot be
	// served, or read from the store directly).
	Repo        string    `json:"repo,omitempty"`
	Files       []HubFile `json:"files"`
	Raw         int64     `json:"raw_bytes"`
	TensorBytes int64     `json:"unit_bytes"`           // bytes of its distinct units
	Alone       int64     `json:"nzip_bytes,omitempty"` // its files' own nzip archives (add -compare)
	Added       int64     `json:"added_bytes"`          // payload its add stored
	Bases       []string  `json:"bases,omitempty"`      // models its deltas and casts are coded against
	Depth       int       `json:"depth"`                // its deepest unit's base chain
	// Shared and Near are its row of the matrix, sparse: [column, bytes]
	// pairs in increasing column order, columns being models' numbers in
	// the store: bytes of its units that another model holds too (shared),
	// and, of the others, those that are casts or deltas of a unit of that
	// model (near, counted once per pair).
	Shared [][2]int64 `json:"shared,omitempty"`
	Near   [][2]int64 `json:"near,omitempty"`
}

// HubFile is one file of a stored model.
type HubFile struct {
	Name   string `json:"name"`           // in the model
	Path   string `json:"path,omitempty"` // in its repository ("": not served)
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
	Format string `json:"format,omitempty"`
}

// HubIndex is a whole store as the Hub screen shows it (ReadHub).
type HubIndex struct {
	Raw, Alone, Stored int64
	Matrix             bool // the models carry their matrix rows
	Models             []HubModel
}

// ReadHub reads what the Hub screen shows of a store: every model's raw,
// own-archive and added bytes and bases (one index scan), its distinct
// units' bytes and deepest chain, and, for stores of up to HubMatrixMax
// models, the matrix rows (from the units' records; no payload is read).
// ctx cancels between models.
func ReadHub(ctx context.Context, st *store.Store) (*HubIndex, error) {
	r, err := newHubReader(ctx, st)
	if err != nil {
		return nil, err
	}
	if r.full != nil {
		return r.full, nil
	}
	ix := r.index()
	for i := range r.stats.Models {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, _, err := hubModel(st, r.stats.Models[i], false)
		if err != nil {
			return nil, err
		}
		ix.Models = append(ix.Models, m)
	}
	return ix, nil
}

// hubReader reads a store's HubPages: the whole index at once for a store
// with a matrix, else each page's models as asked (a page of a store of
// thousands reads the manifests and unit records of its models only).
type hubReader struct {
	st    *store.Store
	stats *store.Stats
	full  *HubIndex // stores of up to HubMatrixMax models
}

func newHubReader(ctx context.Context, st *store.Store) (*hubReader, error) {
	stats, err := st.Stats()
	if err != nil {
		return nil, err
	}
	r := &hubReader{st: st, stats: stats}
	if len(stats.Models) <= HubMatrixMax {
		if r.full, err = r.readAll(ctx); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *hubReader) index() *HubIndex {
	return &HubIndex{Raw: r.stats.Raw, Alone: r.stats.Alone, Stored: r.stats.Stored}
}

// page returns models [from, to).
func (r *hubReader) page(ctx context.Context, from, to int) ([]HubModel, error) {
	if r.full != nil {
		return append([]HubModel(nil), r.full.Models[from:to]...), nil
	}
	var out []HubModel
	for i := from; i < to; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, _, err := hubModel(r.st, r.stats.Models[i], false)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// hubUnit is one distinct unit of a model, as the matrix counts it.
type hubUnit struct {
	h    store.Hash
	meta store.UnitMeta
}

// hubModel reads one model's manifest and unit records.
func hubModel(st *store.Store, ms store.ModelStats, units bool) (HubModel, []hubUnit, error) {
	m, err := st.Model(ms.Name)
	if err != nil {
		return HubModel{}, nil, err
	}
	hm := HubModel{Name: ms.Name, Raw: ms.Raw, Alone: ms.Alone, Added: ms.Added, Bases: ms.Bases}
	seen := map[store.Hash]bool{}
	var hashes []store.Hash
	for _, f := range m.Files {
		hm.Files = append(hm.Files, HubFile{Name: f.Name, Size: f.Size, SHA256: hex.EncodeToString(f.SHA256[:]), Format: f.Format})
		for _, u := range f.Units {
			if !seen[u] {
				seen[u] = true
				hashes = append(hashes, u)
			}
		}
	}
	metas, err := st.UnitMetas(hashes)
	if err != nil {
		return HubModel{}, nil, fmt.Errorf("model %q: %w", ms.Name, err)
	}
	var us []hubUnit
	for k, u := range hashes {
		hm.TensorBytes += metas[k].RawLen
		hm.Depth = max(hm.Depth, metas[k].Depth)
		if units {
			us = append(us, hubUnit{u, metas[k]})
		}
	}
	return hm, us, nil
}

// readAll reads every model and the matrix.
func (r *hubReader) readAll(ctx context.Context) (*HubIndex, error) {
	ix := r.index()
	ix.Matrix = true
	n := len(r.stats.Models)
	units := make([][]hubUnit, n)
	for i, ms := range r.stats.Models {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		m, us, err := hubModel(r.st, ms, true)
		if err != nil {
			return nil, err
		}
		ix.Models = append(ix.Models, m)
		units[i] = us
	}
	owners := map[store.Hash][]int{}
	for i, us := range units {
		for _, u := range us {
			owners[u.h] = append(owners[u.h], i)
		}
	}
	for i, us := range units {
		shared, near := map[int]int64{}, map[int]int64{}
		for _, u := range us {
			seen := map[int]bool{}
			for _, j := range owners[u.h] {
				if j != i {
					shared[j] += u.meta.RawLen
					seen[j] = true
				}
			}
			if u.meta.Kind != store.KindDelta && u.meta.Kind != store.KindCast {
				continue
			}
			for _, j := range owners[u.meta.Base] {
				if j != i && !seen[j] {
					near[j] += u.meta.RawLen
					seen[j] = true // once per pair
				}
			}
		}
		ix.Models[i].Shared, ix.Models[i].Near = sparseRow(shared), sparseRow(near)
	}
	return ix, nil
}

// sparseRow lists a row's nonzero entries in column order.
func sparseRow(m map[int]int64) [][2]int64 {
	var out [][2]int64
	for j, v := range m {
		if v != 0 {
			out = append(out, [2]int64{int64(j), v})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a][0] < out[b][0] })
	return out
}

// hubPlace is where a stored model's files are served: its repository and
// the directory they are under (StoreRepo).
type hubPlace struct{ id, dir string }

// hub returns the store's hub reader, made on first use after the
// listing changed, and where each served model's files are.
func (src *storeSrc) hub(ctx context.Context) (*hubReader, map[string]hubPlace, error) {
	src.hubMu.Lock()
	defer src.hubMu.Unlock()
	src.mu.Lock()
	r, places, v := src.hubR, src.places, src.version
	src.mu.Unlock()
	if r != nil {
		return r, places, nil
	}
	r, err := newHubReader(ctx, src.store())
	if err != nil {
		return nil, nil, err
	}
	src.mu.Lock()
	if src.version == v {
		src.hubR = r
	}
	places = src.places
	src.mu.Unlock()
	return r, places, nil
}

// serveHub answers HubPath.
func (s *Server) serveHub(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	stores := append([]*storeSrc(nil), s.stores...)
	s.mu.Unlock()
	if len(stores) == 0 {
		apiError(w, http.StatusNotFound, "NoStore", "this server serves no store (only archives or directories): serve a store (nzip serve STORE) to list it")
		return
	}
	q := req.URL.Query()
	num := func(key string, def, lo, hi int) (int, bool) {
		v := q.Get(key)
		if v == "" {
			return def, true
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			apiError(w, http.StatusBadRequest, "", fmt.Sprintf("%s=%q: want an integer in [%d, %d]", key, v, lo, hi))
			return 0, false
		}
		return n, true
	}
	k, ok := num("store", 0, 0, len(stores)-1)
	if !ok {
		return
	}
	from, ok := num("from", 0, 0, hubMaxModels)
	if !ok {
		return
	}
	limit, ok := num("limit", HubPageDefault, 1, HubPageMax)
	if !ok {
		return
	}
	src := stores[k]
	r, places, err := src.hub(req.Context())
	if err != nil {
		if req.Context().Err() == nil {
			apiError(w, http.StatusInternalServerError, "", "the store's index could not be read: "+err.Error())
		}
		return
	}
	total := len(r.stats.Models)
	from = min(from, total)
	to := min(from+limit, total)
	models, err := r.page(req.Context(), from, to)
	if err != nil {
		if req.Context().Err() == nil {
			apiError(w, http.StatusInternalServerError, "", "the store's index could not be read: "+err.Error())
		}
		return
	}
	for i := range models {
		m := &models[i]
		m.Files = append([]HubFile(nil), m.Files...)
		p, ok := places[m.Name]
		if ok {
			m.Repo = p.id
		}
		for f := range m.Files {
			if ok {
				m.Files[f].Path = path.Join(p.dir, m.Files[f].Name)
			}
		}
	}
	name := path.Base(src.loc) // s3://bucket/prefix: the prefix
	if !store.IsS3(src.loc) {
		name = filepath.Base(src.loc)
	}
	pg := HubPage{Format: HubFormat, Store: k, Stores: len(stores), Name: name, Total: total,
		Raw: r.stats.Raw, Alone: r.stats.Alone, Stored: r.stats.Stored, Matrix: r.full != nil,
		From: from, Models: models}
	if pg.Models == nil {
		pg.Models = []HubModel{}
	}
	if to < total {
		pg.Next = to
	}
	writeJSON(w, http.StatusOK, pg)
}

// Errors of ParseHubPage.
var (
	// ErrHubPage is a HubPath answer that is not a valid HubPage.
	ErrHubPage = errors.New("serve: not a valid nzip hub page")
)

// ParseHubPage decodes and checks a HubPath answer: its format, counts
// and byte sizes not negative, models within the store's count, a next
// page after this one, file sums of 64 hex digits, matrix rows only when
// Matrix is set, with columns in increasing order, in the store and not the
// row's own model.
func ParseHubPage(b []byte) (*HubPage, error) {
	var p HubPage
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrHubPage, err)
	}
	bad := func(format string, args ...any) (*HubPage, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrHubPage}, args...)...)
	}
	if p.Format != HubFormat {
		return bad("format %q, want %q", p.Format, HubFormat)
	}
	switch {
	case p.Stores < 1 || p.Store < 0 || p.Store >= p.Stores:
		return bad("store %d of %d", p.Store, p.Stores)
	case p.Total < 0 || p.Total > hubMaxModels:
		return bad("%d models", p.Total)
	case p.From < 0 || p.From > p.Total || len(p.Models) > p.Total-p.From:
		return bad("models %d.. (%d of them) of a store of %d", p.From, len(p.Models), p.Total)
	case p.Next != 0 && (p.Next != p.From+len(p.Models) || len(p.Models) == 0 || p.Next >= p.Total):
		return bad("next page at %d after %d models from %d (of %d)", p.Next, len(p.Models), p.From, p.Total)
	case p.Next == 0 && p.From+len(p.Models) != p.Total:
		return bad("the last page ends at model %d of %d", p.From+len(p.Models), p.Total)
	case p.Raw < 0 || p.Alone < 0 || p.Stored < 0:
		return bad("negative byte counts")
	case p.Matrix && p.Total > HubMatrixMax:
		return bad("a matrix of %d models (at most %d)", p.Total, HubMatrixMax)
	}
	for i, m := range p.Models {
		row := p.From + i
		if m.Name == "" {
			return bad("model %d has no name", row)
		}
		if m.Raw < 0 || m.TensorBytes < 0 || m.Alone < 0 || m.Added < 0 || m.Depth < 0 {
			return bad("model %q: negative counts", m.Name)
		}
		for _, f := range m.Files {
			if f.Name == "" || f.Size < 0 {
				return bad("model %q: file %q of %d bytes", m.Name, f.Name, f.Size)
			}
			if s, err := hex.DecodeString(f.SHA256); err != nil || len(s) != 32 {
				return bad("model %q: file %q: SHA-256 %q", m.Name, f.Name, f.SHA256)
			}
		}
		for _, r := range [][][2]int64{m.Shared, m.Near} {
			if len(r) > 0 && !p.Matrix {
				return bad("model %q: matrix row on a page without a matrix", m.Name)
			}
			last := int64(-1)
			for _, e := range r {
				if e[0] <= last || e[0] >= int64(p.Total) || e[0] == int64(row) || e[1] < 0 {
					return bad("model %q: matrix entry %v", m.Name, e)
				}
				last = e[0]
			}
		}
	}
	return &p, nil
}
