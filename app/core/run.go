package core

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"time"

	"neuralzip/codec"
	"neuralzip/codec/baseline"
	"neuralzip/gpu"
)

// Codec names of the run screen besides baseline.Names.
const (
	CodecNZip      = "nzip"
	CodecNZipSetup = "nzip+setup"
)

// Codecs lists the codecs a run can use: nzip, nzip+setup (when a setup is
// loaded) and every baseline.
func Codecs(haveSetup bool) []string {
	out := []string{CodecNZip}
	if haveSetup {
		out = append(out, CodecNZipSetup)
	}
	for _, n := range baseline.Names() {
		if n != CodecNZip {
			out = append(out, n)
		}
	}
	return out
}

// RunSpec says what to run.
type RunSpec struct {
	Codec     string
	Threads   int          // 0: GOMAXPROCS
	Backend   string       // BackendCPU (""), or a device backend of Backends for nzip
	Setup     *codec.Setup // for CodecNZipSetup
	SetupName string
}

// RunResult is one compress + decompress of a model: a row of the history.
type RunResult struct {
	When          time.Time `json:"when"`
	Model         string    `json:"model"`
	Codec         string    `json:"codec"`
	Setup         string    `json:"setup,omitempty"`
	Backend       string    `json:"backend"`
	Threads       int       `json:"threads"`
	OriginalBytes int64     `json:"original_bytes"`
	Compressed    int64     `json:"compressed_bytes"`
	Ratio         float64   `json:"ratio"`
	CompressMBs   float64   `json:"compress_mb_s"`
	DecompressMBs float64   `json:"decompress_mb_s"`
	RoundtripOK   bool      `json:"roundtrip_ok"`
	SHA256        string    `json:"sha256_original"`
	SHA256Decoded string    `json:"sha256_decoded"`
	Error         string    `json:"error,omitempty"`

	// Runs on a device backend (OnDevice): what the device is, its decode
	// rate in GB/s of original bytes (the kernels alone, and with the
	// transfers), the original bytes it decoded (the rest, HostBlocks by
	// reason, the CPU did), the device memory the compressed form of those
	// bytes takes (ResidentBytes: weights kept compressed and decoded on
	// demand) and what that saves against holding them decoded.
	Device         string   `json:"device,omitempty"`
	DeviceGBs      float64  `json:"device_gb_s,omitempty"`
	DeviceTotalGBs float64  `json:"device_total_gb_s,omitempty"`
	DeviceBytes    int64    `json:"device_bytes,omitempty"`
	ResidentBytes  int64    `json:"resident_bytes,omitempty"`
	DeviceSaved    int64    `json:"device_saved_bytes,omitempty"`
	HostBlocks     []string `json:"host_blocks,omitempty"`

	// Coding says, for nzip runs, what the coding did beyond the float
	// coder (codec.Census.Notes): float blocks zstd coded smaller, floats
	// found in opaque bytes, copies.
	Coding []string `json:"coding,omitempty"`

	// TensorBytes is, for nzip runs, each tensor's share of the archive
	// (index as in Model.Tensors; blocks shared by several tensors are
	// split by original bytes). nil for the baselines.
	TensorBytes []float64 `json:"-"`

	// Archive is the compressed bytes (for downloading them); the
	// workbench keeps only the latest run's.
	Archive []byte `json:"-"`
}

// Phases reported by Run's progress callback.
const (
	PhaseCompress   = "compress"
	PhaseDecompress = "decompress"
	PhaseVerify     = "verify"
)

// Errors of a run.
var (
	// ErrCancelled is the error of a cancelled run.
	ErrCancelled = errors.New("cancelled")
	// ErrNotOnDevice: only nzip archives decode on a device backend
	// (RunSpec.Check).
	ErrNotOnDevice = errors.New("only nzip and nzip+setup decode on a device")
)

