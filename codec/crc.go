package codec

import crc "neuralzip/codec/crc32c"

// crc32c is the CRC-32C (Castagnoli) of p, as crc32.Checksum(p, castagnoli)
// (package crc32c: VPCLMULQDQ folding on AVX-512 CPUs).
func crc32c(p []byte) uint32 { return crc.Checksum(p) }

// CRC32C returns the CRC-32C (Castagnoli) of p, the checksum the archive
// stores for every block (BlockInfo.CRC) and its index: the same value as
// crc32.Checksum(p, crc32.MakeTable(crc32.Castagnoli)), folded 256 bytes
// at a time with VPCLMULQDQ where the CPU has AVX-512 (twice as fast).
func CRC32C(p []byte) uint32 { return crc32c(p) }
