package analysis

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"neuralzip/dtype"
)

// bf16Gauss returns n BF16 values of N(0, σ²) (truncated, not rounded).
func bf16Gauss(r *rand.Rand, n int, sigma float64) []byte {
	b := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		f := float32(r.NormFloat64() * sigma)
		binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(f)>>16))
	}
	return b
}

// twoScales is a file of two BF16 tensors whose σ differ by 2^10, and a
// tensor of another dtype that must be ignored.
func twoScales() (*bytes.Reader, []TensorData) {
	r := rand.New(rand.NewPCG(1, 2))
	a := bf16Gauss(r, 8*4096, 1)
	b := bf16Gauss(r, 8*4096, 1.0/1024)
	other := make([]byte, 400)
	file := append(append(append([]byte{}, a...), b...), other...)
	rd := bytes.NewReader(file)
	return rd, []TensorData{
		{Name: "a", DType: dtype.BF16, R: rd, Offset: 0, Length: int64(len(a))},
		{Name: "b", DType: dtype.BF16, R: rd, Offset: int64(len(a)), Length: int64(len(b))},
		{Name: "f32", DType: dtype.F32, R: rd, Offset: int64(len(a) + len(b)), Length: 400},
	}
}

func TestChunkClustersSeparatesScales(t *testing.T) {
	_, ts := twoScales()
	v, err := ChunkClusters(context.Background(), ts, ClusterOptions{ChunkValues: 4096, K: 2, MaxK: 4})
	if err != nil {
		t.Fatal(err)
	}
	if v.DType != dtype.BF16 || v.Chunks != 16 || v.TotalChunks != 16 || v.Sampled || v.Values != 16*4096 {
		t.Fatalf("view: dtype %v chunks %d/%d sampled %v values %d", v.DType, v.Chunks, v.TotalChunks, v.Sampled, v.Values)
	}
	// chunks 0..7 come from a, 8..15 from b: two clusters, one each
	for i := 1; i < 16; i++ {
		same := v.Assign[i] == v.Assign[0]
		if same != (i < 8) {
			t.Fatalf("assignments %v do not separate the tensors", v.Assign)
		}
	}
	if len(v.Clusters) != 2 || v.Clusters[0].Chunks != 8 || math.Abs(v.Clusters[0].Share-0.5) > 1e-12 {
		t.Fatalf("clusters: %+v", v.Clusters)
	}
	// the PCA's first axis separates them too
	for i := 1; i < 16; i++ {
		if (v.Points[i][0] > 0) != (v.Points[0][0] > 0) != (i >= 8) {
			t.Fatalf("projection does not separate the tensors: %v", v.Points)
		}
	}
	if v.Explained[0] < 0.9 {
		t.Errorf("first component explains %g", v.Explained[0])
	}
	// one table for both scales costs much more than two
	if len(v.Elbow) != 4 || v.Elbow[0].Bits < v.Elbow[1].Bits+0.8 { // a mix of two distinct halves costs ~1 bit more
		t.Fatalf("elbow %+v", v.Elbow)
	}
	for _, e := range v.Elbow {
		// never better than every chunk's own table by more than rounding
		if e.Entropy < v.EntropyBits-1e-9 || e.Bits < v.OwnBits-0.05 {
			t.Errorf("K=%d: %g bits (entropy %g) below own tables %g (entropy %g)", e.K, e.Bits, e.Entropy, v.OwnBits, v.EntropyBits)
		}
	}
	if math.Abs(v.Elbow[1].Bits-v.Clusters[0].Bits*0.5-v.Clusters[1].Bits*0.5) > 1e-9 {
		t.Errorf("K=2 elbow %g vs clusters %g, %g", v.Elbow[1].Bits, v.Clusters[0].Bits, v.Clusters[1].Bits)
	}
}

func TestChunkClustersAlignMerges(t *testing.T) {
	_, ts := twoScales()
	v, err := ChunkClusters(context.Background(), ts, ClusterOptions{ChunkValues: 4096, K: 1, MaxK: 2, Align: true})
	if err != nil {
		t.Fatal(err)
	}
	// aligned, the two scales look alike: a second table gains little
	if v.Elbow[0].Bits-v.Elbow[1].Bits > 0.1 {
		t.Fatalf("aligned elbow %+v", v.Elbow)
	}
}

func TestChunkClustersSampling(t *testing.T) {
	_, ts := twoScales()
	v, err := ChunkClusters(context.Background(), ts, ClusterOptions{ChunkValues: 1024, K: 3, MaxChunks: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Sampled || v.Chunks != 10 || v.TotalChunks != 64 || v.Values != 10*1024 || v.TotalValues != 64*1024 {
		t.Fatalf("sample: %v %d/%d chunks, %d/%d values", v.Sampled, v.Chunks, v.TotalChunks, v.Values, v.TotalValues)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ChunkClusters(ctx, ts, ClusterOptions{}); err == nil {
		t.Fatal("cancelled context: no error")
	}
	if _, err := ChunkClusters(context.Background(), ts[2:], ClusterOptions{ChunkValues: 64}); err != nil {
		t.Fatalf("F32 alone: %v", err)
	}
	if _, err := ChunkClusters(context.Background(), nil, ClusterOptions{}); err != ErrNoFloats {
		t.Fatalf("no tensors: %v", err)
	}
}
