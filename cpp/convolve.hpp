// Placement of a sampled PSF on the detector: separable FIR and zero-padded linear convolution.
#pragma once
#include <cstddef>

namespace icl {

// out[i, j] = sum_a sum_b ty[a] tx[b] s[r0 + i + a, c0 + j + b], with s = 0 outside its (s0, s1) extent.
void place_separable(const double* s, std::ptrdiff_t s0, std::ptrdiff_t s1, const double* ty, std::ptrdiff_t nty,
                     const double* tx, std::ptrdiff_t ntx, std::ptrdiff_t r0, std::ptrdiff_t c0, std::ptrdiff_t n0,
                     std::ptrdiff_t n1, double* out);

// Polyphase form for samples q pixels apart: output row i uses taps ty[(i % q) * nty ...] and rows from
// r0[i % q] + i / q; output column j uses tx[(j % q) * ntx ...] and columns from c0[j % q] + j / q.
// Equals place_separable applied to each phase pair and interleaved, with the y pass shared, times `scale`
// (the product is the last operation: scale 1 changes no bit). When given, row_sums[i] receives the sum of
// output row i (eight lanes, then the lanes in order: the same bits on every
// machine and for any thread count). `single`: samples, taps and the filter sums in float (each rounded to
// nearest once; about 1e-7 relative), the scale and the outputs in double.
void place_polyphase(const double* s, std::ptrdiff_t s0, std::ptrdiff_t s1, const double* ty, std::ptrdiff_t nty,
                     const double* tx, std::ptrdiff_t ntx, const std::ptrdiff_t* r0, const std::ptrdiff_t* c0,
                     std::ptrdiff_t q, std::ptrdiff_t n0, std::ptrdiff_t n1, double scale, double* out,
                     double* row_sums = nullptr, bool single = false);

// Sum of v[j]^2 over [0, n) on eight lanes (lane l takes j = l, l + 8, ...), the lanes then added in order: the
// same bits on every machine (a complex array's energy: its 2 n doubles).
double sum_squares(const double* v, std::ptrdiff_t n);

// dst[0..n) += t * src[0..n), vectorised without reordering any sum (the same bits on every machine).
void axpy(double t, const double* src, double* dst, std::ptrdiff_t n);

// dst[j] = sum_k taps[k] src[k][j] for j in [0, n), k = 0 .. ntaps - 1 in order from zero: the same bits as
// zeroing dst and calling axpy once per tap, with each output stored once.
void sum_rows(const double* taps, const double* const* src, std::ptrdiff_t ntaps, double* dst, std::ptrdiff_t n);

// Window (r0, c0, n0, n1) of the full linear convolution a * k (zero padded, no wrap-around).
void convolve_linear(const double* a, std::ptrdiff_t a0, std::ptrdiff_t a1, const double* k, std::ptrdiff_t k0,
                     std::ptrdiff_t k1, std::ptrdiff_t r0, std::ptrdiff_t c0, std::ptrdiff_t n0, std::ptrdiff_t n1,
                     double* out);

// Smallest integer >= n whose only prime factors are 2, 3, 5 and 7 (sizes FFTW handles fastest).
std::ptrdiff_t fast_length(std::ptrdiff_t n);

}  // namespace icl
