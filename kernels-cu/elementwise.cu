// Element-wise kernels behind gpulab's Tensor arithmetic on CUDA devices, written once as
// templates and instantiated per dtype (`binary_same_f32`, `binary_same_bf16`, ...; the
// suffixes are DType::kernel_suffix's). Half types compute in float, integers in long long
// (see gpulab_dtypes.cuh), as the CPU backend does.
//
// The op codes are shared with the Rust side (prelude/src/tensor/op.rs); a switch on a
// kernel argument costs nothing measurable because every thread takes the same branch, and
// it keeps one kernel per access pattern instead of one per operation. The host checks
// every code before launching (tensor::gpu::check_op), so the `default:` branches below
// are unreachable; they trap, which fails the launch loudly, rather than leave the output
// unwritten.
//
// Every kernel loops with a grid stride, so any grid size covers any n.

#include "gpulab_dtypes.cuh"

// Shape of the output and, per input, the stride to step in each output dimension
// (0 where that input is broadcast). Passed by value; mirrors tensor::gpu::strides_arg.
struct Strides {
    int ndim;
    long long dims[GPULAB_MAX_DIMS];
    long long sa[GPULAB_MAX_DIMS];
    long long sb[GPULAB_MAX_DIMS];
};

// Binary op codes: 0 add, 1 sub, 2 mul, 3 div, 4 maximum, 5 minimum, 6 pow, 7 atan2,
// 8 fmod (the dividend's sign), 9 remainder (the divisor's sign, Python's %), 10 floor_divide,
// 11 zeta (Hurwitz's, float types only).

// torch's remainder and floor division from fmod, as its kernels and the CPU's (op.rs)
// compute them, so that every device rounds the same way.
template <class T> __device__ __forceinline__ T remainder_of(T b, T m)
{
    return (m != T(0) && ((b < T(0)) != (m < T(0)))) ? m + b : m;
}

template <class T> __device__ __forceinline__ T floor_divide_of(T a, T b, T m)
{
    if (b == T(0)) return a / b;
    T div = (a - m) / b;
    if (m != T(0) && ((b < T(0)) != (m < T(0)))) div -= T(1);
    if (div == T(0)) return copysign(T(0), a / b);
    T f = floor(div);
    return (div - f > T(0.5)) ? f + T(1) : f;
}

// The gamma family, as prelude/src/tensor/gamma_math.rs evaluates it on the CPU (the same
// Cephes series torch uses). Both float types compute digamma and zeta in double, as the
// CPU does, so a float32 result is the double one rounded once and the devices agree;
// trigamma runs in float for float, as torch's does.
// +inf and NaN as bit patterns (NVRTC has no math_constants.h on its include path).
#define GL_INF __longlong_as_double(0x7ff0000000000000LL)
#define GL_NAN __longlong_as_double(0x7ff8000000000000LL)

// psi(x) for x > 0: recurrence up to 10, then the asymptotic series.
__device__ double gl_digamma_positive(double x)
{
    double acc = 0.0;
    while (x < 10.0) {
        acc -= 1.0 / x;
        x += 1.0;
    }
    if (x == 10.0) return acc + 2.2517525890667211; // H_9 - gamma
    double tail = 0.0;
    if (x < 1e17) {
        const double C[7] = {1.0 / 12.0, -691.0 / 32760.0, 1.0 / 132.0, -1.0 / 240.0,
                             1.0 / 252.0, -1.0 / 120.0,    1.0 / 12.0};
        double z = 1.0 / (x * x), p = 0.0;
        for (int k = 0; k < 7; ++k) p = p * z + C[k];
        tail = z * p;
    }
    return acc + log(x) - 0.5 / x - tail;
}

__device__ double gl_digamma(double x)
{
    const double PI = 3.14159265358979323846;
    if (x == 0.0) return copysign(GL_INF, -x);
    if (x < 0.0) {
        if (x == trunc(x)) return GL_NAN;
        // Reflection with the fractional part's tangent (tan has period pi).
        return gl_digamma_positive(1.0 - x) - PI / tan(PI * (x - trunc(x)));
    }
    return gl_digamma_positive(x);
}

