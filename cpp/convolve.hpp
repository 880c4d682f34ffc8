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
// (the product is the last operation: scale 1 changes no bit).
void place_polyphase(const double* s, std::ptrdiff_t s0, std::ptrdiff_t s1, const double* ty, std::ptrdiff_t nty,
                     const double* tx, std::ptrdiff_t ntx, const std::ptrdiff_t* r0, const std::ptrdiff_t* c0,
                     std::ptrdiff_t q, std::ptrdiff_t n0, std::ptrdiff_t n1, double scale, double* out);

// Window (r0, c0, n0, n1) of the full linear convolution a * k (zero padded, no wrap-around).
void convolve_linear(const double* a, std::ptrdiff_t a0, std::ptrdiff_t a1, const double* k, std::ptrdiff_t k0,
                     std::ptrdiff_t k1, std::ptrdiff_t r0, std::ptrdiff_t c0, std::ptrdiff_t n0, std::ptrdiff_t n1,
                     double* out);

// Smallest integer >= n whose only prime factors are 2, 3, 5 and 7 (sizes FFTW handles fastest).
std::ptrdiff_t fast_length(std::ptrdiff_t n);

}  // namespace icl
