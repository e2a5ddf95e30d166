package infer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"

	"neuralzip/checkpoint"
	"neuralzip/codec"
	"neuralzip/dtype"
)

// Options configure Open. The zero value opens a model from its own file.
type Options struct {
	// Config is the content of a config.json with hyper-parameters the
	// file does not hold (the byte-level GPT's "heads"; Hugging Face's
	// "num_attention_heads", ...). Values in the file's own metadata win.
	Config []byte
	// Setup decodes an archive that references an external setup.
	Setup *codec.Setup
	// Prefetch decodes the next tensors on another goroutine while the
	// current one computes (archives only, with GOMAXPROCS ≥ 2; the
	// buffers grow to the largest two consecutive tensors). A matmul
	// starts on a tensor's rows as its blocks are decoded, so archives
	// of several blocks per tensor (a small -chunk) overlap the most.
	Prefetch bool
	// ReadEach reads each tensor of an original file from the reader when
	// the forward pass asks for it, into one buffer the size of the
	// largest, instead of all of them at Open. It is for readers that
	// decode on demand, such as the dequantized file of a lossy archive
	// (lossy.Archive): the weights then stay coded in memory. A reader
	// that is Tiled is read tile by tile, as an archive is block by
	// block: only the tiles of the tensor in use are decoded, into
	// buffers as an archive's, and with Prefetch a worker decodes them
	// ahead while a matmul starts on the rows that have arrived.
	ReadEach bool
}

// Tiled is a file whose bytes decode in tiles, runs of bytes each decoded
// alone (lossy.Archive: a coded tensor's rows, a run of bytes kept as
// stored). With Options.ReadEach, Open runs a model from it as from an
// archive: the file stays coded, and each tensor's tiles are decoded when
// the forward pass reaches it.
type Tiled interface {
	io.ReaderAt
	// TileEnds is where each tile ends, in order: tile i is the bytes
	// [TileEnds()[i-1], TileEnds()[i]) (the first from 0), the last
	// ending at the file's size. Open reads it once.
	TileEnds() []int64
	// DecodeTile writes tile i into dst, as long as the tile. It must be
	// safe for concurrent use (a prefetch worker decodes beside the
	// forward pass).
	DecodeTile(i int, dst []byte) error
	// HeldBytes is the memory the coded file takes (Memory.Compressed).
	HeldBytes() int64
}

// ArchiveOptions are the compress options of an archive made for running
// (nzip compress -setup gaussian -chunk 8192): the built-in Gaussian
// setup, so no block rebuilds Huffman tables, and 8192 values per block,
// so that with Prefetch a matmul starts on a tensor's first blocks while
// the worker decodes the rest. Its size is within half a percent of the
// default options' (docs/inference.md).
func ArchiveOptions() codec.EncodeOptions {
	return codec.EncodeOptions{Setup: codec.GaussianSetup(), ChunkValues: 8192}
}

// Config is a model's architecture and hyper-parameters.
type Config struct {
	Arch    string // "llama" or "gpt"
	Dim     int    // embedding width
	Hidden  int    // MLP width
	Layers  int
	Heads   int
	KVHeads int // llama: key/value heads (grouped-query attention)
	Vocab   int
	SeqLen  int // the most positions
	Eps     float32
}

// Model is a model ready to run one sequence: it holds the weights (from
// an archive: compressed) and the key/value cache.
type Model struct {
	cfg      Config
	st       store
	sched    []*tensor
	net      network
	vecBytes int64 // float32 copies of small vectors
	archive  bool
	setupHow string // from an archive: how it holds its setup (codec.Reader.SetupID)
	one      [1]int // Forward's token
}

// network is one architecture's forward pass.
type network interface {
	// forward runs tokens at positions pos, pos+1, ... and returns the
	// logits of each (Vocab each), those of running them one at a time.
	forward(st store, tokens []int, pos int) ([]float32, error)
}

