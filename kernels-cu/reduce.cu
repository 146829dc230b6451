// Reductions behind gpulab's Tensor::sum / mean / max / min / argmax / argmin on CUDA
// devices, written once as templates over the input type T and instantiated per dtype
// (`reduce_rows_bf16`, ...). Every kernel accumulates, and writes, T's compute type
// (`Ty<T>::acc`: float for f32/f16/bf16, double for f64, long long for integers and bool),
// so partials never lose precision and a second pass reads them through the f32, f64 or i64
// instantiation; the host casts the result to the output dtype when it differs (f16 max,
// i32 min; integer sums stay int64, as in torch).
//
// op codes (shared with prelude/src/tensor/op.rs): 0 sum, 1 max, 2 min, 3 prod; the host
// checks them before launching, so the traps below are unreachable. scan_strided runs sum and
// prod as inclusive scans (cumsum, cumprod).
// A block reduces with warp shuffles, then one warp combines the per-warp results, so a
// block needs 32 accumulators of shared memory whatever its size (up to 1024 threads).

#include "gpulab_dtypes.cuh"

__device__ __forceinline__ float reduce_identity(int op, float)
{
    // Bit patterns of -inf and +inf: NVRTC has no <cmath>, so no INFINITY macro.
    return op == 0 ? 0.0f : op == 3 ? 1.0f : __int_as_float(op == 1 ? 0xff800000 : 0x7f800000);
}
__device__ __forceinline__ double reduce_identity(int op, double)
{
    return op == 0   ? 0.0
           : op == 3 ? 1.0
                     : __longlong_as_double(op == 1 ? 0xfff0000000000000LL : 0x7ff0000000000000LL);
}
__device__ __forceinline__ long long reduce_identity(int op, long long)
{
    return op == 0   ? 0
           : op == 3 ? 1
           : op == 1 ? (-9223372036854775807LL - 1)
                     : 9223372036854775807LL;
}

// fmaxf/fminf drop NaNs; torch propagates them, and so do we.
template <class A> __device__ __forceinline__ A reduce_combine(int op, A a, A b)
{
    switch (op) {
    case 0: return a + b;
    case 1:
        if (a != a || b != b) return a + b;
        return a > b ? a : b;
    case 2:
        if (a != a || b != b) return a + b;
        return a < b ? a : b;
    case 3: return a * b;
    default: __trap();
    }
    return a;
}
// Integer sums and products wrap (through unsigned: signed overflow is undefined), as the
// CPU's.
template <> __device__ __forceinline__ long long reduce_combine(int op, long long a, long long b)
{
    switch (op) {
    case 0: return (long long)((unsigned long long)a + (unsigned long long)b);
    case 1: return a > b ? a : b;
    case 2: return a < b ? a : b;
    case 3: return (long long)((unsigned long long)a * (unsigned long long)b);
    default: __trap();
    }
    return a;
}

template <class A> __device__ __forceinline__ A warp_reduce(int op, A v)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = reduce_combine(op, v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    return v;
}

// The block's result, valid in thread 0. Ends with a barrier so the caller may call again.
template <class A> __device__ A block_reduce(int op, A v)
{
    __shared__ A per_warp[32];
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    v = warp_reduce(op, v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < warps ? per_warp[threadIdx.x] : reduce_identity(op, A());
    if (warp == 0) v = warp_reduce(op, v);
    __syncthreads();
    return v;
}

// One partial result per block over all n inputs: out[blockIdx.x]. A whole-tensor reduction
// runs this twice, the second time with one block over the partials.
template <class T>
__device__ void reduce_partial(int op, const T* __restrict__ in,
                                          typename Ty<T>::acc* __restrict__ out, long long n)
{
    typedef typename Ty<T>::acc A;
    A acc = reduce_identity(op, A());
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        acc = reduce_combine(op, acc, Ty<T>::load(in[i]));
    }
    acc = block_reduce(op, acc);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// Reduces each contiguous row of `len` elements (a reduction over the last dimension):
// one block per row, reading the row coalesced.
template <class T>
__device__ void reduce_rows(int op, const T* __restrict__ in,
                                       typename Ty<T>::acc* __restrict__ out, long long rows, long long len)
{
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = in + r * len;
        typedef typename Ty<T>::acc A;
        A acc = reduce_identity(op, A());
        for (long long i = threadIdx.x; i < len; i += blockDim.x) {
            acc = reduce_combine(op, acc, Ty<T>::load(row[i]));
        }
        acc = block_reduce(op, acc);
        if (threadIdx.x == 0) out[r] = acc;
    }
}

