#include "psf.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "common.hpp"
#include "fft.hpp"

namespace icl {

void psf_window(const std::complex<double>* pupil, std::ptrdiff_t n, std::ptrdiff_t m, std::ptrdiff_t s,
                double scale, double* out) {
    // Column index of angular index k = -s/2 + c in an m-point DFT (negative indices wrap).
    std::vector<std::ptrdiff_t> kept(static_cast<std::size_t>(s));
    for (std::ptrdiff_t c = 0; c < s; ++c) kept[c] = ((c - s / 2) % m + m) % m;

    // Each worker keeps its FFT buffers for all its blocks: zeroed once, then only the n non-zero
    // entries of each transform are overwritten (out-of-place complex FFTs preserve their input).
    // Blocks are fixed, so the arithmetic does not depend on the thread count.
    const std::ptrdiff_t block = 16;
    const std::size_t span = static_cast<std::size_t>(block * m);
    auto make_buffers = [&](std::ptrdiff_t jobs) {
        std::vector<std::unique_ptr<FftwBuffer>> bufs;
        for (int t = 0; t < 2 * workers(jobs); ++t) {
            bufs.push_back(std::make_unique<FftwBuffer>(span));
            std::fill(bufs.back()->get(), bufs.back()->get() + span, std::complex<double>(0.0));
        }
        return bufs;
    };
    const fftw_plan plan = batch_c2c_plan(static_cast<int>(m), static_cast<int>(block));

    // Pass 1: transform each pupil row (length m, n non-zero samples) and keep the s window columns.
    const std::ptrdiff_t nblocks = (n + block - 1) / block;
    std::vector<std::complex<double>> rows(static_cast<std::size_t>(n * s));
    {
        auto bufs = make_buffers(nblocks);
        parallel_for_worker(nblocks, [&](std::ptrdiff_t b, int t) {
            FftwBuffer &in = *bufs[2 * t], &outb = *bufs[2 * t + 1];
            const std::ptrdiff_t r0 = b * block, nr = std::min(block, n - r0);
            for (std::ptrdiff_t r = 0; r < nr; ++r)
                std::copy(pupil + (r0 + r) * n, pupil + (r0 + r + 1) * n, in.get() + r * m);
            fftw_execute_dft(plan, in.raw(), outb.raw());
            for (std::ptrdiff_t r = 0; r < nr; ++r)
                for (std::ptrdiff_t c = 0; c < s; ++c) rows[(r0 + r) * s + c] = outb.get()[r * m + kept[c]];
        });
    }

    // Pass 2: transform each kept column (length m, n non-zero samples) and keep the s window rows.
    const std::ptrdiff_t cblocks = (s + block - 1) / block;
    auto bufs = make_buffers(cblocks);
    parallel_for_worker(cblocks, [&](std::ptrdiff_t b, int t) {
        FftwBuffer &in = *bufs[2 * t], &outb = *bufs[2 * t + 1];
        const std::ptrdiff_t c0 = b * block, nc = std::min(block, s - c0);
        for (std::ptrdiff_t c = 0; c < nc; ++c)
            for (std::ptrdiff_t r = 0; r < n; ++r) in.get()[c * m + r] = rows[r * s + c0 + c];
        fftw_execute_dft(plan, in.raw(), outb.raw());
        for (std::ptrdiff_t c = 0; c < nc; ++c)
            for (std::ptrdiff_t r = 0; r < s; ++r)
                out[r * s + c0 + c] = std::norm(outb.get()[c * m + kept[r]]) * scale;
    });
}

}  // namespace icl