// Open opens a model from an nzip archive (one file) or from an original
// checkpoint, telling them apart by content. An archive is read into
// memory and stays compressed; an original file's tensors are read as
// stored.
func Open(r io.ReaderAt, size int64, opt Options) (*Model, error) {
	var magic [8]byte
	if size >= 8 {
		if _, err := r.ReadAt(magic[:], 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("infer: %w", err)
		}
	}
	if magic == codec.LossyMagic {
		return nil, fmt.Errorf("%w: %w: open it with lossy.OpenArchive and run its dequantized file (nzip generate does)", ErrInput, codec.ErrLossy)
	}
	if magic == codec.Magic {
		buf := make([]byte, size)
		if _, err := r.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("infer: %w", err)
		}
		return OpenArchive(buf, opt)
	}
	l, err := checkpoint.Open(r, size)
	if err != nil {
		return nil, err
	}
	m, err := build(l, opt)
	if err != nil {
		return nil, err
	}
	if tf, ok := r.(Tiled); ok && opt.ReadEach {
		if err := m.openTiled(tf, size, opt); err != nil {
			return nil, err
		}
		return m, nil
	}
	if opt.ReadEach {
		m.st = newReadStore(m.sched, func(t *tensor, b []byte) error {
			if _, err := r.ReadAt(b, t.offset); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("infer: reading %s: %w", t.name, err)
			}
			return nil
		})
		return m, nil
	}
	fs, err := newFileStore(m.sched, func(t *tensor) ([]byte, error) {
		b := make([]byte, t.length)
		if _, err := r.ReadAt(b, t.offset); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("infer: reading %s: %w", t.name, err)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	m.st = fs
	return m, nil
}

// OpenArchive opens a model from an archive held in memory (archive must
// not change while the model is used). Its weights are decoded tensor by
// tensor as the forward pass needs them.
func OpenArchive(archive []byte, opt Options) (*Model, error) {
	rd, err := codec.NewMemReader(archive)
	if err != nil {
		return nil, err
	}
	if n := len(rd.Files()); n != 1 {
		rd.Close()
		return nil, fmt.Errorf("%w: the archive holds %d files; a model is one file", ErrArchitecture, n)
	}
	if rd.UsesRef() {
		rd.Close()
		return nil, fmt.Errorf("%w: the archive is coded against a reference model (compress -ref), which would have to be held uncompressed beside it: decompress it to run it", ErrInput)
	}
	if opt.Setup != nil {
		if err := rd.UseSetup(opt.Setup); err != nil {
			rd.Close()
			return nil, err
		}
	}
	f := rd.Files()[0]
	l, err := checkpoint.Open(fileAt{rd: rd}, f.Size)
	if err != nil {
		rd.Close()
		return nil, err
	}
	m, err := build(l, opt)
	if err != nil {
		rd.Close()
		return nil, err
	}
	if f.Size > rd.PlausibleOutput() {
		rd.Close()
		return nil, fmt.Errorf("%w: an archive of %d bytes claims a file of %d bytes", codec.ErrTooLarge, len(archive), f.Size)
	}
	as, err := newArchiveStore(archiveBlocks{rd, 0}, m.sched, int64(len(archive)))
	if err != nil {
		rd.Close()
		return nil, err
	}
	m.st = as
	if prefetching(opt) {
		m.st = newPipeStore(as, true)
	}
	m.archive = true
	_, m.setupHow = rd.SetupID()
	return m, nil
}

// prefetching reports whether opt's Prefetch takes effect: with one
// processor (or WebAssembly's one thread) a worker could only run between
// the forward pass's own steps, so prefetching is off.
func prefetching(opt Options) bool {
	return opt.Prefetch && runtime.GOMAXPROCS(0) >= 2 && runtime.GOOS != "js" && runtime.GOOS != "wasip1"
}

// openTiled gives m a store that decodes the tiles of f (size bytes) as an
// archive's blocks.
func (m *Model) openTiled(f Tiled, size int64, opt Options) error {
	ends := f.TileEnds()
	if len(ends) == 0 || ends[len(ends)-1] != size {
		return fmt.Errorf("%w: tiles of a file of %d bytes end at %v", ErrInput, size, ends[max(0, len(ends)-1):])
	}
	for i, e := range ends {
		if i > 0 && e <= ends[i-1] || e <= 0 {
			return fmt.Errorf("%w: tile %d ends at %d, before it starts", ErrInput, i, e)
		}
	}
	as, err := newArchiveStore(tiledBlocks{f}, m.sched, f.HeldBytes())
	if err != nil {
		return err
	}
	m.st = as
	if prefetching(opt) {
		m.st = newPipeStore(as, true)
	}
	return nil
}

// fileAt reads the original file of an archive (its header, for the
// loader), decoding only the blocks that cover what is read.
type fileAt struct{ rd *codec.Reader }

func (f fileAt) ReadAt(p []byte, off int64) (int, error) { return f.rd.ReadAt(0, p, off) }

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// FromArchive reports whether the weights come from an archive.
func (m *Model) FromArchive() bool { return m.archive }

// ArchiveSetup says where an archive's blocks take their Huffman tables
// from: "" when each block holds its own (no setup; also for an original
// file), else how the archive holds its setup (codec.Reader.SetupID:
// "embedded", "built-in" for the Gaussian setup, "external"). Archives
// with a setup decode faster: the shared tables are built once.
func (m *Model) ArchiveSetup() string { return m.setupHow }

// Memory reports the weight bytes the model holds.
func (m *Model) Memory() Memory {
	mem := m.st.memory()
	mem.Buffers += m.vecBytes
	mem.Peak += m.vecBytes
	return mem
}

// Forward runs the model on token at position pos and returns the logits
// (valid until the next call). Positions must follow each other from 0
// (0 starts a new sequence).
func (m *Model) Forward(token, pos int) ([]float32, error) {
	m.one[0] = token
	return m.Prefill(m.one[:], pos)
}

// Prefill runs the model on tokens at positions pos, pos+1, ... and
// returns the logits of every position, Vocab each, in order (valid until
// the next call): bit for bit those of calling Forward for each token in
// turn, but each weight tensor is fetched (from an archive: decoded) once
// for all of them instead of once per token.
func (m *Model) Prefill(tokens []int, pos int) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%w: no token to run", ErrInput)
	}
	for _, token := range tokens {
		if token < 0 || token >= m.cfg.Vocab {
			return nil, fmt.Errorf("%w: token %d outside the vocabulary of %d", ErrInput, token, m.cfg.Vocab)
		}
	}
	if pos < 0 || pos > m.cfg.SeqLen-len(tokens) {
		if len(tokens) == 1 {
			return nil, fmt.Errorf("%w: position %d outside the context of %d", ErrInput, pos, m.cfg.SeqLen)
		}
		return nil, fmt.Errorf("%w: positions %d to %d outside the context of %d", ErrInput, pos, pos+len(tokens)-1, m.cfg.SeqLen)
	}
	return m.net.forward(m.st, tokens, pos)
}

