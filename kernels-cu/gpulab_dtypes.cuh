// gpulab's element types on the device, shared by elementwise.cu and reduce.cu (NVRTC gets
// this file as a named header, see prelude/src/cuda/nvrtc.rs; tests/test_kernels_cu.py
// passes kernels-cu/ as the include path).
//
// No cuda_fp16.h / cuda_bf16.h: NVRTC does not ship them (they come with the CUDA runtime
// headers, which the pinned NVRTC wheel lacks), so the two half types are 16-bit patterns
// converted with PTX `cvt` (f16) and integer rounding (bf16), bit-for-bit what the `half`
// crate does on the CPU.
//
// Each dtype has a `Ty<T>` with the type it computes in (`acc`: float for f32/f16/bf16,
// double for f64, long long for the integers and bool, as the CPU backend computes them),
// and the conversions the cast kernel needs. The kernel files instantiate every template
// once per dtype through GPULAB_FOR_EACH_DTYPE, with extern "C" names `<kernel>_<dtype>`
// (`binary_same_bf16`), the suffixes of `DType::kernel_suffix` in prelude/src/tensor/dtype.rs.

#pragma once

#define GPULAB_MAX_DIMS 6

struct f16_t {
    unsigned short x;
};
struct bf16_t {
    unsigned short x;
};
// bool is one byte holding 0 or 1, as Rust's bool (so host vectors upload unchanged).
struct bool_t {
    unsigned char x;
};

// Kinds decide how two dtypes convert: through double if either is a float (as the CPU's
// cast_vec does), through long long otherwise.
#define GPULAB_KIND_FLOAT 0
#define GPULAB_KIND_INT 1
#define GPULAB_KIND_BOOL 2

__device__ __forceinline__ float gpulab_h2f(unsigned short h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short gpulab_f2h(float f)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ unsigned short gpulab_d2h(double d)
{
    unsigned short h;
    asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d));
    return h;
}
// bf16 is the top half of a float: widening is exact.
__device__ __forceinline__ float gpulab_bf2f(unsigned short b)
{
    return __uint_as_float(((unsigned)b) << 16);
}
// Round to nearest even; a NaN stays a (quiet) NaN. Same as half::bf16::from_f32.
__device__ __forceinline__ unsigned short gpulab_f2bf(float f)
{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}
// double -> float rounding toward zero with a sticky last bit ("round to odd"), then
// float -> bf16 to nearest even: one correct rounding, as half::bf16::from_f64 gives.
__device__ __forceinline__ unsigned short gpulab_d2bf(double d)
{
    float f = __double2float_rz(d);
    if ((double)f != d && f == f) f = __uint_as_float(__float_as_uint(f) | 1u);
    return gpulab_f2bf(f);
}

// Float to integer as Rust's `as`: truncation toward zero, saturating, NaN to 0.
__device__ __forceinline__ long long gpulab_d2ll_sat(double d, double lo, double hi,
                                                     long long ilo, long long ihi)
{
    if (d != d) return 0;
    if (d <= lo) return ilo;
    if (d >= hi) return ihi;
    return (long long)d;
}

template <class T> struct Ty;

