//go:build !noasm

package codec

import (
	"encoding/binary"
	"unsafe"
)

// swTabs is where fast8Go reads the tables: their start address.
type swTabs = unsafe.Pointer

func swTabsOf(tabs []byte) swTabs { return unsafe.Pointer(unsafe.SliceData(tabs)) }

// swLookup is the table entry of the window w with c bits read, for the
// table cinfo entry inf (offset in tabs << 6 | 64 - tl): see fast8Go on
// why it needs no bounds check. Under noasm the same lookup is checked
// (ref_switch_lookup_noasm.go).
func swLookup(tb swTabs, inf uint32, w uint64, c uint) uint16 {
	x := (w << (c & 63)) >> (inf & 63)
	return binary.LittleEndian.Uint16((*[2]byte)(unsafe.Add(tb, uintptr(inf>>6)+2*uintptr(x)))[:])
}
