// Package dtype names the element types that checkpoints store and says how
// floating-point types split into sign, exponent and mantissa fields.
//
// It is the one vocabulary shared by the checkpoint loaders and the codec, so
// neither has to import the other. Names follow the safetensors spec.
package dtype

import "strings"

// DType is an element type. The zero value is Invalid.
type DType uint8

// Element types. Sub-byte types (F4, F6_*) are known by name so loaders can
// size their tensors, but the codec treats them as opaque bytes.
const (
	Invalid DType = iota
	Bool
	U8
	I8
	U16
	I16
	U32
	I32
	U64
	I64
	F16
	BF16
	F32
	F64
	F8E4M3
	F8E5M2
	F8E8M0
	C64
	F4
	F6E2M3
	F6E3M2
	numDTypes
)

var names = [numDTypes]string{
	Invalid: "INVALID",
	Bool:    "BOOL",
	U8:      "U8",
	I8:      "I8",
	U16:     "U16",
	I16:     "I16",
	U32:     "U32",
	I32:     "I32",
	U64:     "U64",
	I64:     "I64",
	F16:     "F16",
	BF16:    "BF16",
	F32:     "F32",
	F64:     "F64",
	F8E4M3:  "F8_E4M3",
	F8E5M2:  "F8_E5M2",
	F8E8M0:  "F8_E8M0",
	C64:     "C64",
	F4:      "F4",
	F6E2M3:  "F6_E2M3",
	F6E3M2:  "F6_E3M2",
}

// bits per element
var bitSizes = [numDTypes]int{
	Bool: 8, U8: 8, I8: 8, U16: 16, I16: 16, U32: 32, I32: 32, U64: 64, I64: 64,
	F16: 16, BF16: 16, F32: 32, F64: 64, F8E4M3: 8, F8E5M2: 8, F8E8M0: 8, C64: 64,
	F4: 4, F6E2M3: 6, F6E3M2: 6,
}

// String returns the safetensors name of d ("BF16", "F8_E4M3", ...).
func (d DType) String() string {
	if d < numDTypes {
		return names[d]
	}
	return "INVALID"
}

// Parse returns the DType with the given safetensors name (case-insensitive).
func Parse(s string) (DType, bool) {
	u := strings.ToUpper(s)
	for i := DType(1); i < numDTypes; i++ {
		if names[i] == u {
			return i, true
		}
	}
	return Invalid, false
}

// Bits returns the size of one element in bits (0 for Invalid).
func (d DType) Bits() int {
	if d < numDTypes {
		return bitSizes[d]
	}
	return 0
}

// Size returns the size of one element in bytes, or 0 when an element is not
// a whole number of bytes (F4, F6_*) or d is Invalid.
func (d DType) Size() int {
	b := d.Bits()
	if b == 0 || b%8 != 0 {
		return 0
	}
	return b / 8
}

// ByteLen returns the number of bytes that n elements of d occupy, rounding
// sub-byte types up to whole bytes. ok is false when the result overflows
// int64 or d is Invalid.
func (d DType) ByteLen(n int64) (bytes int64, ok bool) {
	b := int64(d.Bits())
	if b == 0 || n < 0 {
		return 0, false
	}
	const maxInt64 = 1<<63 - 1
	if n > (maxInt64-7)/b {
		return 0, false
	}
	return (n*b + 7) / 8, true
}

// Layout describes the bit fields of a floating-point type.
type Layout struct {
	Exp  int // exponent bits
	Mant int // mantissa bits (explicit fraction bits)
	Sign int // 1, or 0 for unsigned formats such as F8_E8M0
}

// Width is the total number of bits.
func (l Layout) Width() int { return l.Sign + l.Exp + l.Mant }

// FloatLayout returns the field layout of a scalar floating-point type whose
// elements are whole bytes. C64 and sub-byte floats report ok=false.
func (d DType) FloatLayout() (l Layout, ok bool) {
	switch d {
	case F16:
		return Layout{Exp: 5, Mant: 10, Sign: 1}, true
	case BF16:
		return Layout{Exp: 8, Mant: 7, Sign: 1}, true
	case F32:
		return Layout{Exp: 8, Mant: 23, Sign: 1}, true
	case F64:
		return Layout{Exp: 11, Mant: 52, Sign: 1}, true
	case F8E4M3:
		return Layout{Exp: 4, Mant: 3, Sign: 1}, true
	case F8E5M2:
		return Layout{Exp: 5, Mant: 2, Sign: 1}, true
	case F8E8M0:
		return Layout{Exp: 8, Mant: 0, Sign: 0}, true
	}
	return Layout{}, false
}

// IsFloat reports whether d is a floating-point type (including C64 and the
// sub-byte floats).
func (d DType) IsFloat() bool {
	switch d {
	case F16, BF16, F32, F64, F8E4M3, F8E5M2, F8E8M0, C64, F4, F6E2M3, F6E3M2:
		return true
	}
	return false
}
