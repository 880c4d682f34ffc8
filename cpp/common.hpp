// Shared helpers for the _core kernels: the thread pool size and a deterministic parallel loop.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>

// On x86-64 with GCC and glibc (ifunc), hot loops are also compiled for AVX2 and AVX-512 and picked at
// load time. Files using this are compiled without floating-point contraction, so every clone rounds
// exactly as the scalar code does.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define ICL_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define ICL_MULTIVERSION 1  // functions may also be written once per target (target("avx512f") / ("avx2") / ("default"))
#else
#define ICL_CLONES
#endif

namespace icl {

// Number of worker threads used by every kernel (1 = serial). Work is split into fixed chunks whose
// arithmetic does not depend on the thread count, so results are bit-identical for any setting.
int num_threads();
void set_num_threads(int n);

// job(t) for t = 0 .. nt - 1 at the same time: t = 0 on the calling thread, the others on helper threads kept
// alive between calls (started on first use, so a kernel call costs no thread creation). A call made while
// the helpers are busy (from a second Python thread, or from inside a job) starts threads of its own.
void run_parallel(int nt, const std::function<void(int)>& job);

// body(i, t) for i in [0, n), with t the worker's index in [0, workers(n)): lets a worker reuse scratch
// buffers across its indices (a body must not carry results from one index to the next). Indices go out in
// consecutive chunks to whichever worker is free, so that a worker woken late or slowed by other work on the
// machine takes fewer; an index's arithmetic does not depend on the worker that runs it. finish(t), when
// given, runs on each worker after its last index (e.g. to order its streamed stores before the join).
inline int workers(std::ptrdiff_t n) { return static_cast<int>(std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(num_threads(), n))); }

struct NoFinish {
    void operator()(int) const {}
};

template <class F, class G = NoFinish>
void parallel_for_worker(std::ptrdiff_t n, F&& body, G&& finish = NoFinish{}) {
    const int nt = workers(n);
    if (nt <= 1) {
        for (std::ptrdiff_t i = 0; i < n; ++i) body(i, 0);
        finish(0);
        return;
    }
    const std::ptrdiff_t chunk = std::max<std::ptrdiff_t>(1, n / (16 * nt));
    std::atomic<std::ptrdiff_t> next{0};
    run_parallel(nt, [&](int t) {
        for (std::ptrdiff_t lo; (lo = next.fetch_add(chunk, std::memory_order_relaxed)) < n;)
            for (std::ptrdiff_t i = lo, hi = std::min(n, lo + chunk); i < hi; ++i) body(i, t);
        finish(t);
    });
}

template <class F>
void parallel_for(std::ptrdiff_t n, F&& body) {
    parallel_for_worker(n, [&](std::ptrdiff_t i, int) { body(i); });
}

}  // namespace icl