// trigamma in T arithmetic throughout, as torch's kernels and the CPU's trigamma_in! macro:
// for float, sin(pi x) of a negative integer is about 1e-7, and the pole's height follows
// from it. Every literal is a T so that float never widens to double.
template <typename T> __device__ T gl_trigamma(T x)
{
    const T PI = T(3.14159265358979323846);
    T sign = T(1), acc = T(0);
    if (x < T(0.5)) {
        sign = T(-1);
        T s = sin(PI * x);
        acc -= PI * PI / (s * s);
        x = T(1) - x;
    }
    for (int k = 0; k < 6; ++k) {
        acc += T(1) / (x * x);
        x += T(1);
    }
    T ixx = T(1) / (x * x);
    acc += (T(1) + T(1) / (T(2) * x) +
            ixx * (T(1) / T(6) - ixx * (T(1) / T(30) - ixx / T(42)))) / x;
    return sign * acc;
}

__device__ double gl_zeta(double x, double q)
{
    const double EPS = 1.1102230246251565e-16;
    const double A[12] = {12.0,
                          -720.0,
                          30240.0,
                          -1209600.0,
                          47900160.0,
                          -1.8924375803183792e9,
                          7.47242496e10,
                          -2.9501307279181642e12,
                          1.1646782814350067e14,
                          -4.5979787224074726e15,
                          1.8152105401943547e17,
                          -7.166165256175667e18};
    if (x == 1.0) return GL_INF;
    if (x < 1.0) return GL_NAN;
    if (q <= 0.0) {
        if (q == floor(q)) return GL_INF;
        if (x != floor(x)) return GL_NAN;
    }
    double s = pow(q, -x), a = q, b = 0.0;
    int i = 0;
    while (i < 9 || a <= 9.0) {
        i += 1;
        a += 1.0;
        b = pow(a, -x);
        s += b;
        if (-EPS * s < b && b < EPS * s) return s;
    }
    double w = a;
    s += b * w / (x - 1.0);
    s -= 0.5 * b;
    double fac = 1.0, k = 0.0;
    for (int j = 0; j < 12; ++j) {
        fac *= x + k;
        b /= w;
        double t = fac * b / A[j];
        s += t;
        if (fabs(t / s) < EPS) return s;
        k += 1.0;
        fac *= x + k;
        b /= w;
        k += 1.0;
    }
    return s;
}

__device__ __forceinline__ float binary_apply(int op, float a, float b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    // fmaxf/fminf drop a NaN; torch's maximum/minimum return it (`a != a` is NaN's test).
    case 4: return (a > b || a != a) ? a : b;
    case 5: return (a < b || a != a) ? a : b;
    case 6: return powf(a, b);
    case 7: return atan2f(a, b);
    case 8: return fmodf(a, b);
    case 9: return remainder_of(b, fmodf(a, b));
    case 10: return floor_divide_of(a, b, fmodf(a, b));
    case 11: return (float)gl_zeta(a, b);
    default: __trap();
    }
    return a;
}

__device__ __forceinline__ double binary_apply(int op, double a, double b)
{
    switch (op) {
    case 0: return a + b;
    case 1: return a - b;
    case 2: return a * b;
    case 3: return a / b;
    case 4: return (a > b || a != a) ? a : b;
    case 5: return (a < b || a != a) ? a : b;
    case 6: return pow(a, b);
    case 7: return atan2(a, b);
    case 8: return fmod(a, b);
    case 9: return remainder_of(b, fmod(a, b));
    case 10: return floor_divide_of(a, b, fmod(a, b));
    case 11: return gl_zeta(a, b);
    default: __trap();
    }
    return a;
}

// Wrapping integer arithmetic (through unsigned: signed overflow is undefined in C++), as
// Rust's wrapping_* on i64. Division never comes here for tensors (torch promotes integer
// division to float), but is defined as the CPU's checked_div: 0 when it would trap.
__device__ __forceinline__ long long binary_apply(int op, long long a, long long b)
{
    typedef unsigned long long u64;
    switch (op) {
    case 0: return (long long)((u64)a + (u64)b);
    case 1: return (long long)((u64)a - (u64)b);
    case 2: return (long long)((u64)a * (u64)b);
    case 3:
        if (b == 0 || (b == -1 && a == (-9223372036854775807LL - 1))) return 0;
        return a / b;
    case 4: return a > b ? a : b;
    case 5: return a < b ? a : b;
    case 6: {
        // Wrapping square-and-multiply, as the CPU's int_pow. A negative exponent (allowed
        // from a tensor, as in torch) keeps the powers of 1 and -1 and gives 0 otherwise.
        if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
        u64 base = (u64)a, r = 1;
        u64 e = b > 0xffffffffLL ? 0xffffffffULL : (u64)b;
        while (e) {
            if (e & 1) r *= base;
            base *= base;
            e >>= 1;
        }
        return (long long)r;
    }
    // The dividing ops: the host refuses a zero divisor first (torch's ZeroDivisionError);
    // LLONG_MIN by -1 wraps, as the CPU's wrapping_rem / wrapping_div.
    case 8: case 9: case 10: {
        if (b == 0) return 0;
        if (b == -1) return op == 10 ? (long long)(0ULL - (u64)a) : 0;
        long long q = a / b, r = a % b;
        if (op == 8) return r;
        bool adjust = r != 0 && ((r < 0) != (b < 0));
        if (op == 9) return adjust ? r + b : r;
        return adjust ? q - 1 : q;
    }
    default: __trap();
    }
    return a;
}

