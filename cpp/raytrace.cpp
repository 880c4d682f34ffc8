#include "raytrace.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common.hpp"

// Layout of the tracer. Rays are copied into fixed blocks of kBlock rays (structure of arrays); each surface
// is applied to a block as a few passes, each a straight-line loop over the block (ternaries, no branches,
// no early exits) that the compiler vectorises. A ray that stops keeps the state it had before the surface:
// every pass computes all rays and the last one commits only the survivors. The arithmetic of a ray, operation
// by operation, is that of the scalar definition (docs/eye.md); this file is compiled without floating-point
// contraction, so the vector lanes round exactly as scalar code does and results do not depend on the block
// size, the thread count or the instruction set chosen at run time.

// On x86-64 with GCC and glibc (ifunc), the block kernel is also compiled for AVX2 and AVX-512 and picked at
// load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__)
#define ICL_RT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ICL_RT_CLONES
#endif
// The passes must be inlined into each clone of trace_block to be compiled for its instruction set.
#if defined(__GNUC__)
#define ICL_RT_INLINE inline __attribute__((always_inline))
#else
#define ICL_RT_INLINE inline
#endif

namespace icl::rt {
namespace {

constexpr int kBlock = 128;  // rays per block: its 24 arrays (24 kB) stay in L1 (faster than 64 or 256)
using Mask = std::uint64_t;  // 0 or a flag, one 64-bit lane per ray like the doubles beside it
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

inline bool finite(double v) { return std::fabs(v) <= std::numeric_limits<double>::max(); }  // false for NaN

struct Block {
    // Ray state (global frame) and flags.
    alignas(64) double x[kBlock], y[kBlock], z[kBlock], l[kBlock], m[kBlock], n[kBlock], opl[kBlock], w[kBlock];
    alignas(64) Mask flags[kBlock];
    // Per-surface scratch: local position (then hit point) and direction (then the new direction), distance,
    // normal, incidence cosine, Fresnel coefficient, flag raised at this surface.
    alignas(64) double lx[kBlock], ly[kBlock], lz[kBlock], ll[kBlock], lm[kBlock], ln[kBlock], t[kBlock];
    alignas(64) double nx[kBlock], ny[kBlock], nz[kBlock], ci[kBlock], coef[kBlock];
    alignas(64) Mask stop[kBlock];
    // Asphere Newton state.
    alignas(64) Mask active[kBlock], converged[kBlock];
};

// Constants of the sag z(r^2) = c r^2 / (1 + sqrt(q)) + poly, q = 1 - (1+k) c^2 r^2, grouped as in the
// scalar definition so that precomputing them does not change a bit.
struct SagConst {
    double c, kcc, half_c, a4, a6, a8, a10, b4, b6, b8;
    explicit SagConst(const Surface& s)
        : c(s.c), kcc((1.0 + s.k) * s.c * s.c), half_c(0.5 * s.c), a4(s.a4), a6(s.a6), a8(s.a8), a10(s.a10),
          b4(2.0 * s.a4), b6(3.0 * s.a6), b8(4.0 * s.a8) {}
};

// Into the surface frame, p_local = rot (p - origin), d_local = rot d, and the distance along the ray to the
// surface. A plane (or a conic with c = 0): its vertex plane. A conic: of the two roots of the quadratic, the
// smaller of those that lie ahead of the ray (t >= -kBehind) and on the sheet through the vertex, where
// 1 - (1 + k) c z >= 0 (the branch of the sag formula: there it equals sqrt(1 - (1 + k) c^2 r^2)); the
// roots are cc / (-bh + sign(-bh) sqrt(disc)) and its partner (-bh + sign(-bh) sqrt(disc)) / a (free of
// cancellation). NaN (missed) when no root qualifies: the discriminant is negative, both roots are behind
// the ray or on the far sheet (a concave retina met beyond its centre of curvature is hit on the vertex
// side, never on the far side behind the ray), or the plane is behind the ray.
constexpr double kBehind = 1e-9;  // mm: a ray that starts on the surface meets it at t = 0 up to rounding

template <bool Conic>
ICL_RT_INLINE void pass_distance(const Surface& s, Block& b) {
    double R[9];  // a local copy: stores to the block cannot alias it, so it stays in registers
    std::copy(s.rot, s.rot + 9, R);
    const double o0 = s.origin[0], o1 = s.origin[1], o2 = s.origin[2];
    const double c = s.c, ck = s.c * (1.0 + s.k);
    for (int i = 0; i < kBlock; ++i) {
        const double px = b.x[i] - o0, py = b.y[i] - o1, pz = b.z[i] - o2;
        const double L = b.l[i], M = b.m[i], N = b.n[i];
        const double x = R[0] * px + R[1] * py + R[2] * pz;
        const double y = R[3] * px + R[4] * py + R[5] * pz;
        const double z = R[6] * px + R[7] * py + R[8] * pz;
        const double l = R[0] * L + R[1] * M + R[2] * N;
        const double m = R[3] * L + R[4] * M + R[5] * N;
        const double n = R[6] * L + R[7] * M + R[8] * N;
        b.lx[i] = x; b.ly[i] = y; b.lz[i] = z; b.ll[i] = l; b.lm[i] = m; b.ln[i] = n;
        double t;
        if constexpr (Conic) {
            const double a = c * (l * l + m * m) + ck * n * n;
            const double bh = c * (x * l + y * m) + ck * z * n - n;
            const double cc = c * (x * x + y * y) + ck * z * z - 2.0 * z;
            const double disc = bh * bh - a * cc;
            const double denom = -bh + std::copysign(std::sqrt(std::max(disc, 0.0)), -bh);
            const double t1 = cc / denom, t2 = denom / a;
            const bool ok1 = (disc >= 0.0) & finite(t1) & (t1 >= -kBehind) & (1.0 - ck * (z + t1 * n) >= 0.0);
            const bool ok2 = (disc >= 0.0) & finite(t2) & (t2 >= -kBehind) & (1.0 - ck * (z + t2 * n) >= 0.0);
            t = ok1 ? (ok2 ? std::min(t1, t2) : t1) : (ok2 ? t2 : kNan);
        } else {
            const double tp = -z / n;
            t = tp >= -kBehind ? tp : kNan;
        }
        b.t[i] = t;
        b.stop[i] = finite(t) ? Mask(0) : Mask(missed);
    }
}

// Even asphere: Newton on f(t) = z + t n - sag(r(t)), started from the base conic's root (or the vertex plane
// if that root is missing). Every iteration runs over the whole block with a per-ray mask; a ray leaves the
// iteration when it converges (|dt| <= tol (1 + |t|)), leaves the sag's domain, meets f' = 0 or becomes
// non-finite, exactly where the scalar loop would stop. The loop ends when no ray is active or after
// max_newton iterations (then the remaining rays are flagged no_converge).
ICL_RT_INLINE void pass_newton(const Surface& s, const Options& o, Block& b) {
    const SagConst k(s);
    const double tol = o.newton_tol;
    for (int i = 0; i < kBlock; ++i) {
        const double t = finite(b.t[i]) ? b.t[i] : -b.lz[i] / b.ln[i];
        b.t[i] = t;
        b.active[i] = finite(t) & (b.flags[i] == 0);  // stopped rays need no iterations
        b.converged[i] = 0;
    }
    for (int it = 0; it < o.max_newton; ++it) {
        Mask n_active = 0;
        for (int i = 0; i < kBlock; ++i) {
            const double x = b.lx[i], y = b.ly[i], z = b.lz[i], l = b.ll[i], m = b.lm[i], n = b.ln[i];
            const double t = b.t[i];
            const double hx = x + t * l, hy = y + t * m;
            const double r2 = hx * hx + hy * hy;
            const double q = 1.0 - k.kcc * r2;
            const double root = std::sqrt(std::max(q, 0.0));
            const double zs = k.c * r2 / (1.0 + root) + r2 * r2 * (k.a4 + r2 * (k.a6 + r2 * (k.a8 + r2 * k.a10)));
            const double dz = k.half_c / std::max(root, 1e-300) +
                              r2 * (k.b4 + r2 * (k.b6 + r2 * (k.b8 + r2 * 5.0 * k.a10)));
            const double f = z + t * n - zs;
            const double fp = n - 2.0 * dz * (hx * l + hy * m);
            const bool bad = !(q >= 0.0) | (fp == 0.0);
            const double dt = f / fp;
            const double tn = bad ? kNan : t - dt;
            const bool conv = !bad & (std::fabs(dt) <= tol * (1.0 + std::fabs(tn)));
            const Mask act = b.active[i];
            b.t[i] = act ? tn : t;
            b.converged[i] = act ? Mask(conv) : b.converged[i];
            const Mask still = act & !conv & finite(tn);
            b.active[i] = still;
            n_active += still;
        }
        if (n_active == 0) break;
    }
    for (int i = 0; i < kBlock; ++i) {
        const bool fin = finite(b.t[i]);
        b.stop[i] = b.converged[i] ? (fin ? Mask(0) : Mask(missed)) : (fin ? Mask(no_converge) : Mask(missed));
    }
}

// Hole wall bounding the segment [0, t] that reaches the surface (local frame). A hit outside the conic's
// zone is flagged missed first, as the scalar order has it.
ICL_RT_INLINE void pass_wall(const Surface& s, Block& b) {
    const double rw2 = s.wall_radius * s.wall_radius;
    const double kcc = SagConst(s).kcc;
    const bool plane = s.kind == Kind::plane;
    if (s.wall_side > 0) {
        // Inside a cylinder is convex: the segment stays inside iff both ends do.
        for (int i = 0; i < kBlock; ++i) {
            const double x = b.lx[i], y = b.ly[i], t = b.t[i];
            const double hx = x + t * b.ll[i], hy = y + t * b.lm[i];
            const double r2 = hx * hx + hy * hy;
            const bool hit = (x * x + y * y > rw2) | (r2 > rw2);
            const bool ok = plane | (1.0 - kcc * r2 >= 0.0);
            b.stop[i] = b.stop[i] ? b.stop[i] : !ok ? Mask(missed) : hit ? Mask(wall) : Mask(0);
        }
    } else {
        // Closest approach of the segment [0, t] to the axis must stay outside.
        for (int i = 0; i < kBlock; ++i) {
            const double x = b.lx[i], y = b.ly[i], l = b.ll[i], m = b.lm[i], t = b.t[i];
            const double lm2 = l * l + m * m;
            double sc = lm2 > 0.0 ? -(x * l + y * m) / lm2 : 0.0;
            const double lo = std::min(0.0, t), hi = std::max(0.0, t);
            sc = sc < lo ? lo : (hi < sc ? hi : sc);
            const double cx = x + sc * l, cy = y + sc * m;
            const double hx = x + t * l, hy = y + t * m;
            const bool hit = cx * cx + cy * cy < rw2;
            const bool ok = plane | (1.0 - kcc * (hx * hx + hy * hy) >= 0.0);
            b.stop[i] = b.stop[i] ? b.stop[i] : !ok ? Mask(missed) : hit ? Mask(wall) : Mask(0);
        }
    }
}

// Hit point (replaces the local position), sag slope, clear aperture and the unit normal (-dz/dx, -dz/dy, 1)
// oriented along the ray, with the incidence cosine. The kind is a template argument so that a conic does
// not evaluate the polynomial and a plane neither.
template <Kind K>
ICL_RT_INLINE void pass_hit(const Surface& s, const Options& o, Block& b) {
    const SagConst k(s);
    constexpr bool plane = K == Kind::plane, asphere = K == Kind::asphere;
    const bool apertures = o.apertures;
    const double ri2 = s.r_inner * s.r_inner, ro2 = s.r_outer * s.r_outer;
    for (int i = 0; i < kBlock; ++i) {
        const double l = b.ll[i], m = b.lm[i], n = b.ln[i], t = b.t[i];
        const double hx = b.lx[i] + t * l, hy = b.ly[i] + t * m, hz = b.lz[i] + t * n;
        const double r2 = hx * hx + hy * hy;
        // dz/d(r^2) of the sag: c / (2 sqrt(q)) plus the polynomial's; ok = false outside the conic zone.
        double dz = 0.0;
        bool ok = true;
        if constexpr (!plane) {
            const double q = 1.0 - k.kcc * r2;
            const double root = std::sqrt(std::max(q, 0.0));
            dz = k.half_c / std::max(root, 1e-300);
            if constexpr (asphere) dz += r2 * (k.b4 + r2 * (k.b6 + r2 * (k.b8 + r2 * 5.0 * k.a10)));
            ok = q >= 0.0;
        }
        const bool clip = apertures & ((r2 < ri2) | (r2 > ro2));
        // First failure in the scalar order: missed, wall (pass_wall), clipped; TIR comes in pass_refract.
        const Mask st = b.stop[i];
        b.stop[i] = st ? st : !ok ? Mask(missed) : clip ? Mask(clipped) : Mask(0);

        double nx = -2.0 * dz * hx, ny = -2.0 * dz * hy, nz = 1.0;
        const double inv = 1.0 / std::sqrt(nx * nx + ny * ny + nz * nz);
        nx *= inv; ny *= inv; nz *= inv;
        const double ci = l * nx + m * ny + n * nz;
        const bool flip = ci < 0.0;
        b.nx[i] = flip ? -nx : nx;
        b.ny[i] = flip ? -ny : ny;
        b.nz[i] = flip ? -nz : nz;
        b.ci[i] = flip ? -ci : ci;
        b.lx[i] = hx; b.ly[i] = hy; b.lz[i] = hz;
    }
}

// Vector Snell (or the mirror) into the local direction, TIR flag, unpolarised Fresnel energy coefficient.
template <bool Reflect>
ICL_RT_INLINE void pass_refract(const Surface& s, Block& b) {
    const double n1 = s.n1, n2 = s.n2, mu = s.n1 / s.n2, mu2 = mu * mu;
    for (int i = 0; i < kBlock; ++i) {
        const double l = b.ll[i], m = b.lm[i], n = b.ln[i], ci = b.ci[i];
        const double nx = b.nx[i], ny = b.ny[i], nz = b.nz[i];
        const double st2 = mu2 * (1.0 - ci * ci);
        const bool total = st2 > 1.0;
        const double ct = std::sqrt(std::max(1.0 - st2, 0.0));
        const double rs = (n1 * ci - n2 * ct) / (n1 * ci + n2 * ct);
        const double rp = (n2 * ci - n1 * ct) / (n2 * ci + n1 * ct);
        if constexpr (Reflect) {
            b.ll[i] = l - 2.0 * ci * nx; b.lm[i] = m - 2.0 * ci * ny; b.ln[i] = n - 2.0 * ci * nz;
            b.coef[i] = total ? 1.0 : 0.5 * (rs * rs + rp * rp);
        } else {
            const double g = ct - mu * ci;
            b.ll[i] = mu * l + g * nx; b.lm[i] = mu * m + g * ny; b.ln[i] = mu * n + g * nz;
            b.coef[i] = 1.0 - 0.5 * (rs * rs + rp * rp);
            const Mask st = b.stop[i];
            b.stop[i] = st ? st : total ? Mask(tir) : Mask(0);
        }
    }
}

// Survivors take the new state in the global frame (rot is orthonormal: its transpose is its inverse), their
// Fresnel weight (coef, 1 when Fresnel weights are off) and optical path; the others keep their state and
// record the flag raised here. Path is a template argument because GCC 12 does not vectorise a select on a
// loop-invariant scalar condition.
template <bool Path>
ICL_RT_INLINE void pass_commit(const Surface& s, Block& b) {
    const double n1 = s.n1;
    double R[9];  // a local copy: stores to the block cannot alias it, so it stays in registers
    std::copy(s.rot, s.rot + 9, R);
    const double o0 = s.origin[0], o1 = s.origin[1], o2 = s.origin[2];
    for (int i = 0; i < kBlock; ++i) {
        const double hx = b.lx[i], hy = b.ly[i], hz = b.lz[i], l2 = b.ll[i], m2 = b.lm[i], n2 = b.ln[i];
        const double X = R[0] * hx + R[3] * hy + R[6] * hz + o0;
        const double Y = R[1] * hx + R[4] * hy + R[7] * hz + o1;
        const double Z = R[2] * hx + R[5] * hy + R[8] * hz + o2;
        const double L = R[0] * l2 + R[3] * m2 + R[6] * n2;
        const double M = R[1] * l2 + R[4] * m2 + R[7] * n2;
        const double N = R[2] * l2 + R[5] * m2 + R[8] * n2;
        const double w0 = b.w[i], opl0 = b.opl[i];
        const double w_new = w0 * b.coef[i];
        double opl_new = opl0;
        if constexpr (Path) opl_new = opl0 + n1 * b.t[i];
        const Mask old = b.flags[i], st = b.stop[i];
        const bool pass = (old == 0) & (st == 0);
        b.flags[i] = old == 0 ? st : old;
        const double x0 = b.x[i], y0 = b.y[i], z0 = b.z[i], l0 = b.l[i], m0 = b.m[i], n0 = b.n[i];
        b.x[i] = pass ? X : x0;
        b.y[i] = pass ? Y : y0;
        b.z[i] = pass ? Z : z0;
        b.l[i] = pass ? L : l0;
        b.m[i] = pass ? M : m0;
        b.n[i] = pass ? N : n0;
        b.w[i] = pass ? w_new : w0;
        b.opl[i] = pass ? opl_new : opl0;
    }
}

// One block through every surface. Compiled per instruction set (ICL_RT_CLONES); the passes are inlined.
ICL_RT_CLONES void trace_block(const Surface* surfaces, std::ptrdiff_t n_surfaces, const Options& o, Block& b) {
    for (std::ptrdiff_t k = 0; k < n_surfaces; ++k) {
        const Surface& s = surfaces[k];
        if (s.kind == Kind::plane || s.c == 0.0)
            pass_distance<false>(s, b);
        else
            pass_distance<true>(s, b);
        if (s.kind == Kind::asphere) pass_newton(s, o, b);
        if (o.apertures && s.wall_side != 0) pass_wall(s, b);
        switch (s.kind) {
            case Kind::plane: pass_hit<Kind::plane>(s, o, b); break;
            case Kind::conic: pass_hit<Kind::conic>(s, o, b); break;
            case Kind::asphere: pass_hit<Kind::asphere>(s, o, b); break;
        }
        if (s.reflect)
            pass_refract<true>(s, b);
        else
            pass_refract<false>(s, b);
        if (!o.fresnel) std::fill(b.coef, b.coef + kBlock, 1.0);  // w * 1.0 == w exactly
        if (o.opl)
            pass_commit<true>(s, b);
        else
            pass_commit<false>(s, b);
    }
}

}  // namespace

void fresnel(double n1, double n2, const double* ci, std::ptrdiff_t count, double* rs, double* rp, double* ts,
             double* tp, double* r_energy, double* t_energy) {
    const double mu = n1 / n2;
    for (std::ptrdiff_t i = 0; i < count; ++i) {
        const double c = ci[i];
        const double st2 = mu * mu * (1.0 - c * c);
        const bool total = st2 > 1.0;  // total internal reflection: all light reflected, no transmitted wave
        const double ct = std::sqrt(std::max(1.0 - st2, 0.0));
        const double s = (n1 * c - n2 * ct) / (n1 * c + n2 * ct);
        const double p = (n2 * c - n1 * ct) / (n2 * c + n1 * ct);
        const double a = 2.0 * n1 * c / (n1 * c + n2 * ct);
        const double b = 2.0 * n1 * c / (n2 * c + n1 * ct);
        // Transmitted power carries the beam-area and impedance factor n2 cos_t / (n1 cos_i).
        const double f = (n2 * ct) / (n1 * c);
        rs[i] = total ? 1.0 : s;
        rp[i] = total ? 1.0 : p;
        ts[i] = total ? 0.0 : a;
        tp[i] = total ? 0.0 : b;
        r_energy[i] = total ? 1.0 : 0.5 * (s * s + p * p);
        t_energy[i] = total ? 0.0 : 0.5 * f * (a * a + b * b);
    }
}

void trace(const Surface* surfaces, std::ptrdiff_t n_surfaces, const Options& opt, ConstRays in, Rays out) {
    // A thread takes up to 64 consecutive blocks at a time, so that threads write separate stretches of memory,
    // and at least 4 items per thread when there are enough blocks. A ray's arithmetic does not depend on its
    // block or item, so this partition does not change any result.
    const std::ptrdiff_t n_blocks = (in.count + kBlock - 1) / kBlock;
    const std::ptrdiff_t per_item = std::clamp<std::ptrdiff_t>(n_blocks / (4 * icl::num_threads()), 1, 64);
    const std::ptrdiff_t item_rays = per_item * kBlock;
    const std::ptrdiff_t n_items = (in.count + item_rays - 1) / item_rays;
    icl::parallel_for(n_items, [&](std::ptrdiff_t item) {
        Block b;
        const std::ptrdiff_t end = std::min(in.count, (item + 1) * item_rays);
        for (std::ptrdiff_t lo = item * item_rays; lo < end; lo += kBlock) {
            const int cnt = static_cast<int>(std::min<std::ptrdiff_t>(kBlock, end - lo));
            // One array at a time: contiguous copies (the arrays may alias, in == out is allowed).
            std::copy_n(in.x + lo, cnt, b.x); std::copy_n(in.y + lo, cnt, b.y); std::copy_n(in.z + lo, cnt, b.z);
            std::copy_n(in.l + lo, cnt, b.l); std::copy_n(in.m + lo, cnt, b.m); std::copy_n(in.n + lo, cnt, b.n);
            std::copy_n(in.opl + lo, cnt, b.opl); std::copy_n(in.w + lo, cnt, b.w);
            std::copy_n(in.flags + lo, cnt, b.flags);
            // Padding rays of the last block: a fixed valid state, flagged so that nothing is committed.
            for (int i = cnt; i < kBlock; ++i) {
                b.x[i] = b.y[i] = b.z[i] = b.l[i] = b.m[i] = b.opl[i] = 0.0;
                b.n[i] = b.w[i] = 1.0;
                b.flags[i] = missed;
            }
            trace_block(surfaces, n_surfaces, opt, b);
            std::copy_n(b.x, cnt, out.x + lo); std::copy_n(b.y, cnt, out.y + lo); std::copy_n(b.z, cnt, out.z + lo);
            std::copy_n(b.l, cnt, out.l + lo); std::copy_n(b.m, cnt, out.m + lo); std::copy_n(b.n, cnt, out.n + lo);
            std::copy_n(b.opl, cnt, out.opl + lo); std::copy_n(b.w, cnt, out.w + lo);
            std::copy_n(b.flags, cnt, out.flags + lo);  // every flag fits in 32 bits
        }
    });
}

void trace(const Surface* surfaces, std::ptrdiff_t n_surfaces, const Options& opt, Rays rays) {
    const ConstRays in{rays.x, rays.y, rays.z, rays.l, rays.m, rays.n, rays.opl, rays.w, rays.flags, rays.count};
    trace(surfaces, n_surfaces, opt, in, rays);
}

}  // namespace icl::rt
