#include "convolve.hpp"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "common.hpp"
#include "fft.hpp"

#ifdef ICL_MULTIVERSION
#include <immintrin.h>
#endif

namespace icl {

std::ptrdiff_t fast_length(std::ptrdiff_t n) {
    for (std::ptrdiff_t m = std::max<std::ptrdiff_t>(n, 1);; ++m) {
        std::ptrdiff_t r = m;
        for (std::ptrdiff_t p : {2, 3, 5, 7})
            while (r % p == 0) r /= p;
        if (r == 1) return m;
    }
}

ICL_CLONES void axpy(double t, const double* src, double* dst, std::ptrdiff_t n) {
    for (std::ptrdiff_t j = 0; j < n; ++j) dst[j] += t * src[j];
}

// The tap sums below hold their partial sums in vectors of the widest width the machine has (8 doubles on
// AVX-512, 4 on AVX2, 2 on SSE2), loaded and stored unaligned by memcpy: GCC emulates a vector wider than the
// target's registers through memory, so each width gets its own version, picked at load time. Every output is
// the same sum, term by term, in every version (no contraction in this file, no reordered sums).
typedef double V2 __attribute__((vector_size(16)));
typedef double V4 __attribute__((vector_size(32)));
typedef double V8 __attribute__((vector_size(64)));
typedef float F4 __attribute__((vector_size(16)));
typedef float F8 __attribute__((vector_size(32)));
typedef float F16 __attribute__((vector_size(64)));

namespace {

// dst[j] = sum_k taps[k] src(k)[j] for j in [0, n), k in order from a zero accumulator: the same sum, term by
// term, as a zero-filled dst followed by one axpy per tap, but each output is stored once. Four vectors of
// outputs are summed at a time: four independent chains of additions keep the adder busy (one chain would wait
// for each addition's result).
template <class V, class T, class Src>
[[gnu::always_inline]] inline void tap_sum_v(const T* taps, Src src, std::ptrdiff_t ntaps, T* dst, std::ptrdiff_t n) {
    constexpr std::ptrdiff_t L = sizeof(V) / sizeof(T);
    std::ptrdiff_t j = 0;
    for (; j + 4 * L <= n; j += 4 * L) {
        V a0 = {}, a1 = {}, a2 = {}, a3 = {};
        for (std::ptrdiff_t k = 0; k < ntaps; ++k) {
            const T* r = src(k) + j;
            V v0, v1, v2, v3;
            std::memcpy(&v0, r, sizeof v0);
            std::memcpy(&v1, r + L, sizeof v1);
            std::memcpy(&v2, r + 2 * L, sizeof v2);
            std::memcpy(&v3, r + 3 * L, sizeof v3);
            a0 += taps[k] * v0;
            a1 += taps[k] * v1;
            a2 += taps[k] * v2;
            a3 += taps[k] * v3;
        }
        std::memcpy(dst + j, &a0, sizeof a0);
        std::memcpy(dst + j + L, &a1, sizeof a1);
        std::memcpy(dst + j + 2 * L, &a2, sizeof a2);
        std::memcpy(dst + j + 3 * L, &a3, sizeof a3);
    }
    for (; j + L <= n; j += L) {
        V acc = {};
        for (std::ptrdiff_t k = 0; k < ntaps; ++k) {
            V v;
            std::memcpy(&v, src(k) + j, sizeof v);
            acc += taps[k] * v;
        }
        std::memcpy(dst + j, &acc, sizeof acc);
    }
    for (; j < n; ++j) {
        T acc = 0;
        for (std::ptrdiff_t k = 0; k < ntaps; ++k) acc += taps[k] * src(k)[j];
        dst[j] = acc;
    }
}

template <class V, class T>
[[gnu::always_inline]] inline void sum_rows_v(const T* taps, const T* const* src, std::ptrdiff_t ntaps, T* dst,
                                              std::ptrdiff_t n) {
    tap_sum_v<V>(taps, [src](std::ptrdiff_t k) { return src[k]; }, ntaps, dst, n);
}

// src(k) = row + k: a filter along the row.
template <class V, class T>
[[gnu::always_inline]] inline void fir_v(const T* taps, std::ptrdiff_t ntaps, const T* row, T* dst, std::ptrdiff_t n) {
    tap_sum_v<V>(taps, [row](std::ptrdiff_t k) { return row + k; }, ntaps, dst, n);
}

}  // namespace

// One version per vector width (GCC function multi-versioning, dispatched at load time like ICL_CLONES).
#ifdef ICL_MULTIVERSION
#define ICL_PER_WIDTH(ret, name, impl, W512, W256, W128, params, args)              \
    __attribute__((target("avx512f"))) ret name params { return impl<W512> args; } \
    __attribute__((target("avx2"))) ret name params { return impl<W256> args; }    \
    __attribute__((target("default"))) ret name params { return impl<W128> args; }
#else
#define ICL_PER_WIDTH(ret, name, impl, W512, W256, W128, params, args) \
    ret name params { return impl<W128> args; }
#endif

ICL_PER_WIDTH(void, sum_rows, sum_rows_v, V8, V4, V2,
              (const double* taps, const double* const* src, std::ptrdiff_t ntaps, double* dst, std::ptrdiff_t n),
              (taps, src, ntaps, dst, n))

namespace {

ICL_PER_WIDTH(void, fir, fir_v, V8, V4, V2,
              (const double* taps, std::ptrdiff_t ntaps, const double* row, double* dst, std::ptrdiff_t n),
              (taps, ntaps, row, dst, n))
// The same in single precision (16 lanes a register on AVX-512).
ICL_PER_WIDTH(void, sum_rows_f, sum_rows_v, F16, F8, F4,
              (const float* taps, const float* const* src, std::ptrdiff_t ntaps, float* dst, std::ptrdiff_t n),
              (taps, src, ntaps, dst, n))
ICL_PER_WIDTH(void, fir_f, fir_v, F16, F8, F4,
              (const float* taps, std::ptrdiff_t ntaps, const float* row, float* dst, std::ptrdiff_t n),
              (taps, ntaps, row, dst, n))
inline void tap_rows(const double* t, const double* const* s, std::ptrdiff_t k, double* d, std::ptrdiff_t n) {
    sum_rows(t, s, k, d, n);
}
inline void tap_rows(const float* t, const float* const* s, std::ptrdiff_t k, float* d, std::ptrdiff_t n) {
    sum_rows_f(t, s, k, d, n);
}
inline void tap_row(const double* t, std::ptrdiff_t k, const double* r, double* d, std::ptrdiff_t n) {
    fir(t, k, r, d, n);
}
inline void tap_row(const float* t, std::ptrdiff_t k, const float* r, float* d, std::ptrdiff_t n) {
    fir_f(t, k, r, d, n);
}

// Sum of term(v[j]) over [0, n) on eight lanes (lane l takes j = l, l + 8, ...), the lanes then added in
// order: the same bits in every clone and for any thread count.
template <class Term>
[[gnu::always_inline]] inline double lane_total(const double* v, std::ptrdiff_t n, Term term) {
    double acc[8] = {};
    std::ptrdiff_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l) acc[l] += term(v[j + l]);
    double total = 0.0;
    for (int l = 0; l < 8; ++l) total += acc[l];
    for (; j < n; ++j) total += term(v[j]);
    return total;
}

ICL_CLONES double lane_sum(const double* v, std::ptrdiff_t n) {
    return lane_total(v, n, [](double x) { return x; });
}

// dst[0..n) = src[0..n) with non-temporal stores where dst is aligned to the vector width (the image rows are
// written once and read much later: no read of their cache lines before the write, no eviction of the working
// set); the caller orders them with stream_fence() before the rows are used. The same values in every version.
#ifdef ICL_MULTIVERSION
__attribute__((target("avx512f"))) void stream_row(const double* src, double* dst, std::ptrdiff_t n) {
    std::ptrdiff_t j = 0;
    for (; j < n && (reinterpret_cast<std::uintptr_t>(dst + j) & 63) != 0; ++j) dst[j] = src[j];
    for (; j + 8 <= n; j += 8) _mm512_stream_pd(dst + j, _mm512_loadu_pd(src + j));
    for (; j < n; ++j) dst[j] = src[j];
}
__attribute__((target("avx2"))) void stream_row(const double* src, double* dst, std::ptrdiff_t n) {
    std::ptrdiff_t j = 0;
    for (; j < n && (reinterpret_cast<std::uintptr_t>(dst + j) & 31) != 0; ++j) dst[j] = src[j];
    for (; j + 4 <= n; j += 4) _mm256_stream_pd(dst + j, _mm256_loadu_pd(src + j));
    for (; j < n; ++j) dst[j] = src[j];
}
__attribute__((target("default"))) void stream_row(const double* src, double* dst, std::ptrdiff_t n) {
    std::ptrdiff_t j = 0;
    for (; j < n && (reinterpret_cast<std::uintptr_t>(dst + j) & 15) != 0; ++j) dst[j] = src[j];
    for (; j + 2 <= n; j += 2) _mm_stream_pd(dst + j, _mm_loadu_pd(src + j));
    for (; j < n; ++j) dst[j] = src[j];
}
inline void stream_fence() { _mm_sfence(); }
#else
void stream_row(const double* src, double* dst, std::ptrdiff_t n) { std::copy(src, src + n, dst); }
inline void stream_fence() {}
#endif

// o[2 k] = a0[k] scale, o[2 k + 1] = a1[k] scale for k < n0 and k < n1 (the two phases of q = 2 interleaved into
// an output row; vectorised per clone, each value the same product as one at a time).
ICL_CLONES void interleave2(const double* a0, std::ptrdiff_t n0, const double* a1, std::ptrdiff_t n1, double scale,
                            double* o) {
    const std::ptrdiff_t n = std::min(n0, n1);
    for (std::ptrdiff_t k = 0; k < n; ++k) {
        o[2 * k] = a0[k] * scale;
        o[2 * k + 1] = a1[k] * scale;
    }
    if (n0 > n) o[2 * n] = a0[n] * scale;
}
ICL_CLONES void interleave2(const float* a0, std::ptrdiff_t n0, const float* a1, std::ptrdiff_t n1, double scale,
                            double* o) {
    const std::ptrdiff_t n = std::min(n0, n1);
    for (std::ptrdiff_t k = 0; k < n; ++k) {
        o[2 * k] = static_cast<double>(a0[k]) * scale;
        o[2 * k + 1] = static_cast<double>(a1[k]) * scale;
    }
    if (n0 > n) o[2 * n] = static_cast<double>(a0[n]) * scale;
}

}  // namespace

