package codec

// crc32c is the CRC-32C (Castagnoli) of p, as crc32.Checksum(p, castagnoli).
func crc32c(p []byte) uint32 { return crc32cUpdate(0, p) }
