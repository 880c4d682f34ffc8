#include "raytrace.hpp"

#include <algorithm>
#include <cmath>

#include "common.hpp"

namespace icl::rt {
namespace {

constexpr std::ptrdiff_t kBlock = 4096;  // rays per work item: fits the nine arrays in L2

// Sag z(r^2) and its derivative dz/d(r^2) of the conic + even polynomial; ok = false outside the conic zone.
inline void sag(const Surface& s, double r2, double& z, double& dz_dr2, bool& ok) {
    const double q = 1.0 - (1.0 + s.k) * s.c * s.c * r2;
    ok = q >= 0.0;
    const double root = std::sqrt(std::max(q, 0.0));
    z = s.c * r2 / (1.0 + root);
    // d/d(r^2) of c r^2 / (1 + sqrt(q)) simplifies to c / (2 sqrt(q)).
    dz_dr2 = 0.5 * s.c / std::max(root, 1e-300);
    if (s.kind == Kind::asphere) {
        z += r2 * r2 * (s.a4 + r2 * (s.a6 + r2 * (s.a8 + r2 * s.a10)));
        dz_dr2 += r2 * (2.0 * s.a4 + r2 * (3.0 * s.a6 + r2 * (4.0 * s.a8 + r2 * 5.0 * s.a10)));
    }
}

// Distance along (l, m, n) from (x, y, z) to the conic (exact root nearest the vertex); NaN if none.
inline double conic_distance(const Surface& s, double x, double y, double z, double l, double m, double n) {
    if (s.c == 0.0) return -z / n;
    const double ck = s.c * (1.0 + s.k);
    const double a = s.c * (l * l + m * m) + ck * n * n;
    const double bh = s.c * (x * l + y * m) + ck * z * n - n;
    const double cc = s.c * (x * x + y * y) + ck * z * z - 2.0 * z;
    const double disc = bh * bh - a * cc;
    if (disc < 0.0) return NAN;
    // t = cc / (-bh + sign(-bh) sqrt(disc)) is the root near the vertex, free of cancellation.
    const double denom = -bh + std::copysign(std::sqrt(disc), -bh);
    return denom == 0.0 ? NAN : cc / denom;
}

inline void step(const Surface& s, const Options& o, double& X, double& Y, double& Z, double& L, double& M,
                 double& N, double& opl, double& w, std::uint32_t& flag) {
    const double* R = s.rot;
    // Into the local frame.
    const double px = X - s.origin[0], py = Y - s.origin[1], pz = Z - s.origin[2];
    const double x = R[0] * px + R[1] * py + R[2] * pz;
    const double y = R[3] * px + R[4] * py + R[5] * pz;
    const double z = R[6] * px + R[7] * py + R[8] * pz;
    const double l = R[0] * L + R[1] * M + R[2] * N;
    const double m = R[3] * L + R[4] * M + R[5] * N;
    const double n = R[6] * L + R[7] * M + R[8] * N;

    double t = (s.kind == Kind::plane) ? -z / n : conic_distance(s, x, y, z, l, m, n);
    if (s.kind == Kind::asphere) {
        if (!std::isfinite(t)) t = -z / n;  // start from the vertex plane if the base conic is missed
        bool converged = false;
        for (int it = 0; it < o.max_newton && std::isfinite(t); ++it) {
            const double hx = x + t * l, hy = y + t * m;
            double zs, dz;
            bool ok;
            sag(s, hx * hx + hy * hy, zs, dz, ok);
            if (!ok) { t = NAN; break; }
            const double f = z + t * n - zs;
            const double fp = n - 2.0 * dz * (hx * l + hy * m);
            if (fp == 0.0) { t = NAN; break; }
            const double dt = f / fp;
            t -= dt;
            if (std::fabs(dt) <= o.newton_tol * (1.0 + std::fabs(t))) { converged = true; break; }
        }
        if (!converged) { flag |= std::isfinite(t) ? no_converge : missed; return; }
    }
    if (!std::isfinite(t)) { flag |= missed; return; }
    const double hx = x + t * l, hy = y + t * m, hz = z + t * n;
    const double r2 = hx * hx + hy * hy;
    double zs = 0.0, dz = 0.0;
    bool ok = true;
    if (s.kind != Kind::plane) sag(s, r2, zs, dz, ok);
    if (!ok) { flag |= missed; return; }

    if (o.apertures) {
        if (s.wall_side != 0) {
            const double rw2 = s.wall_radius * s.wall_radius;
            if (s.wall_side > 0) {
                // Inside a cylinder is convex: the segment stays inside iff both ends do.
                if (x * x + y * y > rw2 || r2 > rw2) { flag |= wall; return; }
            } else {
                // Closest approach of the segment [0, t] to the axis must stay outside.
                const double lm2 = l * l + m * m;
                double sc = lm2 > 0.0 ? -(x * l + y * m) / lm2 : 0.0;
                sc = std::clamp(sc, std::min(0.0, t), std::max(0.0, t));
                const double cx = x + sc * l, cy = y + sc * m;
                if (cx * cx + cy * cy < rw2) { flag |= wall; return; }
            }
        }
        if (r2 < s.r_inner * s.r_inner || r2 > s.r_outer * s.r_outer) { flag |= clipped; return; }
    }

    // Unit normal (-dz/dx, -dz/dy, 1) oriented along the ray.
    double nx = -2.0 * dz * hx, ny = -2.0 * dz * hy, nz = 1.0;
    const double inv = 1.0 / std::sqrt(nx * nx + ny * ny + nz * nz);
    nx *= inv; ny *= inv; nz *= inv;
    double ci = l * nx + m * ny + n * nz;
    if (ci < 0.0) { nx = -nx; ny = -ny; nz = -nz; ci = -ci; }

    double l2, m2, n2, coef;
    const double mu = s.n1 / s.n2;
    const double st2 = mu * mu * (1.0 - ci * ci);
    const bool total = st2 > 1.0;
    if (s.reflect) {
        l2 = l - 2.0 * ci * nx; m2 = m - 2.0 * ci * ny; n2 = n - 2.0 * ci * nz;
        if (total) coef = 1.0;
        else {
            const double ct = std::sqrt(1.0 - st2);
            const double rs = (s.n1 * ci - s.n2 * ct) / (s.n1 * ci + s.n2 * ct);
            const double rp = (s.n2 * ci - s.n1 * ct) / (s.n2 * ci + s.n1 * ct);
            coef = 0.5 * (rs * rs + rp * rp);
        }
    } else {
        if (total) { flag |= tir; return; }
        const double ct = std::sqrt(1.0 - st2);
        const double g = ct - mu * ci;
        l2 = mu * l + g * nx; m2 = mu * m + g * ny; n2 = mu * n + g * nz;
        const double rs = (s.n1 * ci - s.n2 * ct) / (s.n1 * ci + s.n2 * ct);
        const double rp = (s.n2 * ci - s.n1 * ct) / (s.n2 * ci + s.n1 * ct);
        coef = 1.0 - 0.5 * (rs * rs + rp * rp);
    }
    if (o.fresnel) w *= coef;
    if (o.opl) opl += s.n1 * t;
    // Back to the global frame (rot is orthonormal: its transpose is its inverse).
    X = R[0] * hx + R[3] * hy + R[6] * hz + s.origin[0];
    Y = R[1] * hx + R[4] * hy + R[7] * hz + s.origin[1];
    Z = R[2] * hx + R[5] * hy + R[8] * hz + s.origin[2];
    L = R[0] * l2 + R[3] * m2 + R[6] * n2;
    M = R[1] * l2 + R[4] * m2 + R[7] * n2;
    N = R[2] * l2 + R[5] * m2 + R[8] * n2;
}

}  // namespace

void fresnel(double n1, double n2, const double* ci, std::ptrdiff_t count, double* rs, double* rp, double* ts,
             double* tp, double* r_energy, double* t_energy) {
    const double mu = n1 / n2;
    for (std::ptrdiff_t i = 0; i < count; ++i) {
        const double c = ci[i];
        const double st2 = mu * mu * (1.0 - c * c);
        if (st2 > 1.0) {  // total internal reflection: all light reflected, no transmitted wave
            rs[i] = rp[i] = 1.0; ts[i] = tp[i] = 0.0; r_energy[i] = 1.0; t_energy[i] = 0.0;
            continue;
        }
        const double ct = std::sqrt(1.0 - st2);
        rs[i] = (n1 * c - n2 * ct) / (n1 * c + n2 * ct);
        rp[i] = (n2 * c - n1 * ct) / (n2 * c + n1 * ct);
        ts[i] = 2.0 * n1 * c / (n1 * c + n2 * ct);
        tp[i] = 2.0 * n1 * c / (n2 * c + n1 * ct);
        r_energy[i] = 0.5 * (rs[i] * rs[i] + rp[i] * rp[i]);
        // Transmitted power carries the beam-area and impedance factor n2 cos_t / (n1 cos_i).
        const double f = (n2 * ct) / (n1 * c);
        t_energy[i] = 0.5 * f * (ts[i] * ts[i] + tp[i] * tp[i]);
    }
}

void trace(const Surface* surfaces, std::ptrdiff_t n_surfaces, const Options& opt, Rays r) {
    const std::ptrdiff_t n_blocks = (r.count + kBlock - 1) / kBlock;
    icl::parallel_for(n_blocks, [&](std::ptrdiff_t b) {
        const std::ptrdiff_t lo = b * kBlock, hi = std::min(r.count, lo + kBlock);
        // Surfaces outside, rays inside: each surface's loop runs over contiguous arrays.
        for (std::ptrdiff_t k = 0; k < n_surfaces; ++k) {
            const Surface& s = surfaces[k];
            for (std::ptrdiff_t i = lo; i < hi; ++i) {
                if (r.flags[i] != alive) continue;
                step(s, opt, r.x[i], r.y[i], r.z[i], r.l[i], r.m[i], r.n[i], r.opl[i], r.w[i], r.flags[i]);
            }
        }
    });
}

}  // namespace icl::rt
