#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common.hpp"

namespace icl {
namespace {

std::atomic<int> threads{1};

// Helper threads 1 .. size() wait for a new generation, run job(t) if t < nt and count down `pending`.
struct Pool {
    std::mutex m;
    std::condition_variable wake, done;
    std::vector<std::thread> helpers;
    const std::function<void(int)>* job = nullptr;
    int nt = 0, pending = 0;
    std::uint64_t generation = 0;
    std::mutex busy;  // held by the call that uses the helpers
};

// The pool and the mutex guarding its creation. Never destroyed (the helpers block until the process ends);
// a child process after fork() has only the forking thread, so it starts afresh and abandons the parent's.
struct Globals {
    std::mutex create;
    Pool* pool = nullptr;
};
Globals* globals = new Globals;
thread_local bool in_helper = false;

void helper(Pool* p, int t) {
    in_helper = true;
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(p->m);
    for (;;) {
        p->wake.wait(lock, [&] { return p->generation != seen; });
        seen = p->generation;
        if (t >= p->nt) continue;
        const std::function<void(int)>* job = p->job;
        lock.unlock();
        (*job)(t);
        lock.lock();
        if (--p->pending == 0) p->done.notify_one();
    }
}

void own_threads(int nt, const std::function<void(int)>& job) {
    std::vector<std::thread> ts;
    ts.reserve(static_cast<std::size_t>(nt - 1));
    for (int t = 1; t < nt; ++t) ts.emplace_back([&job, t] { job(t); });
    job(0);
    for (auto& th : ts) th.join();
}

void after_fork_in_child() { globals = new Globals; }

}  // namespace

int num_threads() { return threads.load(); }
void set_num_threads(int n) { threads.store(n < 1 ? 1 : n); }

void run_parallel(int nt, const std::function<void(int)>& job) {
    static std::once_flag atfork;
    std::call_once(atfork, [] { pthread_atfork(nullptr, nullptr, after_fork_in_child); });
    if (in_helper) return own_threads(nt, job);
    Pool* p;
    {
        Globals* g = globals;
        std::lock_guard<std::mutex> lock(g->create);
        if (g->pool == nullptr) g->pool = new Pool;
        p = g->pool;
    }
    std::unique_lock<std::mutex> busy(p->busy, std::try_to_lock);
    if (!busy.owns_lock()) return own_threads(nt, job);
    {
        std::lock_guard<std::mutex> lock(p->m);
        while (static_cast<int>(p->helpers.size()) < nt - 1) {
            p->helpers.emplace_back(helper, p, static_cast<int>(p->helpers.size()) + 1);
            p->helpers.back().detach();
        }
        p->job = &job;
        p->nt = nt;
        p->pending = nt - 1;
        ++p->generation;
    }
    p->wake.notify_all();
    std::exception_ptr error;  // the helpers still use `job`: wait for them before passing an error on
    try {
        job(0);
    } catch (...) {
        error = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(p->m);
    p->done.wait(lock, [&] { return p->pending == 0; });
    if (error) std::rethrow_exception(error);
}

}  // namespace icl
