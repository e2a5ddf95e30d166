//go:build noasm

package codec

import "encoding/binary"

// swTabs is where fast8Go reads the tables: under noasm, the tables
// themselves, read with bounds checks, so that the pure-Go reference
// (tests and fuzzing with -tags noasm) catches an entry outside them,
// which the unchecked lookup of other builds would read silently.
type swTabs = []byte

func swTabsOf(tabs []byte) swTabs { return tabs }

// swLookup is the table entry of the window w with c bits read, for the
// table cinfo entry inf (offset in tabs << 6 | 64 - tl), bounds-checked.
func swLookup(tb swTabs, inf uint32, w uint64, c uint) uint16 {
	x := (w << (c & 63)) >> (inf & 63)
	i := int(inf>>6) + 2*int(x)
	return binary.LittleEndian.Uint16(tb[i : i+2])
}
