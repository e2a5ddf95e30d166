package analysis

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"neuralzip/dtype"
)

// modelTypes are the dtypes the Gaussian model supports.
var modelTypes = []dtype.DType{dtype.F64, dtype.F32, dtype.C64, dtype.F16, dtype.BF16, dtype.F8E4M3, dtype.F8E5M2}

func TestGaussianExpProbs(t *testing.T) {
	for _, d := range modelTypes {
		f, _, _ := formatOf(d)
		minNormal := math.Ldexp(1, 1-f.bias)
		maxNormal := math.Ldexp(1, (1<<f.exp)-2-f.bias) // lower edge of the top IEEE binade
		for _, sigma := range []float64{1e-6, 1e-3, 0.02, 0.7, 1, 300, 1e4, 1e30} {
			p, ok := GaussianExpProbs(d, sigma)
			if !ok || len(p) != 1<<f.exp {
				t.Fatalf("%v σ=%v: ok=%v, %d bins", d, sigma, ok, len(p))
			}
			var sum float64
			peak := 0
			for e, q := range p {
				if q < 0 || q > 1 {
					t.Fatalf("%v σ=%v: P(%d) = %v", d, sigma, e, q)
				}
				sum += q
				if q > p[peak] {
					peak = e
				}
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("%v σ=%v: Σp = %v", d, sigma, sum)
			}
			// |X| is most likely near σ: the peak is σ's binade or a
			// neighbour, when σ is well inside the normal range
			if 4*minNormal < sigma && sigma < maxNormal/4 {
				if want := int(math.Floor(math.Log2(sigma))) + f.bias; peak < want-1 || peak > want+1 {
					t.Errorf("%v σ=%v: peak at exponent %d, σ's is %d", d, sigma, peak, want)
				}
			}
			// above σ the probabilities fall ever faster (the tail is
			// computed with Erfc, not as 1 - Erf, so it keeps its digits)
			if d == dtype.F64 || d == dtype.F32 {
				for e := peak + 2; e+1 < len(p)-1 && p[e+1] > 1e-300; e++ {
					if !(p[e+1] < p[e] && p[e+1]/p[e] < p[e]/p[e-1]) {
						t.Fatalf("%v σ=%v: tail not log-concave at %d: %v %v %v", d, sigma, e, p[e-1], p[e], p[e+1])
					}
				}
			}
		}
	}
	for _, sigma := range []float64{0, -1, math.NaN(), math.Inf(1), math.MaxFloat64} {
		if _, ok := GaussianExpProbs(dtype.BF16, sigma); ok {
			t.Errorf("σ=%v accepted", sigma)
		}
	}
	for _, d := range []dtype.DType{dtype.F8E8M0, dtype.I32, dtype.F4, dtype.Invalid} {
		if _, ok := GaussianExpProbs(d, 1); ok {
			t.Errorf("%v accepted", d)
		}
	}
	// F16: everything from 65520 up rounds to Inf; E4M3FN has no Inf, its
	// top exponent is a binade of normal numbers
	p, _ := GaussianExpProbs(dtype.F16, 1e5)
	if want := math.Erfc(65520 / (1e5 * math.Sqrt2)); math.Abs(p[31]-want) > 1e-12 {
		t.Errorf("F16 overflow %v, want %v", p[31], want)
	}
	p, _ = GaussianExpProbs(dtype.F8E4M3, 100)
	if p[15] < 0.01 {
		t.Errorf("E4M3 top binade %v", p[15])
	}
}

// gaussianSamples returns n values of N(0, σ²) from a fixed seed.
func gaussianSamples(n int, sigma float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = sigma * r.NormFloat64()
	}
	return xs
}

