// shim.h: builds decode.cu as plain C++ for the host, so the kernels run
// without a GPU (tests only). A launch is a loop over the grid and the
// block, one "thread" after another: the kernels use neither shared
// memory nor barriers, so the serial order computes what the device does.
#pragma once

struct ShimDim {
	unsigned x, y, z;
};
static ShimDim shim_block_idx, shim_block_dim, shim_thread_idx;

#define KERNEL extern "C"
#define DEVICE static inline
#define THREAD_X ((unsigned long long)shim_block_idx.x * shim_block_dim.x + shim_thread_idx.x)
#define BLOCK_Y (shim_block_idx.y)
#define ATOMIC_ADD(p, v) (*(p) += (v))
#define STORE32(p, v)                        \
	do {                                     \
		unsigned int w_ = (v);               \
		__builtin_memcpy((p), &w_, 4);       \
	} while (0)