// Reduces over a middle dimension of a tensor seen as [outer, len, inner]: one thread per
// output element; neighbouring threads read neighbouring addresses.
template <class T>
__device__ void reduce_strided(int op, const T* __restrict__ in,
                                          typename Ty<T>::acc* __restrict__ out, long long outer,
                                          long long len, long long inner)
{
    long long total = outer * inner;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)blockDim.x * gridDim.x) {
        long long o = t / inner, j = t % inner;
        const T* p = in + o * len * inner + j;
        typedef typename Ty<T>::acc A;
        A acc = reduce_identity(op, A());
        for (long long k = 0; k < len; ++k) {
            acc = reduce_combine(op, acc, Ty<T>::load(p[k * inner]));
        }
        out[t] = acc;
    }
}

// The first pass of a long reduction over few rows: block b reduces chunk (b % chunks) of row
// (b / chunks) into out[b], so a (1, 2^28) sum uses every SM instead of one block. The
// second pass reduces the [rows, chunks] partials with reduce_rows.
template <class T>
__device__ void reduce_rows_split(int op, const T* __restrict__ in,
                                             typename Ty<T>::acc* __restrict__ out, long long rows,
                                             long long len, long long chunk, long long chunks)
{
    for (long long b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
        long long r = b / chunks, c = b % chunks;
        const T* row = in + r * len;
        long long end = (c + 1) * chunk < len ? (c + 1) * chunk : len;
        typedef typename Ty<T>::acc A;
        A acc = reduce_identity(op, A());
        for (long long i = c * chunk + threadIdx.x; i < end; i += blockDim.x) {
            acc = reduce_combine(op, acc, Ty<T>::load(row[i]));
        }
        acc = block_reduce(op, acc);
        if (threadIdx.x == 0) out[b] = acc;
    }
}

// The first pass of a long reduction over a middle dimension with few outputs: thread t
// reduces chunk c of column (o, j) into out[(o * chunks + c) * inner + j], i.e. partials of
// shape [outer, chunks, inner], which reduce_strided then finishes.
template <class T>
__device__ void reduce_strided_split(int op, const T* __restrict__ in,
                                                typename Ty<T>::acc* __restrict__ out, long long outer,
                                                long long len, long long inner,
                                                long long chunk, long long chunks)
{
    long long total = outer * chunks * inner;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)blockDim.x * gridDim.x) {
        long long j = t % inner, c = (t / inner) % chunks, o = t / (inner * chunks);
        const T* p = in + o * len * inner + j;
        long long end = (c + 1) * chunk < len ? (c + 1) * chunk : len;
        typedef typename Ty<T>::acc A;
        A acc = reduce_identity(op, A());
        for (long long k = c * chunk; k < end; ++k) {
            acc = reduce_combine(op, acc, Ty<T>::load(p[k * inner]));
        }
        out[t] = acc;
    }
}

// Inclusive scan (op 0: cumsum, 3: cumprod) along the middle axis of [outer, len, inner]: one
// thread per line, in order, so each output is the CPU's sequence of combines (in the
// accumulator type, which the host then casts to the result dtype). Neighbouring threads
// read neighbouring addresses when inner > 1.
template <class T>
__device__ void scan_strided(int op, const T* __restrict__ in, typename Ty<T>::acc* __restrict__ out,
                             long long outer, long long len, long long inner)
{
    typedef typename Ty<T>::acc A;
    long long total = outer * inner;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)blockDim.x * gridDim.x) {
        long long o = t / inner, j = t % inner;
        const T* p = in + o * len * inner + j;
        A* q = out + o * len * inner + j;
        A acc = reduce_identity(op, A());
        for (long long k = 0; k < len; ++k) {
            acc = reduce_combine(op, acc, Ty<T>::load(p[k * inner]));
            q[k * inner] = acc;
        }
    }
}

// argmax (is_max) or argmin as int64 over the middle axis of [outer, len, inner], as the
// CPU's arg_reduce: the first NaN wins (NaN counts as both the largest and the smallest,
// as in torch), otherwise the first index of the extreme value.
template <class A>
__device__ __forceinline__ bool arg_better(int is_max, A va, long long ia, A vb, long long ib)
{
    bool na = va != va, nb = vb != vb;
    if (na || nb) return na && (!nb || ia < ib);
    if (va == vb) return ia < ib;
    return is_max ? va > vb : va < vb;
}