// On Gaussian data the model predicts the exponent histogram, and its
// table codes it about as well as the best code for the histogram itself.
func TestGaussianSynthetic(t *testing.T) {
	n := 1000000
	if testing.Short() {
		n = 200000
	}
	for _, sigma := range []float64{0.02, 1} {
		xs := gaussianSamples(n, sigma, uint64(sigma*1000))
		for _, d := range modelTypes {
			src := d
			if d == dtype.C64 {
				src = dtype.F32
			}
			data := castBytes(t, src, xs)
			st, _ := Float(d, data)
			m, _ := ValueMoments(d, data)
			est := m.RMS()
			if math.Abs(est/sigma-1) > 0.01 {
				t.Fatalf("%v σ=%v: RMS %v", d, sigma, est)
			}
			p, _ := GaussianExpProbs(d, est)
			var tv float64
			for e, q := range p {
				tv += math.Abs(q-float64(st.Hist[e])/float64(st.Values)) / 2
			}
			bits, ok := GaussianCost(st, est)
			if !ok {
				t.Fatalf("%v σ=%v: no cost", d, sigma)
			}
			model := bits/float64(st.Values) - float64(st.OtherBits)
			w := make([]float64, len(st.Hist))
			for e, c := range st.Hist {
				w[e] = float64(c)
			}
			huff := codeCost(w, HuffmanLengths(w, 60)) / float64(st.Values)
			fs, fbits, _ := FitSigma(st)
			fit := fbits/float64(st.Values) - float64(st.OtherBits)
			t.Logf("%-7v σ=%-4v TV %.4f  H %.4f  Huffman %.4f  model %.4f (+%.2f%%)  fit σ/σ̂ %.3f %.4f",
				d, sigma, tv, st.ExpEntropy, huff, model, 100*(model/st.ExpEntropy-1), fs/est, fit)
			if tv > 0.02 {
				t.Errorf("%v σ=%v: total variation %v between model and histogram", d, sigma, tv)
			}
			// the best prefix code for the histogram itself is the floor;
			// Huffman's own redundancy over the entropy is below
			// p_max + 0.086 (Gallager), the model adds almost nothing
			if model < huff-1e-9 || model > huff+0.01 {
				t.Errorf("%v σ=%v: model code %v bits per exponent, optimal code %v", d, sigma, model, huff)
			}
			var pmax float64
			for _, c := range st.Hist {
				pmax = max(pmax, float64(c)/float64(st.Values))
			}
			if model > st.ExpEntropy+pmax+0.086+0.01 {
				t.Errorf("%v σ=%v: model code %v bits per exponent, entropy %v", d, sigma, model, st.ExpEntropy)
			}
			if fit > model+1e-9 || fit < st.ExpEntropy {
				t.Errorf("%v σ=%v: fitted %v, model %v, entropy %v", d, sigma, fit, model, st.ExpEntropy)
			}
		}
	}
}

func TestGaussianCostAndRatio(t *testing.T) {
	// a BF16 tensor of N(0, 0.02²), one of constant values, an empty one
	xs := gaussianSamples(10000, 0.02, 7)
	g, _ := Float(dtype.BF16, castBytes(t, dtype.BF16, xs))
	gm, _ := ValueMoments(dtype.BF16, castBytes(t, dtype.BF16, xs))
	c, _ := Float(dtype.BF16, castBytes(t, dtype.BF16, []float64{3, 3, 3, 3}))
	cm, _ := ValueMoments(dtype.BF16, castBytes(t, dtype.BF16, []float64{3, 3, 3, 3}))
	e, _ := Float(dtype.BF16, nil)
	bits, ok := GaussianCost(g, gm.RMS())
	if !ok || bits < 8*g.Bound() || bits > 8*float64(g.Bytes()) {
		t.Fatalf("cost %v bits, bound %v bytes, raw %v bytes", bits, g.Bound(), g.Bytes())
	}
	if _, ok := GaussianCost(g, 0); ok {
		t.Fatal("σ=0 has a cost")
	}
	if _, ok := GaussianCost(FloatStats{DType: dtype.BF16, Hist: make([]uint64, 16)}, 1); ok {
		t.Fatal("histogram of the wrong size")
	}
	// zeros have no code in the BF16 model: they cost the escape plus
	// the raw exponent
	tab, _ := NewGaussianTable(dtype.BF16, 0.02)
	if tab.Lengths[0] != 0 || tab.EscLen == 0 || tab.Bits(0) != int(tab.EscLen)+8 || tab.ExpBits != 8 {
		t.Fatalf("zero: length %d, escape %d", tab.Lengths[0], tab.EscLen)
	}
	// every exponent is codable, and the code is a prefix code (Kraft
	// sum ≤ 1 counting escapes), which is why the cost is never below
	// the entropy
	for _, d := range modelTypes {
		for _, sigma := range []float64{1e-12, 1e-6, 0.02, 1, 1e4} {
			tab, ok := NewGaussianTable(d, sigma)
			if !ok {
				t.Fatalf("%v σ=%v: no table", d, sigma)
			}
			var k float64
			for e, l := range tab.Lengths {
				if l == 0 && tab.EscLen == 0 || tab.Bits(e) > DefaultMaxLen+tab.ExpBits {
					t.Fatalf("%v σ=%v: exponent %d costs %d bits", d, sigma, e, tab.Bits(e))
				}
				k += math.Ldexp(1, -tab.Bits(e))
			}
			if k > 1 {
				t.Fatalf("%v σ=%v: Kraft sum %v", d, sigma, k)
			}
		}
	}
	models := []TensorModel{{g, gm.RMS()}, {c, cm.Std()}, {e, 0}}
	if got, want := models[0].Bytes(), bits/8+4; got != want {
		t.Fatalf("tensor bytes %v, want %v", got, want)
	}
	if got := models[1].Bytes(); got < c.Bound()+4 || got > c.Bound()+4+float64(len(c.Hist)) {
		t.Fatalf("constant tensor: %v bytes, bound %v", got, c.Bound())
	}
	if models[2].Bytes() != 0 {
		t.Fatal("empty tensor costs")
	}
	size := int64(100) + g.Bytes() + c.Bytes()
	r := GaussianRatio(size, models)
	if want := float64(size) / (100 + models[0].Bytes() + models[1].Bytes()); math.Abs(r-want) > 1e-12 {
		t.Fatalf("ratio %v, want %v", r, want)
	}
	if GaussianRatio(0, nil) != 0 {
		t.Fatal("empty file")
	}
}