ICL_CLONES double sum_squares(const double* v, std::ptrdiff_t n) {
    return lane_total(v, n, [](double x) { return x * x; });
}

namespace {

// place_polyphase with the samples, taps and partial sums in T (double, or float for the single-precision
// placement); the flux scale, the output and the row sums in double.
template <class T>
void place_polyphase_t(const T* s, std::ptrdiff_t s0, std::ptrdiff_t s1, const T* ty, std::ptrdiff_t nty, const T* tx,
                       std::ptrdiff_t ntx, const std::ptrdiff_t* r0, const std::ptrdiff_t* c0, std::ptrdiff_t q,
                       std::ptrdiff_t n0, std::ptrdiff_t n1, double scale, double* out, double* row_sums) {
    const std::ptrdiff_t cmin = *std::min_element(c0, c0 + q), cmax = *std::max_element(c0, c0 + q);
    const std::ptrdiff_t per_phase = (n1 + q - 1) / q;
    const std::ptrdiff_t w = per_phase + ntx - 1 + (cmax - cmin);  // s columns cmin .. cmin + w
    const std::ptrdiff_t q_lo = std::max<std::ptrdiff_t>(0, -cmin), q_hi = std::min<std::ptrdiff_t>(w, s1 - cmin);
    // Scratch rows per worker, reused for all its output rows.
    const int nw = workers(n0);
    std::vector<std::vector<T>> tmps(nw, std::vector<T>(static_cast<std::size_t>(w)));
    std::vector<std::vector<T>> accs(nw, std::vector<T>(static_cast<std::size_t>(q * per_phase)));
    std::vector<std::vector<const T*>> rows(nw, std::vector<const T*>(static_cast<std::size_t>(nty)));
    std::vector<std::vector<T>> taps(nw, std::vector<T>(static_cast<std::size_t>(nty)));
    std::vector<double> line(static_cast<std::size_t>(nw * n1));
    parallel_for_worker(n0, [&](std::ptrdiff_t i, int t) {
        const std::ptrdiff_t py = i % q, l = i / q;
        std::vector<T>& tmp = tmps[t];
        std::vector<T>& acc = accs[t];
        // Along y: the sample rows inside s (rows outside add nothing), columns inside s.
        std::ptrdiff_t na = 0;
        for (std::ptrdiff_t a = 0; a < nty; ++a) {
            const std::ptrdiff_t sr = r0[py] + l + a;
            if (sr < 0 || sr >= s0) continue;
            rows[t][na] = s + sr * s1 + cmin + q_lo;
            taps[t][na++] = ty[py * nty + a];
        }
        // Columns outside s are zero; the y pass writes the others.
        if (q_hi > q_lo) {
            std::fill(tmp.begin(), tmp.begin() + q_lo, T(0));
            std::fill(tmp.begin() + q_hi, tmp.end(), T(0));
            tap_rows(taps[t].data(), rows[t].data(), na, tmp.data() + q_lo, q_hi - q_lo);
        } else {
            std::fill(tmp.begin(), tmp.end(), T(0));
        }
        // Along x, phase by phase, interleaved into the row buffer; the row's sum while it is in cache, then the
        // row streamed to the output.
        double* o = line.data() + t * n1;
        for (std::ptrdiff_t px = 0; px < q; ++px) {
            const std::ptrdiff_t m = (n1 - px + q - 1) / q;  // output columns of this phase
            tap_row(tx + px * ntx, ntx, tmp.data() + (c0[px] - cmin), acc.data() + px * per_phase, m);
        }
        if (q == 2) {
            interleave2(acc.data(), (n1 + 1) / 2, acc.data() + per_phase, n1 / 2, scale, o);
        } else {
            for (std::ptrdiff_t px = 0; px < q; ++px)
                for (std::ptrdiff_t k = 0; px + k * q < n1; ++k)
                    o[px + k * q] = static_cast<double>(acc[px * per_phase + k]) * scale;
        }
        if (row_sums) row_sums[i] = lane_sum(o, n1);
        stream_row(o, out + i * n1, n1);
    }, [](int) { stream_fence(); });  // each worker's streamed stores complete before the join
}

}  // namespace