// Unary op codes: 0 neg, 1 abs, 2 exp, 3 sqrt, 4 relu, 5 log, 6 tanh, 7 sigmoid, 8 sin,
// 9 cos, 10 floor, 11 ceil, 12 round (halves to even, as torch), 13 sign (0 for -0 and NaN),
// 14 log1p, 15 expm1 (exact near 0, where log(1 + x) and exp(x) - 1 lose every digit),
// 16 erf, 17 tan, 18 asin, 19 acos, 20 atan, 21 sinh, 22 cosh, 23 asinh, 24 acosh, 25 atanh,
// 26 lgamma, 27 digamma, 28 trigamma (polygamma(1, x)), 29 erfc, 30 erfinv.
__device__ __forceinline__ float unary_apply(int op, float x)
{
    switch (op) {
    case 0: return -x;
    case 1: return fabsf(x);
    case 2: return expf(x);
    case 3: return sqrtf(x);
    case 4: return x < 0.0f ? 0.0f : x; // a NaN passes through, as in torch
    case 5: return logf(x);
    case 6: return tanhf(x);
    case 7: return 1.0f / (1.0f + expf(-x));
    case 8: return sinf(x);
    case 9: return cosf(x);
    case 10: return floorf(x);
    case 11: return ceilf(x);
    case 12: return rintf(x);
    case 13: return (float)((0.0f < x) - (x < 0.0f));
    case 14: return log1pf(x);
    case 15: return expm1f(x);
    case 16: return erff(x);
    case 17: return tanf(x);
    case 18: return asinf(x);
    case 19: return acosf(x);
    case 20: return atanf(x);
    case 21: return sinhf(x);
    case 22: return coshf(x);
    case 23: return asinhf(x);
    case 24: return acoshf(x);
    case 25: return atanhf(x);
    case 26: return lgammaf(x);
    case 27: return (float)gl_digamma(x);
    case 28: return gl_trigamma<float>(x);
    case 29: return erfcf(x);
    case 30: return erfinvf(x);
    default: __trap();
    }
    return x;
}

__device__ __forceinline__ double unary_apply(int op, double x)
{
    switch (op) {
    case 0: return -x;
    case 1: return fabs(x);
    case 2: return exp(x);
    case 3: return sqrt(x);
    case 4: return x < 0.0 ? 0.0 : x;
    case 5: return log(x);
    case 6: return tanh(x);
    case 7: return 1.0 / (1.0 + exp(-x));
    case 8: return sin(x);
    case 9: return cos(x);
    case 10: return floor(x);
    case 11: return ceil(x);
    case 12: return rint(x);
    case 13: return (double)((0.0 < x) - (x < 0.0));
    case 14: return log1p(x);
    case 15: return expm1(x);
    case 16: return erf(x);
    case 17: return tan(x);
    case 18: return asin(x);
    case 19: return acos(x);
    case 20: return atan(x);
    case 21: return sinh(x);
    case 22: return cosh(x);
    case 23: return asinh(x);
    case 24: return acosh(x);
    case 25: return atanh(x);
    case 26: return lgamma(x);
    case 27: return gl_digamma(x);
    case 28: return gl_trigamma<double>(x);
    case 29: return erfc(x);
    case 30: return erfinv(x);
    default: __trap();
    }
    return x;
}

