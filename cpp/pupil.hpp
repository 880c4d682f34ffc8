// Complex pupil of the thin-phase eye (DESIGN.md section 3) on a square grid.
#pragma once
#include <complex>
#include <cstddef>
#include <vector>

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
    double icl_piston = 0.0;  // optical path (m) the optic adds over the hole and the zone's outside
    double dec_u = 0.0, dec_v = 0.0;
    double optic_zone_diameter = 6.0e-3;
    double hole_diameter = 0.0;
    HoleMode hole = HoleMode::clear;
    double tilt_u = 0.0, tilt_v = 0.0;  // linear phase W = tilt . u (moves the pattern by +tilt)
    // Anti-aliasing, cell-transfer-compensating filter of every aperture's coverage: the coverage is taken
    // on cells edge_sub times finer and filtered by the symmetric taps (fine-cell offsets) onto the grid
    // (see disk_coverage_filtered). Empty taps: plain cell coverage.
    std::vector<double> edge_taps;
    int edge_sub = 1;
};

// Exact area of the disk (cx, cy, r) inside the rectangle [x0, x1] x [y0, y1].
double disk_rect_area(double cx, double cy, double r, double x0, double x1, double y0, double y1);

// Area fraction of each n x n cell (pitch du, centres (m - (n-1)/2) du) covered by the disk.
void disk_coverage(double cx, double cy, double r, std::ptrdiff_t n, double du, double* out);

// Coverage of the disk on cells `sub` times finer (the same centre, wide enough that the filter sees every
// neighbour), filtered along both axes by the symmetric taps and decimated onto the n x n grid of pitch du:
// out[i, j] = sum_ab taps[a] taps[b] fine[s i + a + o, s j + b + o]. The taps sit at fine-cell offsets
// (t - (L - 1) / 2) / sub cells from each coarse centre, so L and sub must have the same parity.
void disk_coverage_filtered(double cx, double cy, double r, std::ptrdiff_t n, double du, const std::vector<double>& taps,
                            int sub, double* out);

// Complex pupil P = A exp(2 pi i W / lambda), row index = v, column index = u.
void build_pupil(const PupilParams& p, std::ptrdiff_t n, double du, double wavelength,
                 std::complex<double>* out);

}  // namespace icl