void place_polyphase(const double* s, std::ptrdiff_t s0, std::ptrdiff_t s1, const double* ty, std::ptrdiff_t nty,
                     const double* tx, std::ptrdiff_t ntx, const std::ptrdiff_t* r0, const std::ptrdiff_t* c0,
                     std::ptrdiff_t q, std::ptrdiff_t n0, std::ptrdiff_t n1, double scale, double* out, double* row_sums,
                     bool single) {
    if (!single) {
        place_polyphase_t(s, s0, s1, ty, nty, tx, ntx, r0, c0, q, n0, n1, scale, out, row_sums);
        return;
    }
    // Samples and taps rounded to float once (each to nearest); the sums run on twice the lanes.
    std::unique_ptr<float[]> sf(new float[static_cast<std::size_t>(s0 * s1)]);
    parallel_for(s0, [&](std::ptrdiff_t i) { std::copy(s + i * s1, s + (i + 1) * s1, sf.get() + i * s1); });
    const std::vector<float> tyf(ty, ty + q * nty), txf(tx, tx + q * ntx);
    place_polyphase_t(sf.get(), s0, s1, tyf.data(), nty, txf.data(), ntx, r0, c0, q, n0, n1, scale, out, row_sums);
}

void place_separable(const double* s, std::ptrdiff_t s0, std::ptrdiff_t s1, const double* ty, std::ptrdiff_t nty,
                     const double* tx, std::ptrdiff_t ntx, std::ptrdiff_t r0, std::ptrdiff_t c0, std::ptrdiff_t n0,
                     std::ptrdiff_t n1, double* out) {
    // Pass along y into tmp, whose column q holds s column c0 + q (q < n1 + ntx - 1).
    const std::ptrdiff_t w = n1 + ntx - 1;
    std::vector<double> tmp(static_cast<std::size_t>(n0 * w), 0.0);
    parallel_for(n0, [&](std::ptrdiff_t i) {
        double* row = tmp.data() + i * w;
        for (std::ptrdiff_t a = 0; a < nty; ++a) {
            const std::ptrdiff_t sr = r0 + i + a;
            if (sr < 0 || sr >= s0) continue;
            const std::ptrdiff_t q_lo = std::max<std::ptrdiff_t>(0, -c0), q_hi = std::min<std::ptrdiff_t>(w, s1 - c0);
            if (q_hi > q_lo) axpy(ty[a], s + sr * s1 + c0 + q_lo, row + q_lo, q_hi - q_lo);
        }
    });
    // Pass along x as a sum of shifted rows (axpy form): contiguous, vectorised without reordering sums.
    parallel_for(n0, [&](std::ptrdiff_t i) {
        const double* row = tmp.data() + i * w;
        double* o = out + i * n1;
        std::fill(o, o + n1, 0.0);
        for (std::ptrdiff_t b = 0; b < ntx; ++b) axpy(tx[b], row + b, o, n1);
    });
}

