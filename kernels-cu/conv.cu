// Index gathers for convolution and pooling (prelude/src/tensor/gather.rs): im2col is a
// gather with a precomputed index per output element (-1 reads as zero: padding). A gather
// only copies, so there is one kernel per element size (`gather_b4` serves f32 and i32,
// `gather_b2` f16 and bf16). Its backward (col2im) is `scatter_add_f32` / `scatter_add_f64`,
// which adds each gradient to the element it was read from; halves are added in f32 by the
// caller. Atomic adds, because overlapping windows read one input element many times.

#define GATHER(S, T)                                                                        \
    extern "C" __global__ void gather_##S(const T* src, const int* idx, T* out, long long n) { \
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;          \
             i += (long long)gridDim.x * blockDim.x) {                                       \
            int j = idx[i];                                                                  \
            out[i] = j < 0 ? (T)0 : src[j];                                                  \
        }                                                                                    \
    }

GATHER(b1, unsigned char)
GATHER(b2, unsigned short)
GATHER(b4, unsigned int)
GATHER(b8, unsigned long long)

// `out` must be zeroed before the launch. atomicAdd on double needs sm_60, below every
// architecture NVRTC 12 and 13 target.
#define SCATTER_ADD(S, T)                                                                    \
    extern "C" __global__ void scatter_add_##S(const T* g, const int* idx, T* out, long long n) { \
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;            \
             i += (long long)gridDim.x * blockDim.x) {                                         \
            int j = idx[i];                                                                    \
            if (j >= 0) atomicAdd(&out[j], g[i]);                                              \
        }                                                                                      \
    }

SCATTER_ADD(f32, float)
SCATTER_ADD(f64, double)
