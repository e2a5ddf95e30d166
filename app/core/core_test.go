package core

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"neuralzip/analysis"
	"neuralzip/assets"
	"neuralzip/codec/baseline"
)

func openDemo(t *testing.T, name string) *Model {
	t.Helper()
	m, err := Open(AssetPrefix+name, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestOpenDemos(t *testing.T) {
	for _, d := range assets.Models() {
		m := openDemo(t, d.Name)
		if m.Format != d.Format || len(m.Tensors) == 0 || m.FloatCount() == 0 {
			t.Errorf("%s: format %q, %d tensors, %d float", d.Name, m.Format, len(m.Tensors), m.FloatCount())
		}
		var size int64
		for _, name := range d.Files {
			b, _ := assets.FS.ReadFile(name)
			size += int64(len(b))
		}
		if m.Size != size || len(m.Files) != len(d.Files) {
			t.Errorf("%s: %d bytes in %d files, want %d in %d", d.Name, m.Size, len(m.Files), size, len(d.Files))
		}
		if m.Path != AssetPrefix+d.Name {
			t.Errorf("path %q", m.Path)
		}
	}
	if _, err := Open(AssetPrefix+"nope", nil); err == nil {
		t.Error("unknown demo: no error")
	}
}

func TestOpenNotACheckpoint(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.bin")
	os.WriteFile(p, []byte("hello, not a model"), 0o644)
	m, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(m.Tensors) != 0 || m.Size != 18 || m.Format != "unknown" {
		t.Fatalf("%+v", m)
	}
}

func TestStatsMatchAnalysis(t *testing.T) {
	m := openDemo(t, "silero-vad")
	var calls int
	var last int64
	st, err := ComputeStats(context.Background(), m, 2, func(done, total int64) {
		calls++
		last = max(last, done)
		if done > total {
			t.Errorf("progress %d > %d", done, total)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 {
		t.Error("no progress")
	}
	var floatBytes int64
	for i := range m.Tensors {
		tn := &m.Tensors[i]
		if !tn.IsFloat() {
			if st[i].OK {
				t.Errorf("%s: stats for a non-float tensor", tn.Name)
			}
			continue
		}
		floatBytes += tn.Bytes
		b := make([]byte, tn.Bytes)
		m.Files[tn.File].R.ReadAt(b, tn.Offset)
		want, _ := analysis.Float(tn.DType, b)
		if !st[i].OK || st[i].Float.ExpEntropy != want.ExpEntropy || st[i].Float.Values != want.Values {
			t.Fatalf("%s: entropy %g (%d values), want %g (%d)", tn.Name, st[i].Float.ExpEntropy, st[i].Float.Values, want.ExpEntropy, want.Values)
		}
		mom, _ := analysis.ValueMoments(tn.DType, b)
		if math.Abs(st[i].Sigma-mom.RMS()) > 1e-9*mom.RMS() {
			t.Fatalf("%s: σ %g, want %g", tn.Name, st[i].Sigma, mom.RMS())
		}
		// the sparse statistics, read in pieces, equal those of the whole tensor
		if sa, ok := analysis.NewSparseAccumulator(tn.DType, tn.Row()); ok {
			sa.Write(b)
			if !st[i].SparseOK || st[i].Sparse != sa.Stats() {
				t.Fatalf("%s: sparse stats %+v, want %+v", tn.Name, st[i].Sparse, sa.Stats())
			}
		}
	}
	if last != floatBytes {
		t.Errorf("progress ended at %d of %d bytes", last, floatBytes)
	}
	// the whole model's aggregate is the merged histogram
	all := make([]int, len(m.Tensors))
	for i := range all {
		all[i] = i
	}
	a, ok := st.Aggregate(all)
	if !ok || a.Tensors == 0 || a.Model == nil {
		t.Fatalf("aggregate: %v %+v", ok, a)
	}
	var n uint64
	for _, c := range a.Float.Hist {
		n += c
	}
	var psum float64
	for _, p := range a.Model {
		psum += p
	}
	if int64(n) != a.Float.Values || math.Abs(psum-1) > 1e-6 || a.HuffBits < a.Float.ExpEntropy || a.HuffBits > a.Float.ExpEntropy+1 {
		t.Errorf("aggregate: %d of %d values, model sums to %g, Huffman %g vs entropy %g", n, a.Float.Values, psum, a.HuffBits, a.Float.ExpEntropy)
	}
	if a.SparseValues != a.Float.Values || a.Zeros == 0 || a.OptimumBytes <= 0 {
		t.Errorf("aggregate: %d zeros of %d values (sparse stats of %d), optimum %g bytes", a.Zeros, a.Float.Values, a.SparseValues, a.OptimumBytes)
	}
	if r := st.FileBound(m); r < 1 || r > 2 {
		t.Errorf("bound ratio %g", r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ComputeStats(ctx, m, 2, nil); err == nil {
		t.Error("cancelled: no error")
	}
}

func TestRunRoundtrip(t *testing.T) {
	m := openDemo(t, "blazeface-front")
	src, segs, starts, err := m.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	r := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZip, Threads: 2}, func(ph string, f float64) {
		if len(phases) == 0 || phases[len(phases)-1] != ph {
			phases = append(phases, ph)
		}
	})
	if r.Error != "" || !r.RoundtripOK || r.Ratio <= 1 || r.SHA256 != r.SHA256Decoded || len(r.SHA256) != 64 {
		t.Fatalf("%+v", r)
	}
	if strings.Join(phases, ",") != "compress,decompress,verify" {
		t.Errorf("phases %v", phases)
	}
	var att float64
	for _, b := range r.TensorBytes {
		att += b
	}
	if att <= 0 || att >= float64(r.Compressed) {
		t.Errorf("attributed %g of %d bytes", att, r.Compressed)
	}
	z := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: "zstd-3"}, nil)
	if !z.RoundtripOK || z.Ratio <= 1 || z.TensorBytes != nil {
		t.Fatalf("zstd-3: %+v", z)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := Run(ctx, m, src, segs, starts, RunSpec{Codec: CodecNZip}, nil)
	if c.Error != ErrCancelled.Error() || c.RoundtripOK {
		t.Errorf("cancelled run: %+v", c)
	}
	var buf bytes.Buffer
	if err := WriteHistoryCSV(&buf, []RunResult{r, z}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) != 3 || recs[1][2] != "nzip" || recs[2][11] != "true" {
		t.Errorf("csv: %v %v", err, recs)
	}
}

func TestRunOnDevice(t *testing.T) {
	m := openDemo(t, "blazeface-front")
	src, segs, starts, err := m.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	infos := ProbeBackends()
	if len(infos) != len(Backends()) || infos[0].Name != BackendCPU || !infos[0].Available() {
		t.Fatalf("backends %+v", infos)
	}
	for i, b := range infos {
		if b.Name != Backends()[i] || b.Available() == (b.Device == "") {
			t.Errorf("backend %d: %+v", i, b)
		}
		if b.Name == "cpu" && !b.Available() {
			t.Errorf("the Go twin is unavailable: %s", b.Reason)
		}
	}
	// "cpu" is the kernels' Go twin: it always runs
	var phases []string
	r := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZip, Threads: 2, Backend: "cpu"}, func(ph string, f float64) {
		if len(phases) == 0 || phases[len(phases)-1] != ph {
			phases = append(phases, ph)
		}
	})
	if r.Error != "" || !r.RoundtripOK || r.SHA256 != r.SHA256Decoded || r.Backend != "cpu" {
		t.Fatalf("%+v", r)
	}
	if strings.Join(phases, ",") != "compress,decompress,verify" {
		t.Errorf("phases %v", phases)
	}
	if r.Device == "" || r.DeviceGBs <= 0 || r.DeviceTotalGBs <= 0 || r.DeviceBytes <= 0 || r.DeviceBytes > r.OriginalBytes ||
		r.ResidentBytes <= 0 || r.DeviceSaved != r.DeviceBytes-r.ResidentBytes || r.DeviceShare() <= 0.5 || r.DeviceShare() > 1 {
		t.Errorf("device fields: %q %.3f/%.3f GB/s, %d of %d bytes, resident %d, saved %d", r.Device, r.DeviceGBs, r.DeviceTotalGBs,
			r.DeviceBytes, r.OriginalBytes, r.ResidentBytes, r.DeviceSaved)
	}
	if r.DeviceBytes < r.OriginalBytes && len(r.HostBlocks) == 0 {
		t.Errorf("%d bytes on the CPU, no reasons", r.OriginalBytes-r.DeviceBytes)
	}
	// the same archive as the CPU backend's
	c := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZip, Threads: 2}, nil)
	if c.Compressed != r.Compressed || c.Device != "" || c.DeviceBytes != 0 {
		t.Errorf("CPU run: %d bytes (device %d), device run %d", c.Compressed, c.DeviceBytes, r.Compressed)
	}
	// with a setup: the setup-table blocks go to the CPU
	s, err := BuildSetup(context.Background(), []*Model{m}, nil, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	rs := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZipSetup, Backend: "cpu", Setup: s, SetupName: "s"}, nil)
	if rs.Error != "" || !rs.RoundtripOK || rs.DeviceBytes <= 0 {
		t.Errorf("nzip+setup on cpu: %+v", rs)
	}
	// unavailable backends and baselines on a device: errors, not panics
	for _, b := range infos {
		if b.Available() {
			continue
		}
		u := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZip, Backend: b.Name}, nil)
		if u.RoundtripOK || !strings.Contains(u.Error, "unavailable") || !strings.Contains(u.Error, b.Reason) {
			t.Errorf("%s: %q", b.Name, u.Error)
		}
	}
	z := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: "zstd-3", Backend: "cpu"}, nil)
	if z.RoundtripOK || !strings.Contains(z.Error, ErrNotOnDevice.Error()) {
		t.Errorf("zstd-3 on cpu: %q", z.Error)
	}
	if u := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZip, Backend: "tpu"}, nil); !strings.Contains(u.Error, "unknown backend") {
		t.Errorf("tpu: %q", u.Error)
	}
	// history export: device columns for the device run only
	var buf bytes.Buffer
	if err := WriteHistoryCSV(&buf, []RunResult{r, c}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) != 3 || recs[0][15] != "device" || recs[1][15] != r.Device || recs[2][15] != "" || recs[2][20] != "" {
		t.Errorf("csv: %v %v", err, recs)
	}
	buf.Reset()
	if err := WriteJSON(&buf, []RunResult{r, c}); err != nil {
		t.Fatal(err)
	}
	var back []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back) != 2 {
		t.Fatal(err)
	}
	if back[0]["device_saved_bytes"] != float64(r.DeviceSaved) || back[0]["device"] != r.Device {
		t.Errorf("json: %v", back[0])
	}
	if _, ok := back[1]["device_gb_s"]; ok {
		t.Errorf("json of a CPU run: %v", back[1])
	}
}