// Integers: neg, abs, relu, and floor/ceil/round (the integer itself) and sign; the tensor
// layer converts to float for the others.
__device__ __forceinline__ long long unary_apply(int op, long long x)
{
    switch (op) {
    case 0: return (long long)(0ULL - (unsigned long long)x);
    case 1: return x < 0 ? (long long)(0ULL - (unsigned long long)x) : x;
    case 4: return x > 0 ? x : 0;
    case 10: case 11: case 12: return x;
    case 13: return (x > 0) - (x < 0);
    default: __trap();
    }
    return x;
}

// Comparison op codes: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge (NaN compares false but for ne).
template <class A> __device__ __forceinline__ bool cmp_apply(int op, A a, A b)
{
    switch (op) {
    case 0: return a == b;
    case 1: return a != b;
    case 2: return a < b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a >= b;
    default: __trap();
    }
    return false;
}

__device__ __forceinline__ void bcast_offsets(const Strides& st, long long i, long long& ia,
                                              long long& ib)
{
    long long rest = i;
    ia = 0;
    ib = 0;
    for (int d = st.ndim - 1; d >= 0; --d) {
        long long c = rest % st.dims[d];
        rest /= st.dims[d];
        ia += c * st.sa[d];
        ib += c * st.sb[d];
    }
}

// out[i] = f(a[i], b[i]) over contiguous buffers, 16 bytes per thread per step when all
// three are 16-byte aligned (tensor buffers from the allocator are; a view's offset pointer
// may not be, and takes the element loop): one 2-byte load per thread would leave the
// half types short of the memory bandwidth. The element loop also does the tail.
template <class T, class F>
__device__ __forceinline__ void zip_map(const T* __restrict__ a, const T* __restrict__ b,
                                        T* __restrict__ out, long long n, F f)
{
    const int V = 16 / sizeof(T);
    long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long stride = (long long)blockDim.x * gridDim.x;
    long long done = 0;
    if ((((unsigned long long)a | (unsigned long long)b | (unsigned long long)out) & 15) == 0) {
        long long nv = n / V;
        const uint4* a4 = reinterpret_cast<const uint4*>(a);
        const uint4* b4 = reinterpret_cast<const uint4*>(b);
        uint4* o4 = reinterpret_cast<uint4*>(out);
        for (long long i = start; i < nv; i += stride) {
            uint4 va = a4[i], vb = b4[i], vo;
            const T* ea = reinterpret_cast<const T*>(&va);
            const T* eb = reinterpret_cast<const T*>(&vb);
            T* eo = reinterpret_cast<T*>(&vo);
#pragma unroll
            for (int k = 0; k < V; ++k) eo[k] = f(ea[k], eb[k]);
            o4[i] = vo;
        }
        done = nv * V;
    }
    for (long long i = done + start; i < n; i += stride) out[i] = f(a[i], b[i]);
}

template <class T>
__device__ void binary_same(int op, const T* __restrict__ a, const T* __restrict__ b,
                            T* __restrict__ out, long long n)
{
    zip_map(a, b, out, n, [op](T x, T y) {
        return Ty<T>::store(binary_apply(op, Ty<T>::load(x), Ty<T>::load(y)));
    });
}

// out = a (op) s, or s (op) a when scalar_first is set (2 - x, 1 / x). The scalar comes in
// the compute type (float for f32/f16/bf16, double for f64, long long for integers).
template <class T>
__device__ void binary_scalar(int op, const T* __restrict__ a, typename Ty<T>::acc s,
                              int scalar_first, T* __restrict__ out, long long n)
{
    zip_map(a, a, out, n, [op, s, scalar_first](T v, T) {
        typename Ty<T>::acc x = Ty<T>::load(v);
        return Ty<T>::store(scalar_first ? binary_apply(op, s, x) : binary_apply(op, x, s));
    });
}

template <class T>
__device__ void binary_bcast(int op, const T* __restrict__ a, const T* __restrict__ b,
                             T* __restrict__ out, long long n, const Strides& st)
{
    GPULAB_GRID_STRIDE(i, n)
    {
        long long ia, ib;
        bcast_offsets(st, i, ia, ib);
        out[i] = Ty<T>::store(binary_apply(op, Ty<T>::load(a[ia]), Ty<T>::load(b[ib])));
    }
}

template <class T>
__device__ void unary(int op, const T* __restrict__ a, T* __restrict__ out, long long n)
{
    zip_map(a, a, out, n,
            [op](T v, T) { return Ty<T>::store(unary_apply(op, Ty<T>::load(v))); });
}