void convolve_linear(const double* a, std::ptrdiff_t a0, std::ptrdiff_t a1, const double* k, std::ptrdiff_t k0,
                     std::ptrdiff_t k1, std::ptrdiff_t r0, std::ptrdiff_t c0, std::ptrdiff_t n0, std::ptrdiff_t n1,
                     double* out) {
    const std::ptrdiff_t l0 = fast_length(a0 + k0 - 1), l1 = fast_length(a1 + k1 - 1);
    const std::ptrdiff_t h1 = l1 / 2 + 1;
    const std::size_t nreal = static_cast<std::size_t>(l0 * l1), ncplx = static_cast<std::size_t>(l0 * h1);
    double* buf = fftw_alloc_real(nreal);
    FftwBuffer fa(ncplx), fk(ncplx);
    auto forward = [&](const double* src, std::ptrdiff_t e0, std::ptrdiff_t e1, FftwBuffer& dst) {
        std::fill(buf, buf + nreal, 0.0);
        for (std::ptrdiff_t i = 0; i < e0; ++i) std::copy(src + i * e1, src + (i + 1) * e1, buf + i * l1);
        fftw_execute_dft_r2c(r2c_plan(static_cast<int>(l0), static_cast<int>(l1)), buf, dst.raw());
    };
    forward(a, a0, a1, fa);
    forward(k, k0, k1, fk);
    const double norm = 1.0 / static_cast<double>(nreal);
    for (std::size_t i = 0; i < ncplx; ++i) fa.get()[i] *= fk.get()[i] * norm;
    fftw_execute_dft_c2r(c2r_plan(static_cast<int>(l0), static_cast<int>(l1)), fa.raw(), buf);
    const std::ptrdiff_t f0 = a0 + k0 - 1, f1 = a1 + k1 - 1;  // extent of the linear result
    for (std::ptrdiff_t i = 0; i < n0; ++i) {
        for (std::ptrdiff_t j = 0; j < n1; ++j) {
            const std::ptrdiff_t r = r0 + i, c = c0 + j;
            out[i * n1 + j] = (r >= 0 && r < f0 && c >= 0 && c < f1) ? buf[r * l1 + c] : 0.0;
        }
    }
    fftw_free(buf);
}

}  // namespace icl