// Close releases the model (it waits for a prefetch in flight).
func (m *Model) Close() error {
	m.st.close()
	return nil
}

// params gathers hyper-parameters: the file's metadata, then config.json.
type params struct {
	file map[string]string
	conf map[string]string
}

func newParams(meta map[string]string, conf []byte) (*params, error) {
	p := &params{file: meta, conf: map[string]string{}}
	if len(conf) > 0 {
		var raw map[string]any
		dec := json.NewDecoder(bytes.NewReader(conf))
		dec.UseNumber()
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("%w: config.json: %v", ErrConfig, err)
		}
		for k, v := range raw {
			switch v := v.(type) {
			case json.Number:
				p.conf[k] = v.String()
			case string:
				p.conf[k] = v
			}
		}
	}
	return p, nil
}

// int returns the first of keys found (file metadata first), or 0, false.
func (p *params) int(keys ...string) (int, bool, error) {
	for _, src := range []map[string]string{p.file, p.conf} {
		for _, k := range keys {
			if s, ok := src[k]; ok {
				v, err := strconv.Atoi(s)
				if err != nil || v <= 0 || v > 1<<24 {
					return 0, false, fmt.Errorf("%w: %s = %q is not a positive count", ErrConfig, k, s)
				}
				return v, true, nil
			}
		}
	}
	return 0, false, nil
}