// benchTensor is one tensor of a bench safetensors file.
type benchTensor struct {
	name string
	d    dtype.DType
	data []byte
}

// readBench parses a bench safetensors file (8-byte header length, JSON,
// data; see ../../shared/models/README.md) just enough for these tests.
func readBench(t *testing.T, path string) (size int64, tensors []benchTensor) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 {
		t.Fatalf("%s: too short", path)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > uint64(len(b)-8) {
		t.Fatalf("%s: header length %d", path, n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &hdr); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	data := b[8+n:]
	for name, raw := range hdr {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DType   string   `json:"dtype"`
			Offsets [2]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("%s: %s: %v", path, name, err)
		}
		d, ok := dtype.Parse(e.DType)
		if !ok || e.Offsets[0] < 0 || e.Offsets[0] > e.Offsets[1] || e.Offsets[1] > int64(len(data)) {
			t.Fatalf("%s: %s: %s %v", path, name, e.DType, e.Offsets)
		}
		tensors = append(tensors, benchTensor{name, d, data[e.Offsets[0]:e.Offsets[1]]})
	}
	slices.SortFunc(tensors, func(a, b benchTensor) int { return strings.Compare(a.name, b.name) })
	return int64(len(b)), tensors
}

// On real weights: the Gaussian-model ratio next to the order-0 bound.
// The numbers go to the log; the test checks only what cannot fail on
// honest data: the model never beats the entropy, and it compresses.
func TestGaussianRealBench(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "models", "bench")
	files := []string{"real-bf16", "real-f16", "real-f32", "real-f16-native"}
	if testing.Short() {
		files = files[:1]
	}
	for _, name := range files {
		path := filepath.Join(dir, name+".safetensors")
		if _, err := os.Stat(path); err != nil {
			t.Logf("skipping %s: %v (the corpus in ../shared is not here)", name, err)
			continue
		}
		size, tensors := readBench(t, path)
		var rms, std, fit []TensorModel
		var names []string
		var bound, floatBytes, values, hBits, modelBits, fitBits float64
		for _, tn := range tensors {
			st, ok := Float(tn.d, tn.data)
			if !ok {
				continue
			}
			m, _ := ValueMoments(tn.d, tn.data)
			rms = append(rms, TensorModel{st, m.RMS()})
			names = append(names, tn.name)
			std = append(std, TensorModel{st, m.Std()})
			fs, _, _ := FitSigma(st)
			fit = append(fit, TensorModel{st, fs})
			bound += st.Bound()
			floatBytes += float64(st.Bytes())
			if bits, ok := GaussianCost(st, m.RMS()); ok {
				if bits < 8*st.Bound()*(1-1e-12) {
					t.Errorf("%s: %s: model %v bits below the entropy bound %v", name, tn.name, bits, 8*st.Bound())
				}
				values += float64(st.Values)
				hBits += float64(st.Values) * st.ExpEntropy
				modelBits += bits - float64(st.Values*int64(st.OtherBits))
				fb, _ := GaussianCost(st, fs)
				fitBits += fb - float64(st.Values*int64(st.OtherBits))
			}
		}
		boundRatio := float64(size) / (bound + float64(size) - floatBytes)
		gRMS, gStd, gFit := GaussianRatio(size, rms), GaussianRatio(size, std), GaussianRatio(size, fit)
		t.Logf("%-16s %d tensors  order-0 bound %.4f  Gaussian σ=RMS %.4f (%.1f%% of the bound)  σ=std %.4f  σ fitted %.4f",
			name, len(rms), boundRatio, gRMS, 100*gRMS/boundRatio, gStd, gFit)
		t.Logf("%-16s exponent bits per value: entropy %.4f  model σ=RMS %.4f  σ fitted %.4f",
			name, hBits/values, modelBits/values, fitBits/values)
		if !(gRMS > 1 && gRMS <= boundRatio*(1+1e-9)) || !(gFit <= boundRatio*(1+1e-9)) {
			t.Errorf("%s: Gaussian ratio %v (fitted %v), bound %v", name, gRMS, gFit, boundRatio)
		}
		if testing.Verbose() {
			logWorst(t, names, rms)
		}
	}
}

// logWorst logs the tensors where the model loses the most against the
// order-0 bound.
func logWorst(t *testing.T, names []string, ms []TensorModel) {
	type loss struct {
		i    int
		over float64
	}
	var ls []loss
	for i, m := range ms {
		ls = append(ls, loss{i, m.Bytes() - m.Stats.Bound()})
	}
	slices.SortFunc(ls, func(a, b loss) int { return -cmpFloat(a.over, b.over) })
	var total float64
	for _, l := range ls {
		total += l.over
	}
	for _, l := range ls[:min(5, len(ls))] {
		st := ms[l.i].Stats
		t.Logf("    +%6.0f bytes (of %.0f over the bound in all) %s: %d values, H %.3f, σ %.3g, zeros+subnormals %d",
			l.over, total, names[l.i], st.Values, st.ExpEntropy, ms[l.i].Sigma, st.Hist[0])
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
