// Backward bit windows of huff0-style streams, shared by
// huff/huffx_amd64.s and codec's ref_switch_amd64.s. Each package holds a
// copy (assembly includes headers from its own directory only);
// codec's TestBitwinHeaderCopies keeps the two the same. Stream i's window end pointer is at
// P+8*i(R15) and the bits consumed from its top at C+8*i(R15); the window
// W keeps a sentinel 1 in its lowest bit, so TZCNT gives the bits
// consumed. DI is scratch.

// BWRELOAD moves stream i's window down by the whole bytes W has
// consumed and loads the next one.
#define BWRELOAD(W, P, i) \
	TZCNTQ W, DI \
	MOVQ   DI, W \
	SHRQ   $3, W \
	SUBQ   W, (P+8*i)(R15) \
	MOVQ   (P+8*i)(R15), W \
	MOVQ   -8(W), W \
	ORQ    $1, W \
	ANDQ   $7, DI \
	SHLXQ  DI, W, W

// BWLOAD starts stream i from its pointer and consumed count (< 8).
#define BWLOAD(W, P, C, i) \
	MOVQ  (C+8*i)(R15), DI \
	MOVQ  (P+8*i)(R15), W \
	MOVQ  -8(W), W \
	ORQ   $1, W \
	SHLXQ DI, W, W

// BWSAVE stores stream i's consumed count.
#define BWSAVE(W, C, i) \
	TZCNTQ W, DI \
	MOVQ   DI, (C+8*i)(R15)