// One thread per output (inner > 1, or many short rows).
template <class T>
__device__ void arg_strided(int is_max, const T* __restrict__ in, long long* __restrict__ out,
                            long long outer, long long len, long long inner)
{
    typedef typename Ty<T>::acc A;
    long long total = outer * inner;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)blockDim.x * gridDim.x) {
        long long o = t / inner, j = t % inner;
        const T* p = in + o * len * inner + j;
        long long best = 0;
        A bv = len > 0 ? Ty<T>::load(p[0]) : A();
        for (long long k = 1; k < len && bv == bv; ++k) {
            A v = Ty<T>::load(p[k * inner]);
            if (arg_better(is_max, v, k, bv, best)) {
                bv = v;
                best = k;
            }
        }
        out[t] = best;
    }
}

// One block per contiguous row (inner == 1): each thread keeps the best of its strided
// elements, then a shared-memory tree combines (value, index) pairs. blockDim.x must be 256.
template <class T>
__device__ void arg_rows(int is_max, const T* __restrict__ in, long long* __restrict__ out,
                         long long rows, long long len)
{
    typedef typename Ty<T>::acc A;
    __shared__ A sv[256];
    __shared__ long long si[256];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* row = in + r * len;
        long long best = -1;
        A bv = A();
        for (long long i = threadIdx.x; i < len; i += blockDim.x) {
            A v = Ty<T>::load(row[i]);
            if (best < 0 || arg_better(is_max, v, i, bv, best)) {
                bv = v;
                best = i;
            }
        }
        sv[threadIdx.x] = bv;
        si[threadIdx.x] = best;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) {
                long long ib = si[threadIdx.x + s];
                // -1: a thread that saw no element.
                if (ib >= 0 && (si[threadIdx.x] < 0 ||
                                arg_better(is_max, sv[threadIdx.x + s], ib, sv[threadIdx.x],
                                           si[threadIdx.x]))) {
                    sv[threadIdx.x] = sv[threadIdx.x + s];
                    si[threadIdx.x] = ib;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) out[r] = si[0] < 0 ? 0 : si[0];
        __syncthreads();
    }
}

#define GPULAB_REDUCE(T, S)                                                                  \
    extern "C" __global__ void reduce_partial_##S(int op, const T* in, Ty<T>::acc* out,      \
                                                  long long n)                               \
    {                                                                                        \
        reduce_partial<T>(op, in, out, n);                                                   \
    }                                                                                        \
    extern "C" __global__ void reduce_rows_##S(int op, const T* in, Ty<T>::acc* out,         \
                                               long long rows, long long len)                \
    {                                                                                        \
        reduce_rows<T>(op, in, out, rows, len);                                              \
    }                                                                                        \
    extern "C" __global__ void reduce_strided_##S(int op, const T* in, Ty<T>::acc* out,      \
                                                  long long outer, long long len,            \
                                                  long long inner)                           \
    {                                                                                        \
        reduce_strided<T>(op, in, out, outer, len, inner);                                   \
    }                                                                                        \
    extern "C" __global__ void reduce_rows_split_##S(int op, const T* in, Ty<T>::acc* out,   \
                                                     long long rows, long long len,          \
                                                     long long chunk, long long chunks)      \
    {                                                                                        \
        reduce_rows_split<T>(op, in, out, rows, len, chunk, chunks);                         \
    }                                                                                        \
    extern "C" __global__ void reduce_strided_split_##S(                                     \
        int op, const T* in, Ty<T>::acc* out, long long outer, long long len,                \
        long long inner, long long chunk, long long chunks)                                  \
    {                                                                                        \
        reduce_strided_split<T>(op, in, out, outer, len, inner, chunk, chunks);              \
    }                                                                                        \
    extern "C" __global__ void arg_strided_##S(int is_max, const T* in, long long* out,      \
                                               long long outer, long long len,               \
                                               long long inner)                              \
    {                                                                                        \
        arg_strided<T>(is_max, in, out, outer, len, inner);                                  \
    }                                                                                        \
    extern "C" __global__ void arg_rows_##S(int is_max, const T* in, long long* out,         \
                                            long long rows, long long len)                   \
    {                                                                                        \
        arg_rows<T>(is_max, in, out, rows, len);                                             \
    }                                                                                        \
    extern "C" __global__ void scan_strided_##S(int op, const T* in, Ty<T>::acc* out,        \
                                                long long outer, long long len,              \
                                                long long inner)                             \
    {                                                                                        \
        scan_strided<T>(op, in, out, outer, len, inner);                                     \
    }

GPULAB_FOR_EACH_DTYPE(GPULAB_REDUCE)
