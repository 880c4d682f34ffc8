// Bindings for the ray tracer: plain surface structs, arrays in, new arrays out, GIL released while tracing.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

#include "raytrace.hpp"

namespace py = pybind11;
using darray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using uarray = py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>;

namespace {

template <std::size_t K>
std::array<double, K> get_fixed(const double (&a)[K]) {
    std::array<double, K> out{};
    std::copy(a, a + K, out.begin());
    return out;
}

template <std::size_t K>
void set_fixed(double (&a)[K], const std::array<double, K>& v) {
    std::copy(v.begin(), v.end(), a);
}

}  // namespace

void register_raytrace(py::module_& m) {
    namespace rt = icl::rt;
    py::enum_<rt::Kind>(m, "SurfaceKind")
        .value("plane", rt::Kind::plane)
        .value("conic", rt::Kind::conic)
        .value("asphere", rt::Kind::asphere);

    py::class_<rt::Surface>(m, "RaySurface",
                            "One placed surface (mm): kind, curvature c, conic k, a4..a10, origin, rot (row-major "
                            "3x3, rows = local axes), annular aperture, optional hole wall, indices, reflect.")
        .def(py::init<>())
        .def_readwrite("kind", &rt::Surface::kind)
        .def_readwrite("c", &rt::Surface::c)
        .def_readwrite("k", &rt::Surface::k)
        .def_readwrite("a4", &rt::Surface::a4)
        .def_readwrite("a6", &rt::Surface::a6)
        .def_readwrite("a8", &rt::Surface::a8)
        .def_readwrite("a10", &rt::Surface::a10)
        .def_property("origin", [](const rt::Surface& s) { return get_fixed(s.origin); },
                      [](rt::Surface& s, const std::array<double, 3>& v) { set_fixed(s.origin, v); })
        .def_property("rot", [](const rt::Surface& s) { return get_fixed(s.rot); },
                      [](rt::Surface& s, const std::array<double, 9>& v) { set_fixed(s.rot, v); })
        .def_readwrite("r_inner", &rt::Surface::r_inner)
        .def_readwrite("r_outer", &rt::Surface::r_outer)
        .def_readwrite("wall_radius", &rt::Surface::wall_radius)
        .def_readwrite("wall_side", &rt::Surface::wall_side)
        .def_readwrite("n1", &rt::Surface::n1)
        .def_readwrite("n2", &rt::Surface::n2)
        .def_readwrite("reflect", &rt::Surface::reflect);

    py::class_<rt::Options>(m, "TraceOptions", "Switches of the tracer: apertures, Fresnel weights, optical path.")
        .def(py::init<>())
        .def_readwrite("apertures", &rt::Options::apertures)
        .def_readwrite("fresnel", &rt::Options::fresnel)
        .def_readwrite("opl", &rt::Options::opl)
        .def_readwrite("max_newton", &rt::Options::max_newton)
        .def_readwrite("newton_tol", &rt::Options::newton_tol);

    m.def("fresnel", [](double n1, double n2, const darray& ci) {
        if (!(n1 > 0 && n2 > 0)) throw std::invalid_argument("fresnel: indices must be positive");
        const auto cnt = static_cast<std::ptrdiff_t>(ci.size());
        std::array<darray, 6> out{darray(cnt), darray(cnt), darray(cnt), darray(cnt), darray(cnt), darray(cnt)};
        std::array<double*, 6> p{};
        for (int i = 0; i < 6; ++i) p[i] = out[i].mutable_data();
        const double* c = ci.data();
        {
            py::gil_scoped_release nogil;
            rt::fresnel(n1, n2, c, cnt, p[0], p[1], p[2], p[3], p[4], p[5]);
        }
        return py::make_tuple(out[0], out[1], out[2], out[3], out[4], out[5]);
    }, py::arg("n1"), py::arg("n2"), py::arg("cos_i"),
    "Unpolarised Fresnel coefficients (rs, rp, ts, tp, R, T) from index n1 into n2 at incidence cosines cos_i.");

    m.def("trace_rays", [](const std::vector<rt::Surface>& surfaces, const rt::Options& opt, const darray& x,
                           const darray& y, const darray& z, const darray& l, const darray& mm, const darray& n,
                           const darray& opl, const darray& w, const uarray& flags) {
        const auto cnt = x.size();
        for (const darray* a : {&y, &z, &l, &mm, &n, &opl, &w})
            if (a->size() != cnt) throw std::invalid_argument("trace_rays: ray arrays must have equal length");
        if (flags.size() != cnt) throw std::invalid_argument("trace_rays: flags must match the ray arrays");
        // New output arrays; the kernel reads the inputs and writes the outputs block by block (no copy pass).
        const auto c = static_cast<py::ssize_t>(cnt);
        std::array<darray, 8> o{darray(c), darray(c), darray(c), darray(c), darray(c), darray(c), darray(c),
                                darray(c)};
        uarray f(c);
        const rt::ConstRays in{x.data(), y.data(), z.data(), l.data(), mm.data(), n.data(), opl.data(), w.data(),
                               flags.data(), static_cast<std::ptrdiff_t>(cnt)};
        const rt::Rays out{o[0].mutable_data(), o[1].mutable_data(), o[2].mutable_data(), o[3].mutable_data(),
                           o[4].mutable_data(), o[5].mutable_data(), o[6].mutable_data(), o[7].mutable_data(),
                           f.mutable_data(), static_cast<std::ptrdiff_t>(cnt)};
        {
            py::gil_scoped_release nogil;
            rt::trace(surfaces.data(), static_cast<std::ptrdiff_t>(surfaces.size()), opt, in, out);
        }
        return py::make_tuple(o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], f);
    }, py::arg("surfaces"), py::arg("options"), py::arg("x"), py::arg("y"), py::arg("z"), py::arg("l"),
    py::arg("m"), py::arg("n"), py::arg("opl"), py::arg("w"), py::arg("flags"),
    "Trace rays (structure of arrays, mm) through the surfaces in order; returns new (x, y, z, l, m, n, opl, w, "
    "flags). Rays with a non-zero flag are left untouched.");

    // In place: no output arrays to allocate and first touch (at a million rays that costs more than tracing
    // through a few surfaces). The arrays must already be C-contiguous, writeable and of the right type: noconvert
    // refuses anything that would need a converted copy, whose update would be lost.
    using dinout = py::array_t<double, py::array::c_style>;
    using uinout = py::array_t<std::uint32_t, py::array::c_style>;
    m.def("trace_rays_inplace", [](const std::vector<rt::Surface>& surfaces, const rt::Options& opt, dinout& x,
                                   dinout& y, dinout& z, dinout& l, dinout& mm, dinout& n, dinout& opl, dinout& w,
                                   uinout& flags) {
        const auto cnt = x.size();
        for (dinout* a : {&x, &y, &z, &l, &mm, &n, &opl, &w}) {
            if (a->size() != cnt) throw std::invalid_argument("trace_rays_inplace: ray arrays must have equal length");
            if (!a->writeable()) throw std::invalid_argument("trace_rays_inplace: ray arrays must be writeable");
        }
        if (flags.size() != cnt || !flags.writeable())
            throw std::invalid_argument("trace_rays_inplace: flags must be writeable and match the ray arrays");
        const rt::Rays rays{x.mutable_data(), y.mutable_data(), z.mutable_data(), l.mutable_data(), mm.mutable_data(),
                            n.mutable_data(), opl.mutable_data(), w.mutable_data(), flags.mutable_data(),
                            static_cast<std::ptrdiff_t>(cnt)};
        {
            py::gil_scoped_release nogil;
            rt::trace(surfaces.data(), static_cast<std::ptrdiff_t>(surfaces.size()), opt, rays);
        }
    }, py::arg("surfaces"), py::arg("options"), py::arg("x").noconvert(), py::arg("y").noconvert(),
    py::arg("z").noconvert(), py::arg("l").noconvert(), py::arg("m").noconvert(), py::arg("n").noconvert(),
    py::arg("opl").noconvert(), py::arg("w").noconvert(), py::arg("flags").noconvert(),
    "Trace rays (C-contiguous float64 arrays and uint32 flags, mm) through the surfaces in order, overwriting "
    "them. Rays with a non-zero flag are left untouched.");
}