// Run compresses and decompresses the model's bytes (src and segs from
// Model.ReadAll) with spec's codec, once each, and checks the roundtrip
// bit-exact by comparing the bytes and their SHA-256. With a device
// backend (nzip only) the archive decodes through package gpu and the
// result records the device's share. progress (may be nil) gets the phase
// and the fraction done, or -1 when the decoder does not report progress
// (the baselines, the devices). nzip stops as soon as ctx is
// cancelled; a baseline's call finishes in the background and its result
// is discarded. m is used to attribute the archive to tensors (may be nil).
func Run(ctx context.Context, m *Model, src []byte, segs []codec.Segment, starts []int64, spec RunSpec, progress func(phase string, frac float64)) RunResult {
	if progress == nil {
		progress = func(string, float64) {}
	}
	r := RunResult{When: time.Now(), Codec: spec.Codec, Backend: spec.Backend, Threads: spec.Threads, OriginalBytes: int64(len(src)), Setup: spec.SetupName}
	if m != nil {
		r.Model = m.Name
	}
	if r.Backend == "" {
		r.Backend = BackendCPU
	}
	if r.Threads <= 0 {
		r.Threads = runtime.GOMAXPROCS(0)
	}
	sum := sha256.Sum256(src)
	r.SHA256 = hex.EncodeToString(sum[:])
	if err := spec.Check(); err != nil {
		r.Error = err.Error()
		return r
	}
	var dev gpu.Backend
	if OnDevice(r.Backend) {
		b, err := gpu.Open(r.Backend, r.Threads)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		defer b.Close()
		dev, r.Device = b, b.Device()
	}
	var comp, dec []byte
	var err error
	var tc, td time.Duration
	var dr deviceRun
	switch spec.Codec {
	case CodecNZip, CodecNZipSetup:
		opt := codec.EncodeOptions{Threads: r.Threads}
		if spec.Codec == CodecNZipSetup {
			if spec.Setup == nil {
				r.Error = "no setup loaded"
				return r
			}
			opt = SetupOptions(spec.Setup, opt)
		}
		opt.Progress = func(done, total int64) { progress(PhaseCompress, frac(done, total)) }
		t0 := time.Now()
		comp, err = codec.CompressBytes(ctx, src, segs, opt)
		tc = time.Since(t0)
		if err == nil {
			dopt := opt.Decoding()
			dopt.Progress = func(done, total int64) { progress(PhaseDecompress, frac(done, total)) }
			dopt.SkipHash = true // checked below, on the whole model
			t0 = time.Now()
			if dev != nil {
				progress(PhaseDecompress, -1) // gpu.DecodeFile does not report progress
				dec, dr, err = decodeOnDevice(ctx, comp, spec.Setup, dev, r.Threads)
			} else {
				progress(PhaseDecompress, 0)
				dec, err = codec.DecompressBytes(ctx, comp, dopt)
			}
			td = time.Since(t0)
		}
		if err == nil && m != nil {
			r.TensorBytes = attribute(m, comp, starts)
		}
		if err == nil {
			r.Coding = codingNotes(comp)
		}
	default:
		c, cerr := baseline.New(spec.Codec, baseline.Options{Threads: r.Threads})
		if cerr != nil {
			r.Error = cerr.Error()
			return r
		}
		if st, ok := c.(interface{ Threads() int }); ok {
			r.Threads = st.Threads()
		}
		progress(PhaseCompress, -1)
		t0 := time.Now()
		comp, err = await(ctx, func() ([]byte, error) { return c.Compress(src, segs) })
		tc = time.Since(t0)
		if err == nil {
			progress(PhaseDecompress, -1)
			t0 = time.Now()
			dec, err = await(ctx, func() ([]byte, error) { return c.Decompress(comp) })
			td = time.Since(t0)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ErrCancelled
		}
		r.Error = err.Error()
		return r
	}
	progress(PhaseVerify, 1)
	r.Archive = comp
	r.Compressed = int64(len(comp))
	if r.Compressed > 0 {
		r.Ratio = float64(len(src)) / float64(r.Compressed)
	}
	r.CompressMBs, r.DecompressMBs = baseline.MBPerS(len(src), tc), baseline.MBPerS(len(src), td)
	dsum := sha256.Sum256(dec)
	r.SHA256Decoded = hex.EncodeToString(dsum[:])
	r.RoundtripOK = dsum == sum && bytes.Equal(dec, src)
	if dev != nil {
		dr.fill(&r)
	}
	return r
}

