// Shared helpers for the _core kernels: the thread pool size and a deterministic parallel loop.
#pragma once
#include <algorithm>
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
// buffers across its indices. Index i always goes to worker i % workers(n).
inline int workers(std::ptrdiff_t n) { return static_cast<int>(std::max<std::ptrdiff_t>(1, std::min<std::ptrdiff_t>(num_threads(), n))); }

template <class F>
void parallel_for_worker(std::ptrdiff_t n, F&& body) {
    const int nt = workers(n);
    if (nt <= 1) {
        for (std::ptrdiff_t i = 0; i < n; ++i) body(i, 0);
        return;
    }
    run_parallel(nt, [&](int t) {
        for (std::ptrdiff_t i = t; i < n; i += nt) body(i, t);
    });
}

template <class F>
void parallel_for(std::ptrdiff_t n, F&& body) {
    parallel_for_worker(n, [&](std::ptrdiff_t i, int) { body(i); });
}

}  // namespace icl
