// fakecuda.cc: a stand-in libcuda.so.1 for tests on machines without a
// GPU. It implements the part of the CUDA driver API the cuda backend
// calls, with "device memory" in host memory and kernel launches running
// decode.cu built as C++ (shim.h), so the backend's real plumbing — purego
// bindings, argument arrays, grid shapes, copies, events — is exercised
// against the kernels' real code. Built by gpu/cuda_test.go:
//
//   g++ -O2 -shared -fPIC -fno-exceptions -fno-rtti -o libcuda.so.1 fakecuda.cc
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode.cu"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
enum { OK = 0, ERR_INVALID_VALUE = 1, ERR_OUT_OF_MEMORY = 2, ERR_NOT_INITIALIZED = 3, ERR_INVALID_IMAGE = 200, ERR_NOT_FOUND = 500 };

static int initialized;
static int contexts;
struct Event {
	double t;
};

static double now_ms() {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

extern "C" {

CUresult cuInit(unsigned flags) {
	if (flags != 0) return ERR_INVALID_VALUE;
	initialized = 1;
	return OK;
}
CUresult cuDriverGetVersion(int *v) {
	*v = 12040;
	return OK;
}
CUresult cuDeviceGetCount(int *n) {
	if (!initialized) return ERR_NOT_INITIALIZED;
	*n = 1;
	return OK;
}
CUresult cuDeviceGet(int *dev, int ordinal) {
	if (ordinal != 0) return ERR_INVALID_VALUE;
	*dev = 0;
	return OK;
}
CUresult cuDeviceGetName(char *name, int len, int dev) {
	const char *s = "NeuralZip fake CUDA device (kernels as host C++)";
	if (len < 1 || dev != 0) return ERR_INVALID_VALUE;
	strncpy(name, s, len - 1);
	name[len - 1] = 0;
	return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
	*bytes = (size_t)1 << 34;
	return dev == 0 ? OK : ERR_INVALID_VALUE;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
	// 75/76: compute capability major/minor
	*v = attr == 75 ? 8 : 0;
	return dev == 0 ? OK : ERR_INVALID_VALUE;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
	if (!initialized || dev != 0) return ERR_INVALID_VALUE;
	contexts++;
	*ctx = (void *)(size_t)0x1000;
	return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
	if (dev != 0 || contexts == 0) return ERR_INVALID_VALUE;
	contexts--;
	return OK;
}
CUresult cuCtxSetCurrent(void *ctx) { return OK; }
CUresult cuCtxSynchronize() { return OK; }

CUresult cuModuleLoadData(void **mod, const void *image) {
	// the backend must hand over the embedded PTX
	const char *s = (const char *)image;
	const char *entries[] = {".entry build_lut", ".entry huff_decode", ".entry merge", ".entry exp_hist", ".entry pair_count", ".entry pair_scan", ".entry pair_expand"};
	for (const char *e : entries)
		if (strstr(s, e) == 0) return ERR_INVALID_IMAGE;
	*mod = (void *)0x2000;
	return OK;
}
CUresult cuModuleUnload(void *mod) { return OK; }
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) {
	if (strcmp(name, "huff_decode") == 0) *f = (void *)1;
	else if (strcmp(name, "merge") == 0) *f = (void *)2;
	else if (strcmp(name, "exp_hist") == 0) *f = (void *)3;
	else if (strcmp(name, "pair_count") == 0) *f = (void *)4;
	else if (strcmp(name, "build_lut") == 0) *f = (void *)7;
	else if (strcmp(name, "pair_scan") == 0) *f = (void *)5;
	else if (strcmp(name, "pair_expand") == 0) *f = (void *)6;
	else return ERR_NOT_FOUND;
	return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	void *m = malloc(n ? n : 1);
	if (!m) return ERR_OUT_OF_MEMORY;
	memset(m, 0xa5, n); // device memory starts undefined
	*p = (CUdeviceptr)m;
	return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	free((void *)p);
	return OK;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	memcpy((void *)dst, src, n);
	return OK;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	memcpy(dst, (void *)src, n);
	return OK;
}
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
	memset((void *)dst, v, n);
	return OK;
}

CUresult cuEventCreate(void **ev, unsigned flags) {
	*ev = calloc(1, sizeof(Event));
	return OK;
}
CUresult cuEventDestroy_v2(void *ev) {
	free(ev);
	return OK;
}
CUresult cuEventRecord(void *ev, void *stream) {
	((Event *)ev)->t = now_ms();
	return OK;
}
CUresult cuEventSynchronize(void *ev) { return OK; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
	*ms = (float)(((Event *)b)->t - ((Event *)a)->t);
	return OK;
}

CUresult cuGetErrorString(CUresult e, const char **s) {
	*s = e == OK ? "no error" : "fake CUDA error";
	return OK;
}

#define ARG(T, i) (*(T *)params[i])

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shmem, void *stream, void **params, void **extra) {
	if (gx == 0 || gy == 0 || gz != 1 || bx == 0 || bx > 1024 || by != 1 || bz != 1 || gy > 65535 || extra != 0 || params == 0) return ERR_INVALID_VALUE;
	shim_block_dim.x = bx;
	for (unsigned y = 0; y < gy; y++)
		for (unsigned x = 0; x < gx; x++)
			for (unsigned t = 0; t < bx; t++) {
				shim_block_idx.x = x;
				shim_block_idx.y = y;
				shim_thread_idx.x = t;
				switch ((size_t)f) {
				case 1:
					huff_decode(ARG(const StreamJob *, 0), ARG(u64, 1), ARG(const u8 *, 2), ARG(const u16 *, 3), ARG(u8 *, 4), ARG(u32 *, 5));
					break;
				case 2:
					merge(ARG(const BlockJob *, 0), ARG(u64, 1), ARG(const u8 *, 2), ARG(u64, 3), ARG(const u8 *, 4), ARG(u8 *, 5));
					break;
				case 3:
					exp_hist(ARG(const BlockJob *, 0), ARG(u64, 1), ARG(const u8 *, 2), ARG(u32 *, 3));
					break;
				case 4:
					pair_count(ARG(const PairJob *, 0), ARG(const u32 *, 1), ARG(u64, 2), ARG(const u8 *, 3), ARG(u32 *, 4), ARG(u32 *, 5));
					break;
				case 5:
					pair_scan(ARG(const PairJob *, 0), ARG(u64, 1), ARG(const u8 *, 2), ARG(u64, 3), ARG(u8 *, 4), ARG(u32 *, 5), ARG(u32 *, 6));
					break;
				case 6:
					pair_expand(ARG(const PairJob *, 0), ARG(const u32 *, 1), ARG(u64, 2), ARG(const u8 *, 3), ARG(u64, 4), ARG(u8 *, 5), ARG(const u32 *, 6));
					break;
				case 7:
					build_lut(ARG(const u8 *, 0), ARG(u64, 1), ARG(u16 *, 2));
					break;
				default:
					return ERR_INVALID_VALUE;
				}
			}
	return OK;
}
}