func (p *params) float(keys ...string) (float32, bool, error) {
	for _, src := range []map[string]string{p.file, p.conf} {
		for _, k := range keys {
			if s, ok := src[k]; ok {
				v, err := strconv.ParseFloat(s, 32)
				if err != nil || !(v > 0 && v < 1) {
					return 0, false, fmt.Errorf("%w: %s = %q is not an epsilon", ErrConfig, k, s)
				}
				return float32(v), true, nil
			}
		}
	}
	return 0, false, nil
}

// tensors indexes a layout's tensors by name.
type tensors map[string]*tensor

func (ts tensors) need(name string, shape ...int) (*tensor, error) {
	t, ok := ts[name]
	if !ok {
		return nil, fmt.Errorf("%w: tensor %q is missing", ErrArchitecture, name)
	}
	if len(t.shape) != len(shape) {
		return nil, fmt.Errorf("%w: tensor %q has shape %v, want %v", ErrConfig, name, t.shape, shape)
	}
	for i, d := range shape {
		if t.shape[i] != int64(d) {
			return nil, fmt.Errorf("%w: tensor %q has shape %v, want %v", ErrConfig, name, t.shape, shape)
		}
	}
	switch t.dt {
	case dtype.F32, dtype.BF16, dtype.F16:
	default:
		return nil, fmt.Errorf("%w: tensor %q is %s (the kernels read F32, F16 and BF16)", ErrDType, name, t.dt)
	}
	if n, ok := t.dt.ByteLen(t.numel()); !ok || n != t.length {
		return nil, fmt.Errorf("%w: tensor %q: %d bytes for shape %v of %s", ErrConfig, name, t.length, t.shape, t.dt)
	}
	return t, nil
}

// build recognises the architecture of a layout and plans its forward
// pass; the caller supplies the store.
func build(l *checkpoint.Layout, opt Options) (*Model, error) {
	ts := tensors{}
	for _, s := range l.Tensors() {
		ts[s.Name] = &tensor{name: s.Name, dt: s.DType, shape: s.Shape, offset: s.Offset, length: s.Length}
	}
	p, err := newParams(l.Metadata, opt.Config)
	if err != nil {
		return nil, err
	}
	switch {
	case ts["model.embed_tokens.weight"] != nil:
		return buildLlama(ts, p, hfNames)
	case ts["token_embd.weight"] != nil:
		return buildLlama(ts, p, ggufNames)
	case ts["tok.weight"] != nil && ts["pos.weight"] != nil && ts["blocks.0.attn.weight"] != nil:
		return buildGPT(ts, p)
	}
	return nil, fmt.Errorf("%w: %s file with %d tensors is neither a Llama (model.embed_tokens.weight, token_embd.weight) nor the byte-level GPT (tok.weight, pos.weight, blocks.N.*)", ErrArchitecture, l.Format, len(ts))
}

// kvCache holds each layer's keys and values by position, grown as
// positions are run (a configuration's context length allocates nothing).
type kvCache struct {
	k, v  [][]float32
	width int
}

func newKVCache(layers, width int) *kvCache {
	return &kvCache{k: make([][]float32, layers), v: make([][]float32, layers), width: width}
}

// layer returns layer l's keys and values of positions 0..pos.
func (c *kvCache) layer(l, pos int) (k, v []float32) {
	n := (pos + 1) * c.width
	if len(c.k[l]) < n {
		c.k[l] = slices.Grow(c.k[l], n-len(c.k[l]))[:n]
		c.v[l] = slices.Grow(c.v[l], n-len(c.v[l]))[:n]
	}
	return c.k[l][:n], c.v[l][:n]
}

// grow returns buf with length n, reallocated when too short.
func grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n, max(n, 2*cap(buf)))
	}
	return buf[:n]
}
