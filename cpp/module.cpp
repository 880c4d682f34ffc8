// icl._core: the hot kernels of ICL-Bench. Each topic registers its own functions.
#include <pybind11/pybind11.h>

namespace py = pybind11;

void register_runtime(py::module_& m);
void register_optics(py::module_& m);
void register_raytrace(py::module_& m);

PYBIND11_MODULE(_core, m) {
    m.doc() = "C++ kernels of ICL-Bench: pupil, FFT propagation, convolution, ray tracing";
    register_runtime(m);
    register_optics(m);
    register_raytrace(m);
}
