// FFTW plans cached by shape and reused through the new-array interface (thread-safe to execute).
#pragma once
#include <fftw3.h>

#include <complex>
#include <cstddef>
#include <string>

namespace icl {

// A batch of `howmany` contiguous complex transforms of length n (forward, out of place), in double and in
// single precision.
fftw_plan batch_c2c_plan(int n, int howmany);
fftwf_plan batch_c2c_plan_f(int n, int howmany);
// 2-D real-to-complex and complex-to-real plans of shape (n0, n1).
fftw_plan r2c_plan(int n0, int n1);
fftw_plan c2r_plan(int n0, int n1);
// Planner effort for new plans: FFTW_ESTIMATE (default) or FFTW_MEASURE; wisdom import/export (the double and
// the single-precision planner's wisdom, one after the other).
void set_planner_effort(unsigned flags);
bool import_wisdom(const char* text);
std::string export_wisdom();

// FFTW-aligned array of n complex values of precision T (float or double), uninitialised.
template <class T>
struct FftwArray {
    explicit FftwArray(std::size_t n) : n(n), data(static_cast<std::complex<T>*>(fftw_malloc(n * sizeof(std::complex<T>)))) {}
    ~FftwArray() { fftw_free(data); }
    FftwArray(const FftwArray&) = delete;
    FftwArray& operator=(const FftwArray&) = delete;
    std::complex<T>* get() { return data; }
    std::size_t n;
    std::complex<T>* data;
};

struct FftwBuffer {
    explicit FftwBuffer(std::size_t n) : n(n), data(fftw_alloc_complex(n)) {}
    ~FftwBuffer() { fftw_free(data); }
    FftwBuffer(const FftwBuffer&) = delete;
    FftwBuffer& operator=(const FftwBuffer&) = delete;
    std::complex<double>* get() { return reinterpret_cast<std::complex<double>*>(data); }
    fftw_complex* raw() { return data; }
    std::size_t n;
    fftw_complex* data;
};

}  // namespace icl