template <class T>
__device__ void cmp_same(int op, const T* __restrict__ a, const T* __restrict__ b,
                         bool_t* __restrict__ out, long long n)
{
    GPULAB_GRID_STRIDE(i, n)
    {
        out[i].x = cmp_apply(op, Ty<T>::load(a[i]), Ty<T>::load(b[i]));
    }
}

template <class T>
__device__ void cmp_bcast(int op, const T* __restrict__ a, const T* __restrict__ b,
                          bool_t* __restrict__ out, long long n, const Strides& st)
{
    GPULAB_GRID_STRIDE(i, n)
    {
        long long ia, ib;
        bcast_offsets(st, i, ia, ib);
        out[i].x = cmp_apply(op, Ty<T>::load(a[ia]), Ty<T>::load(b[ib]));
    }
}

#define GPULAB_ELEMENTWISE(T, S)                                                             \
    extern "C" __global__ void binary_same_##S(int op, const T* a, const T* b, T* out,      \
                                               long long n)                                 \
    {                                                                                        \
        binary_same<T>(op, a, b, out, n);                                                    \
    }                                                                                        \
    extern "C" __global__ void binary_scalar_##S(int op, const T* a, Ty<T>::acc s,          \
                                                 int scalar_first, T* out, long long n)     \
    {                                                                                        \
        binary_scalar<T>(op, a, s, scalar_first, out, n);                                    \
    }                                                                                        \
    extern "C" __global__ void binary_bcast_##S(int op, const T* a, const T* b, T* out,     \
                                                long long n, Strides st)                    \
    {                                                                                        \
        binary_bcast<T>(op, a, b, out, n, st);                                               \
    }                                                                                        \
    extern "C" __global__ void unary_##S(int op, const T* a, T* out, long long n)           \
    {                                                                                        \
        unary<T>(op, a, out, n);                                                             \
    }                                                                                        \
    extern "C" __global__ void cmp_same_##S(int op, const T* a, const T* b, bool_t* out,    \
                                            long long n)                                    \
    {                                                                                        \
        cmp_same<T>(op, a, b, out, n);                                                       \
    }                                                                                        \
    extern "C" __global__ void cmp_bcast_##S(int op, const T* a, const T* b, bool_t* out,   \
                                             long long n, Strides st)                       \
    {                                                                                        \
        cmp_bcast<T>(op, a, b, out, n, st);                                                  \
    }

GPULAB_FOR_EACH_DTYPE(GPULAB_ELEMENTWISE)

// cast_<from>_<to>: to_dtype on the device, element by element as the CPU's cast_vec.
#define GPULAB_CAST(T, S, T2, S2)                                                            \
    extern "C" __global__ void cast_##S##_##S2(const T* __restrict__ in, T2* __restrict__ out, \
                                               long long n)                                  \
    {                                                                                         \
        GPULAB_GRID_STRIDE(i, n) { out[i] = gpulab_cast<T, T2>(in[i]); }                      \
    }
#define GPULAB_CAST_FROM(T, S) GPULAB_FOR_EACH_DTYPE_WITH(GPULAB_CAST, T, S)
GPULAB_FOR_EACH_DTYPE(GPULAB_CAST_FROM)

// Kernels that only move elements work on their bytes, so they exist per element size
// (b1, b2, b4, b8) rather than per dtype.

// Every element set to the low `bytes` bytes of v.
#define GPULAB_BY_SIZE(U, B)                                                                 \
    extern "C" __global__ void fill_##B(U* __restrict__ out, unsigned long long v,            \
                                        long long n)                                         \
    {                                                                                         \
        GPULAB_GRID_STRIDE(i, n) { out[i] = (U)v; }                                           \
    }                                                                                         \
    /* cond ? x : y, all of one shape. */                                                     \
    extern "C" __global__ void where_##B(const bool_t* __restrict__ cond,                     \
                                         const U* __restrict__ x, const U* __restrict__ y,    \
                                         U* __restrict__ out, long long n)                   \
    {                                                                                         \
        GPULAB_GRID_STRIDE(i, n) { out[i] = cond[i].x ? x[i] : y[i]; }                        \
    }

#ifdef GPULAB_BYTE_KERNELS
GPULAB_BY_SIZE(unsigned char, b1)
GPULAB_BY_SIZE(unsigned short, b2)
GPULAB_BY_SIZE(unsigned int, b4)
GPULAB_BY_SIZE(unsigned long long, b8)
#endif
