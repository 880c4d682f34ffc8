// Shared helpers for the _core kernels: the thread pool size and a deterministic parallel loop.
#pragma once
#include <algorithm>
#include <cstddef>
#include <thread>
#include <vector>

namespace icl {

// Number of worker threads used by every kernel (1 = serial). Work is split into fixed chunks whose
// arithmetic does not depend on the thread count, so results are bit-identical for any setting.
int num_threads();
void set_num_threads(int n);

template <class F>
void parallel_for(std::ptrdiff_t n, F&& body) {
    const int nt = static_cast<int>(std::min<std::ptrdiff_t>(num_threads(), n));
    if (nt <= 1) {
        for (std::ptrdiff_t i = 0; i < n; ++i) body(i);
        return;
    }
    std::vector<std::thread> pool;
    pool.reserve(nt);
    for (int t = 0; t < nt; ++t) {
        pool.emplace_back([&, t] {
            for (std::ptrdiff_t i = t; i < n; i += nt) body(i);
        });
    }
    for (auto& th : pool) th.join();
}

}  // namespace icl
