// Bindings for the ray tracer.
#include <pybind11/pybind11.h>

#include "raytrace.hpp"

namespace py = pybind11;

void register_raytrace(py::module_& m) { (void)m; }