template <> struct Ty<float> {
    typedef float acc;
    static const int kind = GPULAB_KIND_FLOAT;
    static __device__ __forceinline__ float load(float v) { return v; }
    static __device__ __forceinline__ float store(float a) { return a; }
    static __device__ __forceinline__ double to_d(float v) { return v; }
    static __device__ __forceinline__ float from_d(double d) { return (float)d; }
    static __device__ __forceinline__ long long to_ll(float v) { return (long long)v; }
    static __device__ __forceinline__ float from_ll(long long v) { return (float)v; }
};
template <> struct Ty<double> {
    typedef double acc;
    static const int kind = GPULAB_KIND_FLOAT;
    static __device__ __forceinline__ double load(double v) { return v; }
    static __device__ __forceinline__ double store(double a) { return a; }
    static __device__ __forceinline__ double to_d(double v) { return v; }
    static __device__ __forceinline__ double from_d(double d) { return d; }
    static __device__ __forceinline__ long long to_ll(double v) { return (long long)v; }
    static __device__ __forceinline__ double from_ll(long long v) { return (double)v; }
};
template <> struct Ty<f16_t> {
    typedef float acc;
    static const int kind = GPULAB_KIND_FLOAT;
    static __device__ __forceinline__ float load(f16_t v) { return gpulab_h2f(v.x); }
    static __device__ __forceinline__ f16_t store(float a)
    {
        f16_t r;
        r.x = gpulab_f2h(a);
        return r;
    }
    static __device__ __forceinline__ double to_d(f16_t v) { return gpulab_h2f(v.x); }
    static __device__ __forceinline__ f16_t from_d(double d)
    {
        f16_t r;
        r.x = gpulab_d2h(d);
        return r;
    }
    static __device__ __forceinline__ long long to_ll(f16_t v) { return (long long)load(v); }
    static __device__ __forceinline__ f16_t from_ll(long long v) { return from_d((double)v); }
};
template <> struct Ty<bf16_t> {
    typedef float acc;
    static const int kind = GPULAB_KIND_FLOAT;
    static __device__ __forceinline__ float load(bf16_t v) { return gpulab_bf2f(v.x); }
    static __device__ __forceinline__ bf16_t store(float a)
    {
        bf16_t r;
        r.x = gpulab_f2bf(a);
        return r;
    }
    static __device__ __forceinline__ double to_d(bf16_t v) { return gpulab_bf2f(v.x); }
    static __device__ __forceinline__ bf16_t from_d(double d)
    {
        bf16_t r;
        r.x = gpulab_d2bf(d);
        return r;
    }
    static __device__ __forceinline__ long long to_ll(bf16_t v) { return (long long)load(v); }
    static __device__ __forceinline__ bf16_t from_ll(long long v) { return from_d((double)v); }
};
// The integer types compute in long long and store by truncation (Rust's `as`), so
// u8/i32 results wrap exactly as the CPU backend's i64-then-cast loops.
template <> struct Ty<int> {
    typedef long long acc;
    static const int kind = GPULAB_KIND_INT;
    static __device__ __forceinline__ long long load(int v) { return v; }
    static __device__ __forceinline__ int store(long long a) { return (int)a; }
    static __device__ __forceinline__ double to_d(int v) { return v; }
    static __device__ __forceinline__ int from_d(double d)
    {
        return (int)gpulab_d2ll_sat(d, -2147483648.0, 2147483647.0, -2147483648LL, 2147483647LL);
    }
    static __device__ __forceinline__ long long to_ll(int v) { return v; }
    static __device__ __forceinline__ int from_ll(long long v) { return (int)v; }
};
template <> struct Ty<long long> {
    typedef long long acc;
    static const int kind = GPULAB_KIND_INT;
    static __device__ __forceinline__ long long load(long long v) { return v; }
    static __device__ __forceinline__ long long store(long long a) { return a; }
    static __device__ __forceinline__ double to_d(long long v) { return (double)v; }
    static __device__ __forceinline__ long long from_d(double d)
    {
        // 2^63 is exactly representable; every double >= it saturates.
        return gpulab_d2ll_sat(d, -9223372036854775808.0, 9223372036854775808.0,
                               (-9223372036854775807LL - 1), 9223372036854775807LL);
    }
    static __device__ __forceinline__ long long to_ll(long long v) { return v; }
    static __device__ __forceinline__ long long from_ll(long long v) { return v; }
};
template <> struct Ty<unsigned char> {
    typedef long long acc;
    static const int kind = GPULAB_KIND_INT;
    static __device__ __forceinline__ long long load(unsigned char v) { return v; }
    static __device__ __forceinline__ unsigned char store(long long a) { return (unsigned char)a; }
    static __device__ __forceinline__ double to_d(unsigned char v) { return v; }
    static __device__ __forceinline__ unsigned char from_d(double d)
    {
        return (unsigned char)gpulab_d2ll_sat(d, 0.0, 255.0, 0, 255);
    }
    static __device__ __forceinline__ long long to_ll(unsigned char v) { return v; }
    static __device__ __forceinline__ unsigned char from_ll(long long v) { return (unsigned char)v; }
};
// bool computes as 0/1 in long long; storing tests for non-zero, so + and max act as "or",
// * and min as "and" (torch's bool arithmetic; the host refuses the other ops).
template <> struct Ty<bool_t> {
    typedef long long acc;
    static const int kind = GPULAB_KIND_BOOL;
    static __device__ __forceinline__ long long load(bool_t v) { return v.x != 0; }
    static __device__ __forceinline__ bool_t store(long long a)
    {
        bool_t r;
        r.x = a != 0;
        return r;
    }
    static __device__ __forceinline__ double to_d(bool_t v) { return v.x != 0 ? 1.0 : 0.0; }
    static __device__ __forceinline__ bool_t from_d(double d)
    {
        bool_t r;
        r.x = d != 0.0;
        return r;
    }
    static __device__ __forceinline__ long long to_ll(bool_t v) { return v.x != 0; }
    static __device__ __forceinline__ bool_t from_ll(long long v) { return store(v); }
};

// One element of S as a D, as the CPU backend's cast_vec converts.
template <class S, class D> __device__ __forceinline__ D gpulab_cast(S v)
{
    if (Ty<S>::kind == GPULAB_KIND_FLOAT || Ty<D>::kind == GPULAB_KIND_FLOAT) {
        return Ty<D>::from_d(Ty<S>::to_d(v));
    }
    return Ty<D>::from_ll(Ty<S>::to_ll(v));
}

// Calls M(type, suffix) for every dtype, in DType::ALL's order. The prelude compiles one
// dtype at a time (all 8 at once take NVRTC about 8 times as long, which the first tensor op
// of a session would wait for): it puts `#define GPULAB_ONLY_DTYPE(M) M(f16_t, f16)` before
// the source, or an empty GPULAB_ONLY_DTYPE with GPULAB_BYTE_KERNELS for the kernels that
// work per element size (see tensor::gpu::Variant). Without either, everything is built
// (what the compile tests check).
#ifdef GPULAB_ONLY_DTYPE
#define GPULAB_FOR_EACH_DTYPE(M) GPULAB_ONLY_DTYPE(M)
#else
#define GPULAB_BYTE_KERNELS 1
#define GPULAB_FOR_EACH_DTYPE(M) \
    M(float, f32)                \
    M(double, f64)               \
    M(f16_t, f16)                \
    M(bf16_t, bf16)              \
    M(int, i32)                  \
    M(long long, i64)            \
    M(unsigned char, u8)         \
    M(bool_t, bool)
#endif

// Calls M(type, suffix, T2, suffix2) for every pair of dtypes (the cast kernels).
#define GPULAB_FOR_EACH_DTYPE_WITH(M, T, S) \
    M(T, S, float, f32)                     \
    M(T, S, double, f64)                    \
    M(T, S, f16_t, f16)                     \
    M(T, S, bf16_t, bf16)                   \
    M(T, S, int, i32)                       \
    M(T, S, long long, i64)                 \
    M(T, S, unsigned char, u8)              \
    M(T, S, bool_t, bool)

#define GPULAB_GRID_STRIDE(i, n)                                                     \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)blockDim.x * gridDim.x)
