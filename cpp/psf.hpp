// Far-field intensity samples of a pupil by a pruned 2-D FFT.
#pragma once
#include <complex>
#include <cstddef>

namespace icl {

// Intensity |FFT_M(P)|^2 * scale on the centred s x s window of angular indices
// k = -s/2 ... s/2 - 1 (row = y, column = x), from an n x n pupil zero-padded to m x m.
// Only the n non-zero pupil rows are transformed, and only the s kept columns in the second pass.
// `single`: the transforms in single precision (the pupil rounded to float, |.|^2 and scale in double).
void psf_window(const std::complex<double>* pupil, std::ptrdiff_t n, std::ptrdiff_t m, std::ptrdiff_t s,
                double scale, bool single, double* out);

}  // namespace icl
