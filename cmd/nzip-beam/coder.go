package main

import (
	"encoding/binary"
	"errors"
	"math"

	"neuralzip/dtype"
	"neuralzip/store"
)

// Binary coders of the elements that pass between the steps by the
// thousand (a gob encoder per element would send its types each time).

var errShort = errors.New("nzip-beam: element cut short")

type enc []byte

func (e *enc) uv(v uint64)     { *e = binary.AppendUvarint(*e, v) }
func (e *enc) iv(v int64)      { *e = binary.AppendVarint(*e, v) }
func (e *enc) raw(b []byte)    { e.uv(uint64(len(b))); *e = append(*e, b...) }
func (e *enc) str(s string)    { e.uv(uint64(len(s))); *e = append(*e, s...) }
func (e *enc) hash(h [32]byte) { *e = append(*e, h[:]...) }

func (e *enc) unit(u store.UnitInfo) {
	e.iv(int64(u.Model))
	e.iv(int64(u.File))
	e.iv(int64(u.Index))
	e.str(u.Src)
	e.iv(u.Off)
	e.iv(u.N)
	*e = append(*e, byte(u.DType))
	e.hash(u.Hash)
	if u.FP == nil {
		e.uv(0)
	} else {
		e.uv(uint64(len(u.FP)) + 1)
		for _, f := range u.FP {
			*e = binary.LittleEndian.AppendUint32(*e, math.Float32bits(f))
		}
	}
	e.uv(uint64(len(u.Casts)))
	for _, c := range u.Casts {
		e.hash(c)
	}
}

func (e *enc) newUnit(n store.NewUnit) {
	e.unit(n.Unit)
	*e = append(*e, n.Kind)
	e.hash(n.Base)
	e.hash(n.Pack)
	e.iv(n.Off)
	e.iv(n.Len)
	*e = binary.LittleEndian.AppendUint32(*e, n.CRC)
}

type dec struct {
	b   []byte
	err error
}

func (d *dec) uv() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) iv() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) fail() {
	if d.err == nil {
		d.err = errShort
	}
	d.b = nil
}

func (d *dec) take(n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) raw() []byte { return d.take(d.uv()) }
func (d *dec) str() string { return string(d.raw()) }
func (d *dec) byte1() byte {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *dec) hash() (h [32]byte) {
	copy(h[:], d.take(32))
	return h
}

func (d *dec) unit() (u store.UnitInfo) {
	u.Model, u.File, u.Index = int(d.iv()), int(d.iv()), int(d.iv())
	u.Src = d.str()
	u.Off, u.N = d.iv(), d.iv()
	u.DType = dtype.DType(d.byte1())
	u.Hash = d.hash()
	if n := d.uv(); n > 0 && n-1 <= uint64(len(d.b))/4 {
		if b := d.take((n - 1) * 4); b != nil {
			u.FP = make([]float32, n-1)
			for i := range u.FP {
				u.FP[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
		}
	} else if n > 0 {
		d.fail()
	}
	if n := d.uv(); n > 0 && n <= uint64(len(d.b))/32 {
		u.Casts = make([]store.Hash, n)
		for i := range u.Casts {
			u.Casts[i] = d.hash()
		}
	} else if n > 0 {
		d.fail()
	}
	return u
}

func (d *dec) newUnit() (n store.NewUnit) {
	n.Unit = d.unit()
	n.Kind = d.byte1()
	n.Base, n.Pack = d.hash(), d.hash()
	n.Off, n.Len = d.iv(), d.iv()
	if b := d.take(4); b != nil {
		n.CRC = binary.LittleEndian.Uint32(b)
	}
	return n
}

func (d *dec) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("nzip-beam: element has trailing bytes")
	}
	return d.err
}

func encUnit(u store.UnitInfo) []byte { var e enc; e.unit(u); return e }

func decUnit(b []byte) (store.UnitInfo, error) {
	d := dec{b: b}
	u := d.unit()
	return u, d.end()
}

func encPlan(p store.Plan) []byte {
	var e enc
	e.unit(p.Unit)
	e = append(e, p.Kind)
	e.hash(p.Base)
	if p.BaseAt != nil {
		e = append(e, 1)
		e.unit(*p.BaseAt)
	} else {
		e = append(e, 0)
	}
	return e
}

func decPlan(b []byte) (store.Plan, error) {
	d := dec{b: b}
	var p store.Plan
	p.Unit = d.unit()
	p.Kind = d.byte1()
	p.Base = d.hash()
	if d.byte1() == 1 {
		u := d.unit()
		p.BaseAt = &u
	}
	return p, d.end()
}

func encPack(p packEl) []byte {
	var e enc
	e.iv(int64(p.Model))
	e.uv(uint64(len(p.New)))
	for _, n := range p.New {
		e.newUnit(n)
	}
	return e
}

func decPack(b []byte) (packEl, error) {
	d := dec{b: b}
	var p packEl
	p.Model = int(d.iv())
	n := d.uv()
	for i := uint64(0); i < n && d.err == nil; i++ {
		p.New = append(p.New, d.newUnit())
	}
	return p, d.end()
}
