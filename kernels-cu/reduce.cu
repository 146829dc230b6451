// Reductions behind gpulab's Tensor::sum / mean / max / min on CUDA devices.
//
// op codes (shared with prelude/src/tensor/op.rs): 0 sum, 1 max, 2 min.
// A block reduces with warp shuffles, then one warp combines the per-warp results, so a
// block needs 32 floats of shared memory whatever its size (up to 1024 threads).

__device__ __forceinline__ float reduce_identity(int op)
{
    // Bit patterns of -inf and +inf: NVRTC has no <cmath>, so no INFINITY macro.
    return op == 0 ? 0.0f : __int_as_float(op == 1 ? 0xff800000 : 0x7f800000);
}

__device__ __forceinline__ float reduce_combine(int op, float a, float b)
{
    // fmaxf/fminf drop NaNs; torch propagates them, and so do we.
    if (op == 0) return a + b;
    if (a != a || b != b) return a + b;
    return op == 1 ? fmaxf(a, b) : fminf(a, b);
}

__device__ __forceinline__ float warp_reduce(int op, float v)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        v = reduce_combine(op, v, __shfl_down_sync(0xffffffffu, v, offset));
    }
    return v;
}

// The block's result, valid in thread 0. Ends with a barrier so the caller may call again.
__device__ float block_reduce(int op, float v)
{
    __shared__ float per_warp[32];
    int lane = threadIdx.x & 31;
    int warp = threadIdx.x >> 5;
    v = warp_reduce(op, v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    int warps = (blockDim.x + 31) >> 5;
    v = threadIdx.x < warps ? per_warp[threadIdx.x] : reduce_identity(op);
    if (warp == 0) v = warp_reduce(op, v);
    __syncthreads();
    return v;
}

// One partial result per block over all n inputs: out[blockIdx.x]. A whole-tensor reduction
// runs this twice, the second time with one block over the partials.
extern "C" __global__ void reduce_partial(int op, const float* __restrict__ in,
                                          float* __restrict__ out, long long n)
{
    float acc = reduce_identity(op);
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        acc = reduce_combine(op, acc, in[i]);
    }
    acc = block_reduce(op, acc);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}

// Reduces each contiguous row of `len` elements (a reduction over the last dimension):
// one block per row, reading the row coalesced.
extern "C" __global__ void reduce_rows(int op, const float* __restrict__ in,
                                       float* __restrict__ out, long long rows, long long len)
{
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const float* row = in + r * len;
        float acc = reduce_identity(op);
        for (long long i = threadIdx.x; i < len; i += blockDim.x) {
            acc = reduce_combine(op, acc, row[i]);
        }
        acc = block_reduce(op, acc);
        if (threadIdx.x == 0) out[r] = acc;
    }
}

// Reduces over a middle dimension of a tensor seen as [outer, len, inner]: one thread per
// output element; neighbouring threads read neighbouring addresses.
extern "C" __global__ void reduce_strided(int op, const float* __restrict__ in,
                                          float* __restrict__ out, long long outer,
                                          long long len, long long inner)
{
    long long total = outer * inner;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)blockDim.x * gridDim.x) {
        long long o = t / inner, j = t % inner;
        const float* p = in + o * len * inner + j;
        float acc = reduce_identity(op);
        for (long long k = 0; k < len; ++k) {
            acc = reduce_combine(op, acc, p[k * inner]);
        }
        out[t] = acc;
    }
}

// The first pass of a long reduction over few rows: block b reduces chunk (b % chunks) of row
// (b / chunks) into out[b], so a (1, 2^28) sum uses every SM instead of one block. The
// second pass reduces the [rows, chunks] partials with reduce_rows.
extern "C" __global__ void reduce_rows_split(int op, const float* __restrict__ in,
                                             float* __restrict__ out, long long rows,
                                             long long len, long long chunk, long long chunks)
{
    for (long long b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
        long long r = b / chunks, c = b % chunks;
        const float* row = in + r * len;
        long long end = (c + 1) * chunk < len ? (c + 1) * chunk : len;
        float acc = reduce_identity(op);
        for (long long i = c * chunk + threadIdx.x; i < end; i += blockDim.x) {
            acc = reduce_combine(op, acc, row[i]);
        }
        acc = block_reduce(op, acc);
        if (threadIdx.x == 0) out[b] = acc;
    }
}

// The first pass of a long reduction over a middle dimension with few outputs: thread t
// reduces chunk c of column (o, j) into out[(o * chunks + c) * inner + j], i.e. partials of
// shape [outer, chunks, inner], which reduce_strided then finishes.
extern "C" __global__ void reduce_strided_split(int op, const float* __restrict__ in,
                                                float* __restrict__ out, long long outer,
                                                long long len, long long inner,
                                                long long chunk, long long chunks)
{
    long long total = outer * chunks * inner;
    for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (long long)blockDim.x * gridDim.x) {
        long long j = t % inner, c = (t / inner) % chunks, o = t / (inner * chunks);
        const float* p = in + o * len * inner + j;
        long long end = (c + 1) * chunk < len ? (c + 1) * chunk : len;
        float acc = reduce_identity(op);
        for (long long k = c * chunk; k < end; ++k) {
            acc = reduce_combine(op, acc, p[k * inner]);
        }
        out[t] = acc;
    }
}
