#include "psf.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "common.hpp"
#include "fft.hpp"

namespace icl {
namespace {

// The batch plan and its execution in double or single precision.
template <class T>
struct Batch;
template <>
struct Batch<double> {
    fftw_plan plan;
    Batch(int m, int howmany) : plan(batch_c2c_plan(m, howmany)) {}
    void operator()(std::complex<double>* in, std::complex<double>* out) const {
        fftw_execute_dft(plan, reinterpret_cast<fftw_complex*>(in), reinterpret_cast<fftw_complex*>(out));
    }
};
template <>
struct Batch<float> {
    fftwf_plan plan;
    Batch(int m, int howmany) : plan(batch_c2c_plan_f(m, howmany)) {}
    void operator()(std::complex<float>* in, std::complex<float>* out) const {
        fftwf_execute_dft(plan, reinterpret_cast<fftwf_complex*>(in), reinterpret_cast<fftwf_complex*>(out));
    }
};

template <class T>
void window(const std::complex<double>* pupil, std::ptrdiff_t n, std::ptrdiff_t m, std::ptrdiff_t s, double scale,
            double* out) {
    using C = std::complex<T>;
    // Angular index k = -s/2 + c sits at DFT index m - s/2 + c for c < s/2 (negative indices wrap) and at
    // c - s/2 from there on: two contiguous runs.
    const std::ptrdiff_t h = s / 2;

    // Each worker keeps one pair of FFT buffers for all its blocks of both passes: zeroed once, then only the n
    // non-zero entries of each transform are overwritten (out-of-place complex FFTs preserve their input; rows
    // of a short last block keep stale values whose transforms are not read). Blocks are fixed, so the
    // arithmetic does not depend on the thread count.
    const std::ptrdiff_t block = 16;
    const std::size_t span = static_cast<std::size_t>(block * m);
    const Batch<T> fft(static_cast<int>(m), static_cast<int>(block));
    const std::ptrdiff_t nblocks = (n + block - 1) / block, cblocks = (s + block - 1) / block;
    std::vector<std::unique_ptr<FftwArray<T>>> bufs;
    for (int t = 0; t < 2 * workers(std::max(nblocks, cblocks)); ++t) {
        bufs.push_back(std::make_unique<FftwArray<T>>(span));
        if (t % 2 == 0) std::fill(bufs.back()->get(), bufs.back()->get() + span, C(0));
    }

    // Pass 1: transform each pupil row (length m, n non-zero samples) and keep the s window columns.
    FftwArray<T> rows(static_cast<std::size_t>(n * s));
    parallel_for_worker(nblocks, [&](std::ptrdiff_t b, int t) {
        C* in = bufs[2 * t]->get();
        C* res = bufs[2 * t + 1]->get();
        const std::ptrdiff_t r0 = b * block, nr = std::min(block, n - r0);
        for (std::ptrdiff_t r = 0; r < nr; ++r)
            for (std::ptrdiff_t c = 0; c < n; ++c) in[r * m + c] = C(pupil[(r0 + r) * n + c]);
        fft(in, res);
        for (std::ptrdiff_t r = 0; r < nr; ++r) {
            const C* src = res + r * m;
            C* dst = rows.get() + (r0 + r) * s;
            std::copy(src + m - h, src + m, dst);
            std::copy(src, src + (s - h), dst + h);
        }
    });

    // Pass 2: transform each kept column (length m, n non-zero samples) and keep the s window rows.
    parallel_for_worker(cblocks, [&](std::ptrdiff_t b, int t) {
        C* in = bufs[2 * t]->get();
        C* res = bufs[2 * t + 1]->get();
        const std::ptrdiff_t c0 = b * block, nc = std::min(block, s - c0);
        for (std::ptrdiff_t c = 0; c < nc; ++c)
            for (std::ptrdiff_t r = 0; r < n; ++r) in[c * m + r] = rows.get()[r * s + c0 + c];
        fft(in, res);
        for (std::ptrdiff_t c = 0; c < nc; ++c) {
            double* o = out + c0 + c;
            const C* col = res + c * m;
            auto put = [&](std::ptrdiff_t shift, std::ptrdiff_t r_lo, std::ptrdiff_t r_hi) {
                for (std::ptrdiff_t r = r_lo; r < r_hi; ++r) {
                    const double re = col[r + shift].real(), im = col[r + shift].imag();
                    o[r * s] = (re * re + im * im) * scale;
                }
            };
            put(m - h, 0, h);  // DFT index m - h + r
            put(-h, h, s);     // DFT index r - h
        }
    });
}

}  // namespace

void psf_window(const std::complex<double>* pupil, std::ptrdiff_t n, std::ptrdiff_t m, std::ptrdiff_t s,
                double scale, bool single, double* out) {
    if (single)
        window<float>(pupil, n, m, s, scale, out);
    else
        window<double>(pupil, n, m, s, scale, out);
}

}  // namespace icl