func frac(done, total int64) float64 {
	if total <= 0 {
		return 1
	}
	return float64(done) / float64(total)
}

// await runs fn in a goroutine and returns its result, or ErrCancelled as
// soon as ctx is done (fn then finishes unobserved).
func await(ctx context.Context, fn func() ([]byte, error)) ([]byte, error) {
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := fn()
		ch <- res{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-ctx.Done():
		return nil, ErrCancelled
	}
}

// attribute splits the archive's block payloads among the model's
// tensors: each block's compressed bytes go to the tensors it overlaps, in
// proportion to the original bytes of the overlap.
// codingNotes is what the archive's census says beyond the float coder.
func codingNotes(comp []byte) []string {
	rd, err := codec.NewReader(bytes.NewReader(comp), int64(len(comp)))
	if err != nil {
		return nil
	}
	defer rd.Close()
	c, err := rd.Census()
	if err != nil {
		return nil
	}
	return c.Notes(func(s string) string { return s }, HumanBytes)
}

func attribute(m *Model, comp []byte, starts []int64) []float64 {
	rd, err := codec.NewReader(bytes.NewReader(comp), int64(len(comp)))
	if err != nil || len(starts) != len(m.Files) {
		return nil
	}
	defer rd.Close()
	out := make([]float64, len(m.Tensors))
	// tensors at their offsets in the concatenated model (file order)
	k := 0
	var base int64 // where the archive file begins in the concatenation
	for _, f := range rd.Files() {
		for _, b := range f.Blocks() {
			if b.Length <= 0 {
				continue
			}
			bOff := base + b.Offset
			bEnd := bOff + b.Length
			for k < len(m.Tensors) && starts[m.Tensors[k].File]+m.Tensors[k].Offset+m.Tensors[k].Bytes <= bOff {
				k++
			}
			for j := k; j < len(m.Tensors); j++ {
				t := &m.Tensors[j]
				tOff := starts[t.File] + t.Offset
				if tOff >= bEnd {
					break
				}
				lo, hi := max(tOff, bOff), min(tOff+t.Bytes, bEnd)
				if hi > lo {
					out[j] += float64(b.Compressed) * float64(hi-lo) / float64(b.Length)
				}
			}
		}
		base += f.Size
	}
	return out
}

// WriteHistoryCSV writes runs as CSV with a header row.
func WriteHistoryCSV(w io.Writer, runs []RunResult) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"when", "model", "codec", "setup", "backend", "threads", "original_bytes", "compressed_bytes", "ratio",
		"compress_mb_s", "decompress_mb_s", "roundtrip_ok", "sha256_original", "sha256_decoded", "error",
		"device", "device_gb_s", "device_total_gb_s", "device_bytes", "resident_bytes", "device_saved_bytes"})
	for _, r := range runs {
		cw.Write([]string{r.When.UTC().Format(time.RFC3339), r.Model, r.Codec, r.Setup, r.Backend, strconv.Itoa(r.Threads),
			strconv.FormatInt(r.OriginalBytes, 10), strconv.FormatInt(r.Compressed, 10), strconv.FormatFloat(r.Ratio, 'f', 4, 64),
			strconv.FormatFloat(r.CompressMBs, 'f', 1, 64), strconv.FormatFloat(r.DecompressMBs, 'f', 1, 64), strconv.FormatBool(r.RoundtripOK),
			r.SHA256, r.SHA256Decoded, r.Error,
			r.Device, deviceNum(r, strconv.FormatFloat(r.DeviceGBs, 'f', 3, 64)), deviceNum(r, strconv.FormatFloat(r.DeviceTotalGBs, 'f', 3, 64)),
			deviceNum(r, strconv.FormatInt(r.DeviceBytes, 10)), deviceNum(r, strconv.FormatInt(r.ResidentBytes, 10)), deviceNum(r, strconv.FormatInt(r.DeviceSaved, 10))})
	}
	cw.Flush()
	return cw.Error()
}

// deviceNum is v for a device run, "" otherwise.
func deviceNum(r RunResult, v string) string {
	if r.Device == "" {
		return ""
	}
	return v
}

// WriteJSON writes v as indented JSON.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}

// HumanBytes formats n as B, KiB, MiB or GiB.
func HumanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
