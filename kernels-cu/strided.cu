// Strided copies for tensor views (prelude/src/tensor/gpu_strided.rs launches these).
//
// A copy moves bytes, not values, so each kernel is instantiated per element SIZE (1, 2, 4
// and 8 bytes cover every dtype: bool/u8, f16/bf16, f32/i32, f64/i64); the Rust side picks
// the instance from the dtype's size and refuses any other size with an error.
//
//   strided_copy_N:  out[i] = in[offset + sum(coord_i[d] * st.a[d])]        (view -> dense)
//   strided_write_N: out[offset + sum(coord_i[d] * st.a[d])] = in[i]        (dense -> view)
//   gather_N:        out[i] = in[offset + sum_{d != dim} coord_i[d] * st.a[d]
//                                + idx[sum(coord_i[d] * st.b[d])] * st.a[dim]]
// where coord_i is the row-major coordinate of i over st.dims. gather_N serves index_select
// (st.b is 1 along dim, 0 elsewhere) and gather (st.b are the index tensor's strides); the
// indices are checked on the host before the launch.

#define GPULAB_STRIDED_MAX_DIMS 8

// Passed by value; mirrors `strided_arg` in prelude/src/tensor/gpu_strided.rs.
struct StridedLayout {
    int ndim;
    long long dims[GPULAB_STRIDED_MAX_DIMS];
    long long a[GPULAB_STRIDED_MAX_DIMS];
    long long b[GPULAB_STRIDED_MAX_DIMS];
};

#define GRID_STRIDE(i, n) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)

__device__ __forceinline__ long long strided_offset(long long i, const StridedLayout& st)
{
    long long at = 0;
    for (int d = st.ndim - 1; d >= 0; --d) {
        long long c = i % st.dims[d];
        i /= st.dims[d];
        at += c * st.a[d];
    }
    return at;
}

template <typename T>
__device__ void strided_copy_impl(const T* __restrict__ in, long long offset, T* __restrict__ out,
                                  long long n, const StridedLayout& st)
{
    GRID_STRIDE(i, n) { out[i] = in[offset + strided_offset(i, st)]; }
}

template <typename T>
__device__ void strided_write_impl(const T* __restrict__ in, T* __restrict__ out, long long offset,
                                   long long n, const StridedLayout& st)
{
    GRID_STRIDE(i, n) { out[offset + strided_offset(i, st)] = in[i]; }
}

template <typename T>
__device__ void gather_impl(const T* __restrict__ in, long long offset,
                            const long long* __restrict__ idx, T* __restrict__ out, long long n,
                            int dim, const StridedLayout& st)
{
    GRID_STRIDE(i, n) {
        long long rest = i, src = offset, at = 0;
        for (int d = st.ndim - 1; d >= 0; --d) {
            long long c = rest % st.dims[d];
            rest /= st.dims[d];
            if (d != dim) src += c * st.a[d];
            at += c * st.b[d];
        }
        out[i] = in[src + idx[at] * st.a[dim]];
    }
}

#define GPULAB_STRIDED_INSTANCES(N, T)                                                          \
    extern "C" __global__ void strided_copy_##N(const T* in, long long offset, T* out,         \
                                                long long n, StridedLayout st)                  \
    {                                                                                           \
        strided_copy_impl<T>(in, offset, out, n, st);                                           \
    }                                                                                           \
    extern "C" __global__ void strided_write_##N(const T* in, T* out, long long offset,        \
                                                 long long n, StridedLayout st)                 \
    {                                                                                           \
        strided_write_impl<T>(in, out, offset, n, st);                                          \
    }                                                                                           \
    extern "C" __global__ void gather_##N(const T* in, long long offset, const long long* idx, \
                                          T* out, long long n, int dim, StridedLayout st)       \
    {                                                                                           \
        gather_impl<T>(in, offset, idx, out, n, dim, st);                                       \
    }

GPULAB_STRIDED_INSTANCES(1, unsigned char)
GPULAB_STRIDED_INSTANCES(2, unsigned short)
GPULAB_STRIDED_INSTANCES(4, unsigned int)
GPULAB_STRIDED_INSTANCES(8, unsigned long long)
