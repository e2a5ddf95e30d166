package codec

import "bytes"

// Duplicate blocks. Checkpoints often hold the same bytes twice: ONNX
// exports repeat initializers across subgraphs (Silero VAD keeps its
// weights once per sample rate), multi-file models repeat headers. The
// writer, which sees the blocks in archive order, stores a block whose
// original bytes equal those of an earlier block as a copy of it (kind 4,
// no payload). The decision depends only on the bytes, so the archive is
// the same at any thread count.

// dedupMin: shorter blocks are not worth an index entry's lookup.
const dedupMin = 256

type dedupKey struct {
	crc uint32
	n   int64
}

type dedupLoc struct {
	file  int
	block int   // index in its file
	off   int64 // offset in the original file
}

type deduper struct {
	seen map[dedupKey][]dedupLoc
	buf  []byte
}

// task replaces the blocks of t that repeat earlier ones by copies and
// drops their payloads from t.out; first is the index of t's first block
// in its file. It reads earlier blocks back from the inputs to compare
// them byte for byte (CRC-32C and length only find candidates).
func (d *deduper) task(t *encTask, inputs []Input, first int) error {
	if d.seen == nil {
		d.seen = map[dedupKey][]dedupLoc{}
	}
	base := t.plans[0].off
	var nb *[]byte // the new payloads, made only once a block is dropped
	var out []byte
	pos := 0 // payload offset of block k in t.out
	for k := range t.info {
		b := &t.info[k]
		p := t.plans[k]
		payload := (*t.out)[pos : pos+int(b.compLen)]
		pos += int(b.compLen)
		dup := false
		if p.length >= dedupMin && b.kind != kindDup {
			in := (*t.in)[p.off-base : p.off-base+p.length]
			key := dedupKey{b.crc, p.length}
			for _, l := range d.seen[key] {
				if cap(d.buf) < int(p.length) {
					d.buf = make([]byte, p.length)
				}
				src := d.buf[:p.length]
				if err := readFull(inputs[l.file].R, src, l.off); err != nil {
					return err
				}
				if bytes.Equal(src, in) {
					*b = blockInfo{kind: kindDup, origLen: b.origLen, crc: b.crc, ref: l.file, refOff: int64(l.block)}
					dup = true
					break
				}
			}
			if !dup {
				d.seen[key] = append(d.seen[key], dedupLoc{t.file, first + k, p.off})
			}
		}
		switch {
		case dup && nb == nil:
			nb = getBuf(len(*t.out))
			out = append((*nb)[:0], (*t.out)[:pos-len(payload)]...)
		case !dup && nb != nil:
			out = append(out, payload...)
		}
	}
	if nb != nil {
		*nb = out
		putBuf(t.out)
		t.out = nb
	}
	return nil
}
