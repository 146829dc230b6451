// Element-wise kernels behind gpulab's Tensor arithmetic on CUDA devices.
//
// The op codes are shared with the Rust side (prelude/src/tensor/op.rs); a switch on a
// kernel argument costs nothing measurable because every thread takes the same branch, and
// it keeps one kernel per access pattern instead of one per operation.
//
// Every kernel loops with a grid stride, so any grid size covers any n.

#define GPULAB_MAX_DIMS 6

// Shape of the output and, per input, the stride to step in each output dimension
// (0 where that input is broadcast). Passed by value; mirrors tensor::cuda_ops::Strides.
struct Strides {
    int ndim;
    long long dims[GPULAB_MAX_DIMS];
    long long sa[GPULAB_MAX_DIMS];
    long long sb[GPULAB_MAX_DIMS];
};

__device__ __forceinline__ float binary_apply(int op, float a, float b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return fmaxf(a, b);
    case 5: return fminf(a, b);
    default: return powf(a, b);
    }
}

__device__ __forceinline__ float unary_apply(int op, float x)
{
    switch (op) {
    case 0: return -x;
    case 1: return fabsf(x);
    case 2: return expf(x);
    case 3: return sqrtf(x);
    case 4: return x > 0.0f ? x : 0.0f;
    case 5: return logf(x);
    case 6: return tanhf(x);
    default: return 1.0f / (1.0f + expf(-x));
    }
}

#define GRID_STRIDE(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)

extern "C" __global__ void binary_same(int op, const float* __restrict__ a,
                                       const float* __restrict__ b, float* __restrict__ out,
                                       long long n)
{
    GRID_STRIDE(i, n) { out[i] = binary_apply(op, a[i], b[i]); }
}

// out = a (op) s, or s (op) a when scalar_first is set (2 - x, 1 / x).
extern "C" __global__ void binary_scalar(int op, const float* __restrict__ a, float s,
                                         int scalar_first, float* __restrict__ out, long long n)
{
    GRID_STRIDE(i, n) { out[i] = scalar_first ? binary_apply(op, s, a[i]) : binary_apply(op, a[i], s); }
}

extern "C" __global__ void binary_bcast(int op, const float* __restrict__ a,
                                        const float* __restrict__ b, float* __restrict__ out,
                                        long long n, Strides st)
{
    GRID_STRIDE(i, n) {
        long long rest = i, ia = 0, ib = 0;
        for (int d = st.ndim - 1; d >= 0; --d) {
            long long c = rest % st.dims[d];
            rest /= st.dims[d];
            ia += c * st.sa[d];
            ib += c * st.sb[d];
        }
        out[i] = binary_apply(op, a[ia], b[ib]);
    }
}

extern "C" __global__ void unary(int op, const float* __restrict__ a, float* __restrict__ out,
                                 long long n)
{
    GRID_STRIDE(i, n) { out[i] = unary_apply(op, a[i]); }
}

extern "C" __global__ void fill(float* __restrict__ out, float v, long long n)
{
    GRID_STRIDE(i, n) { out[i] = v; }
}

// Gathers a permuted copy: output element i (row-major over st.dims) comes from the input
// offset sum(coord[d] * st.sa[d]). Used for transpose; st.sb is unused.
extern "C" __global__ void permute(const float* __restrict__ in, float* __restrict__ out,
                                   long long n, Strides st)
{
    GRID_STRIDE(i, n) {
        long long rest = i, src = 0;
        for (int d = st.ndim - 1; d >= 0; --d) {
            long long c = rest % st.dims[d];
            rest /= st.dims[d];
            src += c * st.sa[d];
        }
        out[i] = in[src];
    }
}