func TestSetupBuildCompare(t *testing.T) {
	a := openDemo(t, "selfie-segmentation")
	b := openDemo(t, "blazeface-front")
	s, err := BuildSetup(context.Background(), []*Model{a}, nil, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Sections) == 0 || len(SetupSummary(s)) != 1+len(s.Sections) {
		t.Fatalf("setup: %v", SetupSummary(s))
	}
	p := filepath.Join(t.TempDir(), "selfie.nzsetup")
	os.WriteFile(p, s.Bytes(), 0o644)
	ns, err := LoadSetup(p)
	if err != nil || ns.Name != "selfie" || ns.Setup.ID() != s.ID() {
		t.Fatalf("load: %v %+v", err, ns)
	}
	var last int
	rows, err := CompareSetups(context.Background(), []NamedSetup{ns, Gaussian()}, []*Model{a, b}, 2, 4096, func(d, tot int) { last = d })
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 || last != 6 {
		t.Fatalf("%d rows, progress %d", len(rows), last)
	}
	for _, r := range rows {
		if !r.RoundtripOK || r.Ratio <= 1 || r.CompressMBs <= 0 || r.DecompressMBs <= 0 {
			t.Errorf("%+v", r)
		}
		if r.Setup == "none" && r.RatioVsNone != 1 {
			t.Errorf("none: %+v", r)
		}
	}
}

