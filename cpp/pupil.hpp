// Complex pupil of the thin-phase eye (DESIGN.md section 3) on a square grid.
#pragma once
#include <complex>
#include <cstddef>

namespace icl {

enum class HoleMode : int { clear = 0, black = 1, index_matched = 2 };

// All lengths in metres, powers in dioptres, angles in radians.
struct PupilParams {
    double pupil_diameter = 3.2e-3;
    double pupil_cu = 0.0, pupil_cv = 0.0;  // pupil centre (the grid is centred on the origin)
    double eye_excess = 8.0;
    bool icl_present = true;
    double icl_power = -8.0;
    double cyl_power = 0.0;
    double cyl_axis = 0.0;
    double dec_u = 0.0, dec_v = 0.0;
    double optic_zone_diameter = 6.0e-3;
    double hole_diameter = 0.0;
    HoleMode hole = HoleMode::clear;
    double tilt_u = 0.0, tilt_v = 0.0;  // linear phase W = tilt . u (moves the pattern by +tilt)
};

// Exact area of the disk (cx, cy, r) inside the rectangle [x0, x1] x [y0, y1].
double disk_rect_area(double cx, double cy, double r, double x0, double x1, double y0, double y1);

// Area fraction of each n x n cell (pitch du, centres (m - (n-1)/2) du) covered by the disk.
void disk_coverage(double cx, double cy, double r, std::ptrdiff_t n, double du, double* out);

// Complex pupil P = A exp(2 pi i W / lambda), row index = v, column index = u.
void build_pupil(const PupilParams& p, std::ptrdiff_t n, double du, double wavelength,
                 std::complex<double>* out);

}  // namespace icl
