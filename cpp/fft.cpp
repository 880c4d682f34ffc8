#include "fft.hpp"

#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace icl {
namespace {

std::mutex planner_mutex;  // the FFTW planner itself is not thread-safe
unsigned planner_effort = FFTW_ESTIMATE;
std::map<std::tuple<int, int, int, int, unsigned>, fftw_plan> plans;

template <class Make>
fftw_plan cached(int kind, int a, int b, int c, Make make) {
    std::lock_guard<std::mutex> lock(planner_mutex);
    const auto key = std::make_tuple(kind, a, b, c, planner_effort);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    fftw_plan p = make(planner_effort);
    plans.emplace(key, p);
    return p;
}

}  // namespace

fftw_plan batch_c2c_plan(int n, int howmany) {
    return cached(0, n, howmany, 0, [&](unsigned flags) {
        FftwBuffer in(static_cast<std::size_t>(n) * howmany), out(static_cast<std::size_t>(n) * howmany);
        return fftw_plan_many_dft(1, &n, howmany, in.raw(), nullptr, 1, n, out.raw(), nullptr, 1, n,
                                  FFTW_FORWARD, flags);
    });
}

fftwf_plan batch_c2c_plan_f(int n, int howmany) {
    // The single-precision planner keeps its own plans: kind 3 in the cache, the plan stored as a pointer.
    return reinterpret_cast<fftwf_plan>(cached(3, n, howmany, 0, [&](unsigned flags) {
        const std::size_t size = static_cast<std::size_t>(n) * howmany;
        fftwf_complex* in = fftwf_alloc_complex(size);
        fftwf_complex* out = fftwf_alloc_complex(size);
        fftwf_plan p = fftwf_plan_many_dft(1, &n, howmany, in, nullptr, 1, n, out, nullptr, 1, n, FFTW_FORWARD, flags);
        fftwf_free(in);
        fftwf_free(out);
        return reinterpret_cast<fftw_plan>(p);
    }));
}

fftw_plan r2c_plan(int n0, int n1) {
    return cached(1, n0, n1, 0, [&](unsigned flags) {
        double* in = fftw_alloc_real(static_cast<std::size_t>(n0) * n1);
        FftwBuffer out(static_cast<std::size_t>(n0) * (n1 / 2 + 1));
        fftw_plan p = fftw_plan_dft_r2c_2d(n0, n1, in, out.raw(), flags);
        fftw_free(in);
        return p;
    });
}

fftw_plan c2r_plan(int n0, int n1) {
    return cached(2, n0, n1, 0, [&](unsigned flags) {
        double* out = fftw_alloc_real(static_cast<std::size_t>(n0) * n1);
        FftwBuffer in(static_cast<std::size_t>(n0) * (n1 / 2 + 1));
        fftw_plan p = fftw_plan_dft_c2r_2d(n0, n1, in.raw(), out, flags);
        fftw_free(out);
        return p;
    });
}

void set_planner_effort(unsigned flags) {
    std::lock_guard<std::mutex> lock(planner_mutex);
    planner_effort = flags;
}

bool import_wisdom(const char* text) {
    // The text holds one block per planner, "(fftw-3.x fftw_wisdom ...)" and "(fftw-3.x fftwf_wisdom ...)";
    // each goes to its own planner (older files hold the double block alone).
    std::lock_guard<std::mutex> lock(planner_mutex);
    const std::string all(text);
    bool ok = true;
    std::size_t start = all.find("(fftw-");
    if (start == std::string::npos) return fftw_import_wisdom_from_string(text) != 0;
    while (start != std::string::npos) {
        const std::size_t next = all.find("(fftw-", start + 1);
        const std::string block = all.substr(start, next == std::string::npos ? std::string::npos : next - start);
        const bool single = block.substr(0, block.find('\n')).find("fftwf_wisdom") != std::string::npos;
        ok = (single ? fftwf_import_wisdom_from_string(block.c_str()) : fftw_import_wisdom_from_string(block.c_str())) != 0 && ok;
        start = next;
    }
    return ok;
}

std::string export_wisdom() {
    std::lock_guard<std::mutex> lock(planner_mutex);
    char* d = fftw_export_wisdom_to_string();
    char* f = fftwf_export_wisdom_to_string();
    std::string out = std::string(d ? d : "") + std::string(f ? f : "");
    fftw_free(d);
    fftwf_free(f);
    return out;
}

}  // namespace icl