func TestLayerOfAndRecent(t *testing.T) {
	for in, want := range map[string]string{
		"model.layers.3.mlp.up.weight": "model.layers.3",
		"conv1.weight":                 "conv1",
		"bias":                         "(top level)",
		"a/b/c":                        "a.b",
		"blocks/0/conv/kernel":         "blocks.0",
	} {
		if got := LayerOf(in); got != want {
			t.Errorf("LayerOf(%q) = %q, want %q", in, got, want)
		}
	}
	l := PushRecent(nil, "a")
	l = PushRecent(l, "b")
	l = PushRecent(l, "a")
	if strings.Join(l, ",") != "a,b" {
		t.Errorf("recent %v", l)
	}
	for i := 0; i < 20; i++ {
		l = PushRecent(l, string(rune('c'+i)))
	}
	if len(l) != MaxRecent {
		t.Errorf("%d recent", len(l))
	}
}

// A run too short for the clock gives 0 MB/s, which the JSON export
// writes, not +Inf, which it cannot.
func TestRunRateZeroDuration(t *testing.T) {
	if v := baseline.MBPerS(1000, 0); v != 0 {
		t.Fatalf("0 s: %v", v)
	}
	if v := baseline.MBPerS(2e6, time.Second); v != 2 {
		t.Fatalf("2 MB in 1 s: %v", v)
	}
	r := RunResult{CompressMBs: baseline.MBPerS(1000, 0), DecompressMBs: baseline.MBPerS(1000, 0)}
	if err := WriteJSON(io.Discard, []RunResult{r}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(io.Discard, []RunResult{{CompressMBs: math.Inf(1)}}); err == nil {
		t.Fatal("the JSON export wrote +Inf: this test no longer tests anything")
	}
}

func TestCompareTable(t *testing.T) {
	rows := []CompareRow{
		{Model: "a", Setup: "none", Ratio: 1.5, RatioVsNone: 1, CompressMBs: 500, DecompressMBs: 1500, RoundtripOK: true},
		{Model: "a", Setup: "gaussian", Ratio: 1.49, RatioVsNone: 1.49 / 1.5, CompressMBs: 700, DecompressMBs: 1600, RoundtripOK: true},
		{Model: "b", Setup: "none", Ratio: 1.2, RatioVsNone: 1, CompressMBs: 400, DecompressMBs: 900, RoundtripOK: false, Error: "x"},
	}
	got := CompareTable(rows)
	for _, want := range []string{"a ", "gaussian", "1.4900", "-0.67%", "700", "1600", "b ", "FAILED x"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

// A run says what the codec did beyond the float coder: the embedded
// Silero VAD's STFT basis repeats (a repeat block codes it), its copies
// of one tensor are stored once; blazeface's weights need neither.
func TestRunCoding(t *testing.T) {
	m := openDemo(t, "silero-vad")
	src, segs, starts, err := m.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	r := Run(context.Background(), m, src, segs, starts, RunSpec{Codec: CodecNZip}, nil)
	text := strings.Join(r.Coding, "\n")
	if !r.RoundtripOK || !strings.Contains(text, "1 float tensor(s) coded as rows that repeat") || !strings.Contains(text, "forward_basis_buffer (1)") || !strings.Contains(text, "copies of earlier blocks") {
		t.Fatalf("coding %q (%+v)", text, r)
	}
	b := openDemo(t, "blazeface-front")
	src, segs, starts, err = b.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if r := Run(context.Background(), b, src, segs, starts, RunSpec{Codec: CodecNZip}, nil); !r.RoundtripOK || len(r.Coding) != 0 {
		t.Errorf("blazeface: coding %q", r.Coding)
	}
	if z := Run(context.Background(), b, src, segs, starts, RunSpec{Codec: "zstd-3"}, nil); z.Coding != nil {
		t.Errorf("zstd-3: coding %q", z.Coding)
	}
}
