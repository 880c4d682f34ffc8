#include "pupil.hpp"

#include <cmath>
#include <vector>

#include "common.hpp"

namespace icl {
namespace {

// Antiderivative of sqrt(r^2 - x^2) on [-r, r].
double half_chord_integral(double x, double r) {
    x = std::clamp(x, -r, r);
    return 0.5 * (x * std::sqrt(std::max(r * r - x * x, 0.0)) + r * r * std::asin(x / r));
}

}  // namespace

double disk_rect_area(double cx, double cy, double r, double x0, double x1, double y0, double y1) {
    // Integrate, over x, the length of [y0, y1] inside the chord [-h(x), h(x)], h = sqrt(r^2 - x^2).
    // The integrand is piecewise {0, y1 - y0, h - y0, y1 + h, 2h}; its pieces change only where
    // h(x) = |y0| or |y1|, so integrate each piece exactly with the antiderivative of h.
    x0 -= cx; x1 -= cx; y0 -= cy; y1 -= cy;
    double a = std::max(x0, -r), b = std::min(x1, r);
    if (a >= b || y0 >= r || y1 <= -r) return 0.0;
    double pts[6];
    int np = 0;
    pts[np++] = a;
    for (double y : {y0, y1}) {
        if (std::fabs(y) < r) {
            const double xs = std::sqrt(r * r - y * y);
            if (xs > a && xs < b) pts[np++] = xs;
            if (-xs > a && -xs < b) pts[np++] = -xs;
        }
    }
    pts[np++] = b;
    std::sort(pts, pts + np);
    double area = 0.0;
    for (int k = 0; k + 1 < np; ++k) {
        const double lo = pts[k], hi = pts[k + 1];
        if (hi <= lo) continue;
        const double mid = 0.5 * (lo + hi);
        const double h = std::sqrt(std::max(r * r - mid * mid, 0.0));
        const bool top_is_h = h < y1, bottom_is_h = -h > y0;
        if (std::min(y1, h) <= std::max(y0, -h)) continue;  // chord misses the strip here
        const double hint = half_chord_integral(hi, r) - half_chord_integral(lo, r);
        const double top = top_is_h ? hint : y1 * (hi - lo);
        const double bottom = bottom_is_h ? -hint : y0 * (hi - lo);
        area += top - bottom;
    }
    return area;
}

void disk_coverage(double cx, double cy, double r, std::ptrdiff_t n, double du, double* out) {
    const double c0 = 0.5 * static_cast<double>(n - 1);
    const double half = 0.5 * du, cell = du * du;
    // Corner distances decide the cells wholly inside or outside; only edge cells need the integral.
    parallel_for(n, [&](std::ptrdiff_t i) {
        const double y = (static_cast<double>(i) - c0) * du;
        for (std::ptrdiff_t j = 0; j < n; ++j) {
            const double x = (static_cast<double>(j) - c0) * du;
            const double dx = std::fabs(x - cx), dy = std::fabs(y - cy);
            const double far = std::hypot(dx + half, dy + half);
            const double nx = std::max(dx - half, 0.0), ny = std::max(dy - half, 0.0);
            const double near = std::hypot(nx, ny);
            double v;
            if (far <= r) v = 1.0;
            else if (near >= r) v = 0.0;
            else v = std::clamp(disk_rect_area(cx, cy, r, x - half, x + half, y - half, y + half) / cell, 0.0, 1.0);
            out[i * n + j] = v;
        }
    });
}

void disk_coverage_filtered(double cx, double cy, double r, std::ptrdiff_t n, double du, const std::vector<double>& taps,
                            int sub, double* out) {
    const std::ptrdiff_t len = static_cast<std::ptrdiff_t>(taps.size()), s = sub;
    if (len == 0) { disk_coverage(cx, cy, r, n, du, out); return; }
    // Coarse centre i sits at fine index s K + s i + (s - 1) / 2; tap t at fine index s K + s i + (s - len) / 2 + t.
    const std::ptrdiff_t k = (len - s + 2 * s - 1) / (2 * s) + 1;
    const std::ptrdiff_t w = s * (n + 2 * k), off = s * k + (s - len) / 2;
    const double h = du / static_cast<double>(s);
    // Wholly inside or outside the disk: the filter (unit sum) keeps the constant.
    const double half_w = 0.5 * static_cast<double>(w) * h;
    if (std::hypot(std::fabs(cx) + half_w, std::fabs(cy) + half_w) <= r) { std::fill(out, out + n * n, 1.0); return; }
    std::vector<double> fine(static_cast<std::size_t>(w * w)), rows(static_cast<std::size_t>(w * n), 0.0);
    disk_coverage(cx, cy, r, w, h, fine.data());
    // Along u for every fine row that touches the disk, then along v.
    const double c0 = 0.5 * static_cast<double>(w - 1);
    parallel_for(w, [&](std::ptrdiff_t i) {
        const double y = (static_cast<double>(i) - c0) * h;
        if (std::fabs(y - cy) > r + h) return;
        const double* src = fine.data() + i * w + off;
        for (std::ptrdiff_t j = 0; j < n; ++j) {
            double acc = 0.0;
            for (std::ptrdiff_t t = 0; t < len; ++t) acc += taps[t] * src[s * j + t];
            rows[i * n + j] = acc;
        }
    });
    parallel_for(n, [&](std::ptrdiff_t i) {
        for (std::ptrdiff_t j = 0; j < n; ++j) {
            double acc = 0.0;
            for (std::ptrdiff_t t = 0; t < len; ++t) acc += taps[t] * rows[(s * i + off + t) * n + j];
            out[i * n + j] = acc;
        }
    });
}

void build_pupil(const PupilParams& p, std::ptrdiff_t n, double du, double wavelength,
                 std::complex<double>* out) {
    const std::size_t nn = static_cast<std::size_t>(n * n);
    std::vector<double> pupil(nn), zone(nn), hole(nn, 0.0);
    const std::vector<double>& taps = p.edge_taps;
    const int sub = p.edge_sub;
    disk_coverage_filtered(p.pupil_cu, p.pupil_cv, 0.5 * p.pupil_diameter, n, du, taps, sub, pupil.data());
    disk_coverage_filtered(p.dec_u, p.dec_v, 0.5 * p.optic_zone_diameter, n, du, taps, sub, zone.data());
    if (p.hole_diameter > 0.0)
        disk_coverage_filtered(p.dec_u, p.dec_v, 0.5 * p.hole_diameter, n, du, taps, sub, hole.data());
    const double c0 = 0.5 * static_cast<double>(n - 1);
    const double k = 2.0 * M_PI / wavelength;
    const double sa = std::sin(p.cyl_axis), ca = std::cos(p.cyl_axis);
    parallel_for(n, [&](std::ptrdiff_t i) {
        const double v = (static_cast<double>(i) - c0) * du;
        for (std::ptrdiff_t j = 0; j < n; ++j) {
            const std::size_t idx = static_cast<std::size_t>(i * n + j);
            const double a_pupil = pupil[idx];
            if (a_pupil == 0.0) { out[idx] = 0.0; continue; }
            const double u = (static_cast<double>(j) - c0) * du;
            const double w_eye = -0.5 * p.eye_excess * (u * u + v * v) + p.tilt_u * u + p.tilt_v * v;
            if (!p.icl_present) { out[idx] = std::polar(a_pupil, k * w_eye); continue; }
            const double du_c = u - p.dec_u, dv_c = v - p.dec_v;
            const double d_perp = -du_c * sa + dv_c * ca;
            const double w_icl = -0.5 * p.icl_power * (du_c * du_c + dv_c * dv_c) - 0.5 * p.cyl_power * d_perp * d_perp;
            // Partial cells are split by area: a cell on two edges uses the product of coverages,
            // exact whenever one of the two edges does not cross that cell.
            const double f_hole = zone[idx] * hole[idx];
            const double f_optic = zone[idx] - f_hole;
            const double f_outside = 1.0 - zone[idx];
            double a_corrected = f_optic, a_eye_only = f_outside;
            if (p.hole == HoleMode::clear) a_eye_only += f_hole;
            else if (p.hole == HoleMode::index_matched) a_corrected += f_hole;
            const std::complex<double> eye = std::polar(1.0, k * w_eye);
            const std::complex<double> icl = std::polar(1.0, k * w_icl);
            out[idx] = a_pupil * eye * (a_eye_only + a_corrected * icl);
        }
    });
}

}  // namespace icl
