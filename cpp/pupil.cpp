#include "pupil.hpp"

#include <cmath>
#include <memory>
#include <vector>

#include "common.hpp"
#include "convolve.hpp"

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

namespace {

// hypot(a, b) <= r (`below`) or hypot(a, b) >= r (not `below`), decided from a^2 + b^2 wherever its rounding
// (a few ulp) cannot change the answer; only points within 1e-12 of the circle (or NaN) take hypot, a library
// call that costs most of a cell.
inline bool hypot_vs(double a, double b, double r, bool below) {
    const double d2 = a * a + b * b, r2 = r * r;
    if (d2 < r2 * (1.0 - 1e-12)) return below;
    if (d2 > r2 * (1.0 + 1e-12)) return !below;
    const double h = std::hypot(a, b);
    return below ? h <= r : h >= r;
}

// Exact coverage of the cell centred at (x, y) of half-width `half`: the corner distances decide the cells
// wholly inside or outside; only edge cells need the integral.
inline double cell_coverage(double cx, double cy, double r, double x, double y, double half) {
    const double dx = std::fabs(x - cx), dy = std::fabs(y - cy);
    if (hypot_vs(dx + half, dy + half, r, true)) return 1.0;
    if (hypot_vs(std::max(dx - half, 0.0), std::max(dy - half, 0.0), r, false)) return 0.0;
    const double cell = 4.0 * half * half;
    return std::clamp(disk_rect_area(cx, cy, r, x - half, x + half, y - half, y + half) / cell, 0.0, 1.0);
}

// Complex product without the C99 NaN recovery of operator* (a library call per product); the same
// value for finite operands.
inline std::complex<double> mul(std::complex<double> a, std::complex<double> b) {
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

inline std::ptrdiff_t floor_div(std::ptrdiff_t a, std::ptrdiff_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline std::ptrdiff_t clamp_index(double v, std::ptrdiff_t n) {
    return static_cast<std::ptrdiff_t>(std::clamp(v, 0.0, static_cast<double>(n)));
}

// The cells of one row (n cells of pitch du, centres (j - c0) du, at height y) that need the exact test:
// cells outside [lo, hi) are 0 and cells in [a, b) are 1. The bounds come from the disk's chord with a margin
// of one cell (far above rounding), so every cell gets the value the exact test gives it.
struct RowSpan {
    std::ptrdiff_t lo = 0, hi = 0, a = 0, b = 0;
};

RowSpan row_span(double cx, double cy, double r, double y, double c0, std::ptrdiff_t n, double du) {
    RowSpan s;
    const double half = 0.5 * du, dy = std::fabs(y - cy);
    const double ny = std::max(dy - half, 0.0);
    if (ny >= r) return s;
    const double x1 = half + std::sqrt(r * r - ny * ny);  // a cell may be covered iff |x - cx| < x1
    s.lo = clamp_index(std::floor((cx - x1) / du + c0) - 1.0, n);
    s.hi = clamp_index(std::ceil((cx + x1) / du + c0) + 2.0, n);
    s.a = s.b = s.lo;
    const double fy = dy + half;
    if (fy < r) {
        const double x2 = std::sqrt(r * r - fy * fy) - half;  // wholly inside iff |x - cx| <= x2
        const std::ptrdiff_t a = clamp_index(std::ceil((cx - x2) / du + c0) + 1.0, n);
        const std::ptrdiff_t b = clamp_index(std::floor((cx + x2) / du + c0), n);
        if (b > a) { s.a = std::max(a, s.lo); s.b = std::min(b, s.hi); }
    }
    return s;
}

// Values of the cells [lo, a) and [b, hi) of a row (vals[j - lo]); [a, b) are 1.
void edge_cells(const RowSpan& s, double cx, double cy, double r, double y, double c0, double du, double* vals) {
    const double half = 0.5 * du;
    for (std::ptrdiff_t j = (s.lo == s.a ? s.b : s.lo); j < s.hi; j = (j + 1 == s.a ? s.b : j + 1))
        vals[j - s.lo] = cell_coverage(cx, cy, r, (static_cast<double>(j) - c0) * du, y, half);
}

}  // namespace

void disk_coverage(double cx, double cy, double r, std::ptrdiff_t n, double du, double* out) {
    const double c0 = 0.5 * static_cast<double>(n - 1);
    parallel_for(n, [&](std::ptrdiff_t i) {
        const double y = (static_cast<double>(i) - c0) * du;
        double* row = out + i * n;
        const RowSpan s = row_span(cx, cy, r, y, c0, n, du);
        std::fill(row, row + n, 0.0);
        std::fill(row + s.a, row + s.b, 1.0);
        edge_cells(s, cx, cy, r, y, c0, du, row + s.lo);
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
    // The fine coverage is 0 outside the disk, 1 inside and fractional only on a thin rim, so each filter pass
    // sums explicitly only where its window meets the rim: a window on the constant 1 adds the taps' prefix
    // sums (P[t] = taps[0] + ... + taps[t-1], summed in order, so a window wholly inside gives the same bits as
    // the plain sum). Fine rows outside [f_lo, f_hi) do not touch the disk.
    std::vector<double> prefix(static_cast<std::size_t>(len + 1), 0.0);
    for (std::ptrdiff_t t = 0; t < len; ++t) prefix[t + 1] = prefix[t] + taps[t];
    const double full = prefix[len];
    double inner = 0.0;  // a coarse cell whose every fine row is `full`: the v pass's plain sum
    for (std::ptrdiff_t t = 0; t < len; ++t) inner += taps[t] * full;
    const double c0 = 0.5 * static_cast<double>(w - 1);
    const std::ptrdiff_t f_lo = clamp_index(std::floor((cy - r) / h + c0) - 2.0, w);
    const std::ptrdiff_t f_hi = clamp_index(std::ceil((cy + r) / h + c0) + 3.0, w);
    const std::ptrdiff_t nf = f_hi - f_lo;
    // Pass along u for every fine row that may touch the disk: rows[(f - f_lo) n + j], coarse columns
    // [nz0, nz1) possibly non-zero, [in0, in1) with the window wholly on the 1s (value `full`).
    // Every entry of every row is written below: no zero-fill (the buffer is a few MB).
    std::unique_ptr<double[]> rows_buf(new double[static_cast<std::size_t>(nf * n)]);
    double* const rows = rows_buf.get();
    std::vector<std::ptrdiff_t> nz0(nf), nz1(nf), in0(nf), in1(nf);
    const int nw = workers(nf);
    std::vector<std::vector<double>> scratch(nw, std::vector<double>(static_cast<std::size_t>(w)));
    parallel_for_worker(nf, [&](std::ptrdiff_t fi, int worker) {
        const double y = (static_cast<double>(f_lo + fi) - c0) * h;
        const RowSpan sp = row_span(cx, cy, r, y, c0, w, h);
        double* row = rows + fi * n;
        double* vals = scratch[worker].data();
        edge_cells(sp, cx, cy, r, y, c0, h, vals);
        // Windows [off + s j, off + s j + len) meeting [lo, hi), and those inside [a, b).
        const std::ptrdiff_t j0 = sp.hi > sp.lo ? std::max<std::ptrdiff_t>(0, floor_div(sp.lo - off - len, s) + 1) : 0;
        const std::ptrdiff_t j1 = sp.hi > sp.lo ? std::clamp<std::ptrdiff_t>(floor_div(sp.hi - off - 1, s) + 1, j0, n) : 0;
        std::ptrdiff_t a0 = std::clamp<std::ptrdiff_t>(floor_div(sp.a - off + s - 1, s), j0, j1);
        std::ptrdiff_t a1 = std::clamp<std::ptrdiff_t>(floor_div(sp.b - len - off, s) + 1, j0, j1);
        if (a1 <= a0) a0 = a1 = j0;
        nz0[fi] = j0; nz1[fi] = j1; in0[fi] = a0; in1[fi] = a1;
        std::fill(row, row + j0, 0.0);
        std::fill(row + j1, row + n, 0.0);
        std::fill(row + a0, row + a1, full);
        auto window = [&](std::ptrdiff_t j) {
            const std::ptrdiff_t base = off + s * j, end = base + len;
            double acc = 0.0;
            for (std::ptrdiff_t c = std::max(sp.lo, base); c < std::min(sp.a, end); ++c) acc += taps[c - base] * vals[c - sp.lo];
            const std::ptrdiff_t oa = std::max(sp.a, base), ob = std::min(sp.b, end);
            if (ob > oa) acc += prefix[ob - base] - prefix[oa - base];
            for (std::ptrdiff_t c = std::max(sp.b, base); c < std::min(sp.hi, end); ++c) acc += taps[c - base] * vals[c - sp.lo];
            row[j] = acc;
        };
        for (std::ptrdiff_t j = j0; j < a0; ++j) window(j);
        for (std::ptrdiff_t j = a1; j < j1; ++j) window(j);
    });
    // Pass along v: coarse row i sums fine rows off + s i + t. Columns where every one of those rows is `full`
    // take `inner`; the rest of the columns any of them reaches are summed tap by tap (rows outside
    // [f_lo, f_hi) are zero and add nothing), as vectorisable sums over contiguous columns.
    std::vector<std::vector<const double*>> srcs(workers(n), std::vector<const double*>(static_cast<std::size_t>(len)));
    parallel_for_worker(n, [&](std::ptrdiff_t i, int worker) {
        double* o = out + i * n;
        const std::ptrdiff_t base = off + s * i - f_lo;  // rows index of tap 0
        const std::ptrdiff_t t0 = std::max<std::ptrdiff_t>(0, -base), t1 = std::min<std::ptrdiff_t>(len, nf - base);
        std::ptrdiff_t u0 = n, u1 = 0, i0 = 0, i1 = n;
        for (std::ptrdiff_t t = t0; t < t1; ++t) {
            const std::ptrdiff_t f = base + t;
            if (nz1[f] > nz0[f]) { u0 = std::min(u0, nz0[f]); u1 = std::max(u1, nz1[f]); }
            i0 = std::max(i0, in0[f]); i1 = std::min(i1, in1[f]);
        }
        if (t0 > 0 || t1 < len || t1 <= t0) i0 = i1 = 0;  // a tap on a row beyond the disk: no cell is wholly inside
        if (u1 <= u0) { std::fill(o, o + n, 0.0); return; }
        if (i1 <= i0) i0 = i1 = u0;
        std::fill(o, o + u0, 0.0);
        std::fill(o + u1, o + n, 0.0);
        std::fill(o + i0, o + i1, inner);
        // Taps t0 .. t1 - 1 summed in order from zero on the columns [c0_, c1_).
        const double** src = srcs[worker].data();
        auto segment = [&](std::ptrdiff_t c0_, std::ptrdiff_t c1_) {
            if (c1_ <= c0_) return;
            for (std::ptrdiff_t t = t0; t < t1; ++t) src[t - t0] = rows + (base + t) * n + c0_;
            sum_rows(taps.data() + t0, src, t1 - t0, o + c0_, c1_ - c0_);
        };
        segment(u0, i0);
        segment(i1, u1);
    });
}

void build_pupil(const PupilParams& p, std::ptrdiff_t n, double du, double wavelength,
                 std::complex<double>* out) {
    const std::size_t nn = static_cast<std::size_t>(n * n);
    // Coverages: each is written whole by disk_coverage_filtered (no zero-fill); no hole reads as 0.
    std::unique_ptr<double[]> pupil(new double[nn]), zone(new double[nn]);
    std::unique_ptr<double[]> hole(p.hole_diameter > 0.0 ? new double[nn] : nullptr);
    const std::vector<double>& taps = p.edge_taps;
    const int sub = p.edge_sub;
    disk_coverage_filtered(p.pupil_cu, p.pupil_cv, 0.5 * p.pupil_diameter, n, du, taps, sub, pupil.get());
    if (p.icl_present)
        disk_coverage_filtered(p.dec_u, p.dec_v, 0.5 * p.optic_zone_diameter, n, du, taps, sub, zone.get());
    if (hole) disk_coverage_filtered(p.dec_u, p.dec_v, 0.5 * p.hole_diameter, n, du, taps, sub, hole.get());
    const double c0 = 0.5 * static_cast<double>(n - 1);
    const double k = 2.0 * M_PI / wavelength;
    const double sa = std::sin(p.cyl_axis), ca = std::cos(p.cyl_axis);
    // The eye's wavefront is a sum of a function of u and one of v: its phase factor is the product of a row
    // and a column factor (no sine or cosine per cell).
    std::vector<std::complex<double>> eye_u(static_cast<std::size_t>(n)), eye_v(static_cast<std::size_t>(n));
    for (std::ptrdiff_t j = 0; j < n; ++j) {
        const double x = (static_cast<double>(j) - c0) * du;
        eye_u[j] = std::polar(1.0, k * (-0.5 * p.eye_excess * x * x + p.tilt_u * x));
        eye_v[j] = std::polar(1.0, k * (-0.5 * p.eye_excess * x * x + p.tilt_v * x));
    }
    parallel_for(n, [&](std::ptrdiff_t i) {
        const double v = (static_cast<double>(i) - c0) * du;
        for (std::ptrdiff_t j = 0; j < n; ++j) {
            const std::size_t idx = static_cast<std::size_t>(i * n + j);
            const double a_pupil = pupil[idx];
            if (a_pupil == 0.0) { out[idx] = 0.0; continue; }
            const std::complex<double> eye = mul(eye_v[i], eye_u[j]);
            if (!p.icl_present) { out[idx] = a_pupil * eye; continue; }
            const double u = (static_cast<double>(j) - c0) * du;
            const double du_c = u - p.dec_u, dv_c = v - p.dec_v;
            const double d_perp = -du_c * sa + dv_c * ca;
            double w_icl = -0.5 * p.icl_power * (du_c * du_c + dv_c * dv_c) - 0.5 * p.cyl_power * d_perp * d_perp;
            if (p.icl_piston != 0.0) w_icl += p.icl_piston;  // untouched without one: the same bits as before
            // Partial cells are split by area: a cell on two edges uses the product of coverages,
            // exact whenever one of the two edges does not cross that cell.
            const double f_hole = hole ? zone[idx] * hole[idx] : 0.0;
            const double f_optic = zone[idx] - f_hole;
            const double f_outside = 1.0 - zone[idx];
            double a_corrected = f_optic, a_eye_only = f_outside;
            if (p.hole == HoleMode::clear) a_eye_only += f_hole;
            else if (p.hole == HoleMode::index_matched) a_corrected += f_hole;
            const std::complex<double> icl = a_corrected == 0.0 ? 0.0 : std::polar(a_corrected, k * w_icl);
            out[idx] = a_pupil * mul(eye, a_eye_only + icl);
        }
    });
}

}  // namespace icl
