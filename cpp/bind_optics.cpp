// Bindings for the thin-phase optics kernels: arrays in, arrays out, GIL released while computing.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>

#include "common.hpp"
#include "convolve.hpp"
#include "fft.hpp"
#include "psf.hpp"
#include "pupil.hpp"

namespace py = pybind11;
using carray = py::array_t<std::complex<double>, py::array::c_style | py::array::forcecast>;
using darray = py::array_t<double, py::array::c_style | py::array::forcecast>;

namespace {

void require(bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(what);
}

}  // namespace

void register_runtime(py::module_& m) {
#ifdef ICL_FFTW_THREADS
    fftw_make_planner_thread_safe();  // other FFTW users in this process may plan concurrently
#endif
#ifdef ICL_FFTWF_THREADS
    fftwf_make_planner_thread_safe();
#endif
    m.def("num_threads", &icl::num_threads, "Worker threads used by the kernels.");
    m.def("set_num_threads", &icl::set_num_threads, py::arg("n"),
          "Set the worker threads (results do not depend on this number).");
    m.def("set_planner_measure", [](bool measure) { icl::set_planner_effort(measure ? FFTW_MEASURE : FFTW_ESTIMATE); },
          py::arg("measure"), "Plan new FFTs with FFTW_MEASURE (True) or FFTW_ESTIMATE (False).");
    m.def("import_wisdom", [](const std::string& s) { return icl::import_wisdom(s.c_str()); }, py::arg("text"));
    m.def("export_wisdom", &icl::export_wisdom);
    m.def("fast_length", &icl::fast_length, py::arg("n"), "Smallest 7-smooth integer >= n.");
}

