package infer

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"neuralzip/codec"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r     *bytes.Reader
	bytes int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.bytes += int64(len(p))
	return c.r.ReadAt(p, off)
}

// TestReadEach: a model that reads each tensor when asked gives the
// logits of one that read them all at Open, bit for bit; it holds one
// buffer, the largest tensor, and reads the weights once per token.
func TestReadEach(t *testing.T) {
	conf := []byte(`{"heads": 2}`)
	for _, b := range [][]byte{tinyLlama(), tinyGPT()} {
		want := openBytes(t, b, Options{Config: conf})
		cr := &countingReader{r: bytes.NewReader(b)}
		m, err := Open(cr, int64(len(b)), Options{Config: conf, ReadEach: true})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		atOpen := cr.bytes
		for pos := range 4 {
			l1, err := want.Forward(pos, pos)
			if err != nil {
				t.Fatal(err)
			}
			w := append([]float32(nil), l1...)
			l2, err := m.Forward(pos, pos)
			if err != nil {
				t.Fatal(err)
			}
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(l2[i]) {
					t.Fatalf("%s position %d logit %d: %v read at Open, %v read each", m.Config().Arch, pos, i, w[i], l2[i])
				}
			}
		}
		mem := m.Memory()
		if mem.Weights != want.Memory().Weights || mem.Buffers >= want.Memory().Buffers || mem.Decoded == 0 {
			t.Errorf("%s: memory %+v, reading all at Open %+v", m.Config().Arch, mem, want.Memory())
		}
		if read := cr.bytes - atOpen; read < 4*mem.Weights/2 || read > 4*(mem.Weights+mem.Buffers) { // a tied classifier reads the embedding again
			t.Errorf("%s: %d bytes read for 4 tokens of %d bytes of weights", m.Config().Arch, read, mem.Weights)
		}
	}
	lossy := append(codec.LossyMagic[:], make([]byte, 64)...)
	if _, err := Open(bytes.NewReader(lossy), int64(len(lossy)), Options{}); !errors.Is(err, codec.ErrLossy) {
		t.Errorf("a lossy archive: %v", err)
	}
}