void register_optics(py::module_& m) {
    py::enum_<icl::HoleMode>(m, "HoleMode")
        .value("clear", icl::HoleMode::clear)
        .value("black", icl::HoleMode::black)
        .value("index_matched", icl::HoleMode::index_matched);

    py::class_<icl::PupilParams>(m, "PupilParams", "Thin-phase pupil parameters in SI units (m, D, rad).")
        .def(py::init<>())
        .def_readwrite("pupil_diameter", &icl::PupilParams::pupil_diameter)
        .def_readwrite("pupil_cu", &icl::PupilParams::pupil_cu)
        .def_readwrite("pupil_cv", &icl::PupilParams::pupil_cv)
        .def_readwrite("eye_excess", &icl::PupilParams::eye_excess)
        .def_readwrite("icl_present", &icl::PupilParams::icl_present)
        .def_readwrite("icl_power", &icl::PupilParams::icl_power)
        .def_readwrite("cyl_power", &icl::PupilParams::cyl_power)
        .def_readwrite("cyl_axis", &icl::PupilParams::cyl_axis)
        .def_readwrite("icl_piston", &icl::PupilParams::icl_piston)
        .def_readwrite("dec_u", &icl::PupilParams::dec_u)
        .def_readwrite("dec_v", &icl::PupilParams::dec_v)
        .def_readwrite("optic_zone_diameter", &icl::PupilParams::optic_zone_diameter)
        .def_readwrite("hole_diameter", &icl::PupilParams::hole_diameter)
        .def_readwrite("hole", &icl::PupilParams::hole)
        .def_readwrite("tilt_u", &icl::PupilParams::tilt_u)
        .def_readwrite("tilt_v", &icl::PupilParams::tilt_v)
        .def_readwrite("edge_taps", &icl::PupilParams::edge_taps,
                       "Symmetric taps (fine-cell offsets) filtering every aperture's coverage; empty: plain coverage.")
        .def_readwrite("edge_sub", &icl::PupilParams::edge_sub, "Fine cells per grid cell for the filtered coverage.");

    m.def("disk_coverage", [](double cx, double cy, double r, std::ptrdiff_t n, double du) {
        require(n > 0 && du > 0 && r >= 0, "disk_coverage: need n > 0, du > 0, r >= 0");
        darray out({n, n});
        double* o = out.mutable_data();
        { py::gil_scoped_release nogil; icl::disk_coverage(cx, cy, r, n, du, o); }
        return out;
    }, py::arg("cx"), py::arg("cy"), py::arg("r"), py::arg("n"), py::arg("du"),
    "Exact area fraction of each cell of an n x n grid (pitch du, centred) inside a disk.");

    m.def("disk_coverage_filtered", [](double cx, double cy, double r, std::ptrdiff_t n, double du,
                                       const std::vector<double>& taps, int sub) {
        require(n > 0 && du > 0 && r >= 0 && sub >= 1, "disk_coverage_filtered: need n > 0, du > 0, r >= 0, sub >= 1");
        require(taps.empty() || static_cast<int>(taps.size() % 2) == sub % 2,
                "disk_coverage_filtered: the taps' length and sub must have the same parity");
        darray out({n, n});
        double* o = out.mutable_data();
        { py::gil_scoped_release nogil; icl::disk_coverage_filtered(cx, cy, r, n, du, taps, sub, o); }
        return out;
    }, py::arg("cx"), py::arg("cy"), py::arg("r"), py::arg("n"), py::arg("du"), py::arg("taps"), py::arg("sub"),
    "Coverage of a disk on cells sub times finer, filtered by symmetric taps along both axes onto the n x n grid.");

    m.def("build_pupil", [](const icl::PupilParams& p, std::ptrdiff_t n, double du, double wavelength) {
        require(n > 0 && du > 0 && wavelength > 0, "build_pupil: need n > 0, du > 0, wavelength > 0");
        require(p.edge_sub >= 1 && (p.edge_taps.empty() || static_cast<int>(p.edge_taps.size() % 2) == p.edge_sub % 2),
                "build_pupil: edge_sub >= 1 and the edge taps' length of the same parity");
        carray out({n, n});
        auto* o = out.mutable_data();
        { py::gil_scoped_release nogil; icl::build_pupil(p, n, du, wavelength, o); }
        return out;
    }, py::arg("params"), py::arg("n"), py::arg("du"), py::arg("wavelength"),
    "Complex pupil A exp(2 pi i W / lambda) on an n x n grid of pitch du (m); rows follow v, columns u.");

    m.def("psf_window", [](const carray& pupil, std::ptrdiff_t m_fft, std::ptrdiff_t s, double scale, bool single) {
        require(pupil.ndim() == 2 && pupil.shape(0) == pupil.shape(1), "psf_window: pupil must be square");
        const std::ptrdiff_t n = pupil.shape(0);
        require(n <= m_fft && s <= m_fft && s > 0, "psf_window: need n <= m and 0 < s <= m");
        darray out({s, s});
        double* o = out.mutable_data();
        const auto* p = pupil.data();
        { py::gil_scoped_release nogil; icl::psf_window(p, n, m_fft, s, scale, single, o); }
        return out;
    }, py::arg("pupil"), py::arg("m"), py::arg("s"), py::arg("scale"), py::arg("single") = false,
    "scale * |FFT_m(pupil)|^2 on the centred s x s window of angular indices -s/2 .. s/2-1; single: the "
    "transforms in single precision.");

    m.def("field_energy", [](const carray& a) {
        const auto* p = reinterpret_cast<const double*>(a.data());
        const std::ptrdiff_t n = 2 * a.size();
        py::gil_scoped_release nogil;
        return icl::sum_squares(p, n);
    }, py::arg("a"), "Sum of |a|^2 over a complex array (eight lanes, then the lanes in order: the same bits on every machine).");

    m.def("place_separable", [](const darray& s, const darray& ty, const darray& tx, std::ptrdiff_t r0,
                                std::ptrdiff_t c0, std::ptrdiff_t n0, std::ptrdiff_t n1) {
        require(s.ndim() == 2 && ty.ndim() == 1 && tx.ndim() == 1 && n0 > 0 && n1 > 0,
                "place_separable: need a 2-D map, 1-D taps and a positive output shape");
        darray out({n0, n1});
        double* o = out.mutable_data();
        const double *sp = s.data(), *typ = ty.data(), *txp = tx.data();
        const auto s0 = s.shape(0), s1 = s.shape(1), nty = ty.shape(0), ntx = tx.shape(0);
        { py::gil_scoped_release nogil; icl::place_separable(sp, s0, s1, typ, nty, txp, ntx, r0, c0, n0, n1, o); }
        return out;
    }, py::arg("s"), py::arg("ty"), py::arg("tx"), py::arg("r0"), py::arg("c0"), py::arg("n0"), py::arg("n1"),
    "out[i,j] = sum_ab ty[a] tx[b] s[r0+i+a, c0+j+b] (zero outside s).");

    m.def("place_polyphase", [](const darray& s, const darray& ty, const darray& tx,
                                const py::array_t<std::ptrdiff_t, py::array::c_style | py::array::forcecast>& r0,
                                const py::array_t<std::ptrdiff_t, py::array::c_style | py::array::forcecast>& c0,
                                std::ptrdiff_t n0, std::ptrdiff_t n1, double scale, std::optional<py::array> out,
                                std::optional<py::array> row_sums, bool single) {
        require(s.ndim() == 2 && ty.ndim() == 2 && tx.ndim() == 2 && r0.ndim() == 1 && c0.ndim() == 1,
                "place_polyphase: need a 2-D map, (q, taps) tap tables and (q,) offsets");
        const auto q = ty.shape(0);
        require(q > 0 && tx.shape(0) == q && r0.shape(0) == q && c0.shape(0) == q && n0 > 0 && n1 > 0,
                "place_polyphase: tap tables and offsets must all have q rows; output shape positive");
        // Outputs are written in place: each given one must be a C-contiguous, writeable float64 array of its shape.
        auto writable = [](py::array& a, std::ptrdiff_t d0, std::ptrdiff_t d1, const char* what) {
            require(a.dtype().is(py::dtype::of<double>()) && a.ndim() == (d1 ? 2 : 1) && a.shape(0) == d0 &&
                        (!d1 || a.shape(1) == d1) && (a.flags() & py::array::c_style) && a.writeable(), what);
            return static_cast<double*>(a.mutable_data());
        };
        py::array res = out ? *out : py::array(darray({n0, n1}));
        double* o = writable(res, n0, n1, "place_polyphase: out must be a C-contiguous, writeable float64 array of shape (n0, n1)");
        double* rs = row_sums ? writable(*row_sums, n0, 0, "place_polyphase: row_sums must be a writeable float64 array of shape (n0,)") : nullptr;
        const double *sp = s.data(), *typ = ty.data(), *txp = tx.data();
        const std::ptrdiff_t *r0p = r0.data(), *c0p = c0.data();
        const auto s0 = s.shape(0), s1 = s.shape(1), nty = ty.shape(1), ntx = tx.shape(1);
        {
            py::gil_scoped_release nogil;
            icl::place_polyphase(sp, s0, s1, typ, nty, txp, ntx, r0p, c0p, q, n0, n1, scale, o, rs, single);
        }
        return res;
    }, py::arg("s"), py::arg("ty"), py::arg("tx"), py::arg("r0"), py::arg("c0"), py::arg("n0"), py::arg("n1"),
    py::arg("scale") = 1.0, py::arg("out") = py::none(), py::arg("row_sums") = py::none(),
    py::arg("single") = false,
    "Polyphase placement: output (i, j) uses phase (i % q, j % q) taps and offsets r0[i % q] + i // q, "
    "c0[j % q] + j // q; times scale, written into out (a float64 (n0, n1) array) when given; row_sums (n0,) "
    "receives each row's sum (eight lanes, then the lanes in order), when given. "
    "single: samples, taps and filter sums in float (the scale and outputs in double).");

    m.def("convolve_linear", [](const darray& a, const darray& k, std::ptrdiff_t r0, std::ptrdiff_t c0,
                                std::ptrdiff_t n0, std::ptrdiff_t n1) {
        require(a.ndim() == 2 && k.ndim() == 2 && n0 > 0 && n1 > 0, "convolve_linear: need 2-D arrays");
        darray out({n0, n1});
        double* o = out.mutable_data();
        const double *ap = a.data(), *kp = k.data();
        const auto a0 = a.shape(0), a1 = a.shape(1), k0 = k.shape(0), k1 = k.shape(1);
        { py::gil_scoped_release nogil; icl::convolve_linear(ap, a0, a1, kp, k0, k1, r0, c0, n0, n1, o); }
        return out;
    }, py::arg("a"), py::arg("k"), py::arg("r0"), py::arg("c0"), py::arg("n0"), py::arg("n1"),
    "Window of the full zero-padded linear convolution a * k starting at (r0, c0).");
}
