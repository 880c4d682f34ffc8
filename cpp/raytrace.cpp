#include "raytrace.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "common.hpp"

// Layout of the tracer. Rays are copied into fixed blocks of kBlock rays (structure of arrays, in L1), and each
// surface is applied to a block as three short passes, each a straight-line loop over the block (ternaries and
// bit operations, no branches, no early exits) that the compiler vectorises:
//   distance  local frame and the distance to the surface (conic root or vertex plane), the flag `missed`;
//   normal    hit point, clear aperture, the normal, the incidence cosine and sqrt(S2) cos(refraction);
//   commit    Snell or the mirror, the Fresnel weight and the optical path; survivors take the new state in
//             the global frame, the others keep theirs and record the first failure.
// Walls and aspheres insert passes after the distance (Newton, the wall test). A ray that stops keeps the state
// it had before the surface: every pass computes all rays and the commit takes only the survivors. Short
// passes let the processor overlap many rays' dependency chains (one fused loop per surface, measured, was
// slower: its chain of square roots and divisions left the out-of-order window idle), at the cost of a few
// scratch arrays in L1.
//
// Square roots and divisions are the most expensive operations, so the refraction works with an unnormalised
// normal N: with S2 = N.N and cN = d.N (N turned so that cN >= 0), the incidence cosine is cN / sqrt(S2),
// cts = sqrt(S2) cos(refraction) = sqrt(S2 - mu^2 (S2 - cN^2)), the new direction is mu d + (cts - mu cN) / S2 N
// (the mirror: d - 2 cN / S2 N), and sqrt(S2) cancels from the Fresnel amplitudes rs = (mu cN - cts) /
// (mu cN + cts), rp = (cN - mu cts) / (cN + mu cts), whose division shares one reciprocal with 1 / S2. A
// refracting conic takes two square roots (discriminant, cts) and two divisions (the root, one reciprocal),
// where normalising the normal took four and six; the conic's second root is divided out only for the rare rays
// whose first root does not settle the answer (pass_distance).
//
// Each ray's arithmetic is fixed: this file is compiled without floating-point contraction, so vector lanes
// round exactly as scalar code does and results depend neither on the block size, the thread count nor the
// instruction set chosen at run time.

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

constexpr int kBlock = 128;            // rays per block
constexpr int kStride = kBlock + 8;    // array length: arrays 4 kB apart would alias in the load/store unit
using Mask = std::uint64_t;  // 0 or a flag, one 64-bit lane per ray like the doubles beside it
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

inline bool finite(double v) { return std::fabs(v) <= std::numeric_limits<double>::max(); }  // false for NaN
// All ones when no flag is raised yet, else 0: `st |= first(st) & f` records f only as the first failure. Bit
// operations rather than nested selects, which GCC 12 if-converts only in some contexts.
inline Mask first(Mask st) { return Mask(0) - Mask(st == 0); }

struct Block {
    // Ray state (global frame) and flags.
    alignas(64) double x[kStride], y[kStride], z[kStride], l[kStride], m[kStride], n[kStride], opl[kStride],
        w[kStride];
    alignas(64) Mask flags[kStride];
    // Per surface: local position (then the hit point) and direction, distance, flag raised at this surface;
    // the normal pass's outputs (N, cN, S2, cts), which the distance pass borrows for its quadratic; Newton's
    // state.
    alignas(64) double lx[kStride], ly[kStride], lz[kStride], ll[kStride], lm[kStride], ln[kStride], t[kStride];
    alignas(64) Mask stop[kStride];
    alignas(64) double nx[kStride], ny[kStride], nz[kStride], cn[kStride], s2[kStride], cts[kStride];
    alignas(64) Mask active[kStride], converged[kStride];
};

// Constants of the sag z(r^2) = c r^2 / (1 + sqrt(q)) + poly, q = 1 - (1+k) c^2 r^2, grouped as in the
// scalar definition so that precomputing them does not change a bit.
struct SagConst {
    double c, kcc, half_c, a4, a6, a8, a10, b4, b6, b8;
    explicit SagConst(const Surface& s)
        : c(s.c), kcc((1.0 + s.k) * s.c * s.c), half_c(0.5 * s.c), a4(s.a4), a6(s.a6), a8(s.a8), a10(s.a10),
          b4(2.0 * s.a4), b6(3.0 * s.a6), b8(4.0 * s.a8) {}
};

// A surface's constants, prepared once per call outside the block kernel (so that the compiler cannot
// specialise the loops on their values, which breaks their vectorisation), and copied into each pass (stores
// to the block cannot alias the copy, so it stays in registers).
struct Consts {
    double R[9], o0, o1, o2;
    bool rotated;  // rot is not the identity
    double c, ck, kcc, b4, b6, b8, a10;
    double mu, mu2;
    double path;      // index for the optical path (0 when it is off: opl + 0 t == opl for a survivor's finite t)
    double ri2, ro2;  // squared clear aperture (bounds no radius crosses when apertures are off)
    Consts() = default;
    Consts(const Surface& s, const Options& o)
        : o0(s.origin[0]), o1(s.origin[1]), o2(s.origin[2]), c(s.c), ck(s.c * (1.0 + s.k)),
          kcc(SagConst(s).kcc), b4(2.0 * s.a4), b6(3.0 * s.a6), b8(4.0 * s.a8), a10(s.a10), mu(s.n1 / s.n2),
          mu2(mu * mu), path(o.opl ? s.n1 : 0.0), ri2(o.apertures ? s.r_inner * s.r_inner : -1.0),
          ro2(o.apertures ? s.r_outer * s.r_outer : kInf) {
        std::copy(s.rot, s.rot + 9, R);
        const double id[9] = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0};
        rotated = !std::equal(R, R + 9, id);
    }
};

// Local frame: p_local = rot (p - origin), d_local = rot d. Rot is false for an unrotated surface, which only
// translates (what the identity gives, to the last bit, for finite coordinates); the passes after the distance
// then recompute the local frame from the global state instead of reading it from the block.
template <bool Rot>
ICL_RT_INLINE void to_local(const Consts& k, double X, double Y, double Z, double L, double M, double N, double& x,
                            double& y, double& z, double& l, double& m, double& n) {
    const double px = X - k.o0, py = Y - k.o1, pz = Z - k.o2;
    if constexpr (Rot) {
        const double* R = k.R;
        x = R[0] * px + R[1] * py + R[2] * pz;
        y = R[3] * px + R[4] * py + R[5] * pz;
        z = R[6] * px + R[7] * py + R[8] * pz;
        l = R[0] * L + R[1] * M + R[2] * N;
        m = R[3] * L + R[4] * M + R[5] * N;
        n = R[6] * L + R[7] * M + R[8] * N;
    } else {
        x = px; y = py; z = pz; l = L; m = M; n = N;
    }
}

// Distance along the ray to the surface (local frame). A plane (or a conic with c = 0): its vertex plane. A
// conic: of the two roots of the quadratic, the smaller of those that lie ahead of the ray (t >= -kBehind) and
// on the sheet through the vertex, where 1 - (1 + k) c z >= 0 (the branch of the sag formula: there it equals
// sqrt(1 - (1 + k) c^2 r^2)); the roots are cc / (-bh + sign(-bh) sqrt(disc)) and its partner
// (-bh + sign(-bh) sqrt(disc)) / a (free of cancellation). NaN (missed) when no root qualifies: the
// discriminant is negative, both roots are behind the ray or on the far sheet (a concave retina met beyond its
// centre of curvature is hit on the vertex side, never on the far side behind the ray), or the plane is behind
// the ray. Two loops: the square root, then the divisions. With Rot, the local frame is stored for the passes
// after it.
constexpr double kBehind = 1e-9;  // mm: a ray that starts on the surface meets it at t = 0 up to rounding

template <bool Conic, bool Rot>
ICL_RT_INLINE void pass_distance(const Consts& sc, Block& b) {
    const Consts k = sc;
    const double c = k.c, ck = k.ck;
    for (int i = 0; i < kBlock; ++i) {
        double x, y, z, l, m, n;
        to_local<Rot>(k, b.x[i], b.y[i], b.z[i], b.l[i], b.m[i], b.n[i], x, y, z, l, m, n);
        if constexpr (Rot) {
            b.lx[i] = x; b.ly[i] = y; b.lz[i] = z; b.ll[i] = l; b.lm[i] = m; b.ln[i] = n;
        }
        if constexpr (Conic) {
            const double a = c * (l * l + m * m) + ck * n * n;
            const double bh = c * (x * l + y * m) + ck * z * n - n;
            const double cc = c * (x * x + y * y) + ck * z * z - 2.0 * z;
            const double disc = bh * bh - a * cc;
            b.nx[i] = a; b.ny[i] = cc; b.nz[i] = disc;
            b.cn[i] = -bh + std::copysign(std::sqrt(std::max(disc, 0.0)), -bh);
        } else {
            const double tp = -z / n;
            const double t = tp >= -kBehind ? tp : kNan;
            b.t[i] = t;
            b.stop[i] = finite(t) ? Mask(0) : Mask(missed);
        }
    }
    if constexpr (Conic) {
        // The partner root denom / a is never smaller in magnitude than cc / denom (denom^2 >= |a cc| when
        // disc >= 0). So when cc / denom qualifies and lies ahead by more than kBehind, the partner is either
        // farther or behind by more than kBehind, and cc / denom is the answer (for a double root, to
        // rounding). Only blocks with other rays (misses, rays starting on the surface) take the partner's
        // division, in a second loop that finishes them as the definition does.
        Mask others = 0;
        for (int i = 0; i < kBlock; ++i) {
            const double z = Rot ? b.lz[i] : b.z[i] - k.o2, n = Rot ? b.ln[i] : b.n[i];
            const double cc = b.ny[i], disc = b.nz[i], denom = b.cn[i];
            const double t1 = cc / denom;
            const bool ok1 = (disc >= 0.0) & finite(t1) & (t1 >= -kBehind) & (1.0 - ck * (z + t1 * n) >= 0.0);
            const Mask other = !(ok1 & (t1 > kBehind));
            b.t[i] = t1;
            b.stop[i] = other;  // 1: to be finished below
            others |= other;
        }
        if (others != 0) {
            for (int i = 0; i < kBlock; ++i) {
                const double z = Rot ? b.lz[i] : b.z[i] - k.o2, n = Rot ? b.ln[i] : b.n[i];
                const double a = b.nx[i], disc = b.nz[i], denom = b.cn[i];
                const double t1 = b.t[i], t2 = denom / a;
                const bool ok1 = (disc >= 0.0) & finite(t1) & (t1 >= -kBehind) & (1.0 - ck * (z + t1 * n) >= 0.0);
                const bool ok2 = (disc >= 0.0) & finite(t2) & (t2 >= -kBehind) & (1.0 - ck * (z + t2 * n) >= 0.0);
                const double tm = std::min(ok1 ? t1 : kInf, ok2 ? t2 : kInf);  // the smaller qualifying root
                const double t = tm < kInf ? tm : kNan;
                const bool other = b.stop[i] != 0;
                b.t[i] = other ? t : t1;
                b.stop[i] = other ? (finite(t) ? Mask(0) : Mask(missed)) : Mask(0);
            }
        }
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

// Hit point (replaces the local position), clear aperture, the normal and the refraction's square root.
// N is (-dz/dx, -dz/dy, 1) times sqrt(q), q = 1 - (1 + k) c^2 r^2, which keeps it finite at the edge of the
// conic's zone: (-c x, -c y, 1 - (1 + k) c z) for a conic (on the vertex sheet sqrt(q) = 1 - (1 + k) c z, no
// square root), (-(c + 2 sqrt(q) dP/d(r^2)) x, ..., sqrt(q)) for an even asphere with polynomial P, (0, 0, 1)
// for a plane. Stores N turned along the ray, cN, S2 and cts (for the mirror, -1 under total reflection).
template <Kind K, bool Reflect, bool Rot>
ICL_RT_INLINE void pass_normal(const Consts& sc, Block& b) {
    const Consts k = sc;
    const double c = k.c, ck = k.ck, mu2 = k.mu2, ri2 = k.ri2, ro2 = k.ro2;
    for (int i = 0; i < kBlock; ++i) {
        double x, y, z, l, m, n;
        if constexpr (Rot) {
            x = b.lx[i]; y = b.ly[i]; z = b.lz[i]; l = b.ll[i]; m = b.lm[i]; n = b.ln[i];
        } else {
            to_local<false>(k, b.x[i], b.y[i], b.z[i], b.l[i], b.m[i], b.n[i], x, y, z, l, m, n);
        }
        const double t = b.t[i];
        const double hx = x + t * l, hy = y + t * m, hz = z + t * n;
        const double r2 = hx * hx + hy * hy;
        double nx = 0.0, ny = 0.0, nz = 1.0;
        bool ok = true;  // false outside the conic's zone
        if constexpr (K == Kind::conic) {
            ok = 1.0 - k.kcc * r2 >= 0.0;
            nx = -c * hx; ny = -c * hy; nz = 1.0 - ck * hz;
        } else if constexpr (K == Kind::asphere) {
            const double q = 1.0 - k.kcc * r2;
            const double root = std::sqrt(std::max(q, 0.0));
            const double g = c + 2.0 * root * (r2 * (k.b4 + r2 * (k.b6 + r2 * (k.b8 + r2 * 5.0 * k.a10))));
            ok = q >= 0.0;
            nx = -g * hx; ny = -g * hy; nz = root;
        }
        const bool clip = (r2 < ri2) | (r2 > ro2);
        // First failure in the scalar order: missed, wall (its pass), clipped, then TIR.
        Mask st = b.stop[i];
        st |= first(st) & ((Mask(!ok) * missed) | (Mask(ok & clip) * clipped));
        const double cn0 = l * nx + m * ny + n * nz;
        const bool flip = cn0 < 0.0;
        nx = flip ? -nx : nx; ny = flip ? -ny : ny; nz = flip ? -nz : nz;
        const double cn = flip ? -cn0 : cn0;
        const double s2 = nx * nx + ny * ny + nz * nz;
        const double sin2 = mu2 * (s2 - cn * cn);  // S2 sin^2(refraction)
        const bool total = sin2 > s2;
        const double cts = std::sqrt(std::max(s2 - sin2, 0.0));
        if constexpr (!Reflect) st |= first(st) & (Mask(total) * tir);
        b.stop[i] = st;
        b.lx[i] = hx; b.ly[i] = hy; b.lz[i] = hz;
        b.nx[i] = nx; b.ny[i] = ny; b.nz[i] = nz; b.cn[i] = cn; b.s2[i] = s2;
        b.cts[i] = Reflect ? (total ? -1.0 : cts) : cts;
    }
}

// Snell (or the mirror) and the Fresnel energy coefficient (T, or R for the mirror: 1 under total reflection),
// then the commit: survivors take the new state in the global frame (rot is orthonormal: its transpose is its
// inverse), their weight and optical path; the others keep their state and record the flag raised here.
template <bool Reflect, bool Fresnel, bool Rot>
ICL_RT_INLINE void pass_commit(const Consts& sc, Block& b) {
    const Consts k = sc;
    const double* R = k.R;
    const double o0 = k.o0, o1 = k.o1, o2 = k.o2, mu = k.mu, path = k.path;
    for (int i = 0; i < kBlock; ++i) {
        const double X = b.x[i], Y = b.y[i], Z = b.z[i], L = b.l[i], M = b.m[i], N = b.n[i];
        const double l = Rot ? b.ll[i] : L, m = Rot ? b.lm[i] : M, n = Rot ? b.ln[i] : N;
        const double hx = b.lx[i], hy = b.ly[i], hz = b.lz[i];
        const double nx = b.nx[i], ny = b.ny[i], nz = b.nz[i], cn = b.cn[i], s2 = b.s2[i];
        const bool total = b.cts[i] < 0.0;
        const double cts = total ? 0.0 : b.cts[i];
        const double u = mu * cn;
        const double gn = Reflect ? -2.0 * cn : cts - u;  // new direction: (mu) d + gn / S2 N
        double g, coef = 1.0;
        if constexpr (Fresnel) {
            const double v = mu * cts;
            const double A = u - cts, B = u + cts, C = cn - v, E = cn + v;  // rs = A / B, rp = C / E
            const double be = B * E, ae = A * E, cb = C * B;
            const double be2 = be * be;
            const double inv = 1.0 / (s2 * be2);
            g = gn * be2 * inv;
            const double r = 0.5 * (ae * ae + cb * cb) * s2 * inv;
            coef = Reflect ? (total ? 1.0 : r) : 1.0 - r;
        } else {
            g = gn / s2;
        }
        const double l2 = (Reflect ? l : mu * l) + g * nx;
        const double m2 = (Reflect ? m : mu * m) + g * ny;
        const double n2 = (Reflect ? n : mu * n) + g * nz;
        double X2 = hx + o0, Y2 = hy + o1, Z2 = hz + o2, L2 = l2, M2 = m2, N2 = n2;
        if constexpr (Rot) {
            X2 = R[0] * hx + R[3] * hy + R[6] * hz + o0;
            Y2 = R[1] * hx + R[4] * hy + R[7] * hz + o1;
            Z2 = R[2] * hx + R[5] * hy + R[8] * hz + o2;
            L2 = R[0] * l2 + R[3] * m2 + R[6] * n2;
            M2 = R[1] * l2 + R[4] * m2 + R[7] * n2;
            N2 = R[2] * l2 + R[5] * m2 + R[8] * n2;
        }
        const Mask old = b.flags[i], st = b.stop[i];
        const bool pass = (old == 0) & (st == 0);
        b.flags[i] = old | (first(old) & st);
        b.x[i] = pass ? X2 : X;
        b.y[i] = pass ? Y2 : Y;
        b.z[i] = pass ? Z2 : Z;
        b.l[i] = pass ? L2 : L;
        b.m[i] = pass ? M2 : M;
        b.n[i] = pass ? N2 : N;
        const double opl0 = b.opl[i];
        b.opl[i] = pass ? opl0 + path * b.t[i] : opl0;
        if constexpr (Fresnel) {
            const double w0 = b.w[i];
            b.w[i] = pass ? w0 * coef : w0;
        }
    }
}

// The normal and commit passes for one surface. The kind, branch, Fresnel switch and rotation are template
// arguments: GCC 12 does not vectorise a select on a loop-invariant scalar condition.
template <Kind K, bool Rot>
ICL_RT_INLINE void finish(const Surface& s, const Consts& k, const Options& o, Block& b) {
    if (s.reflect) {
        pass_normal<K, true, Rot>(k, b);
        if (o.fresnel) pass_commit<true, true, Rot>(k, b); else pass_commit<true, false, Rot>(k, b);
    } else {
        pass_normal<K, false, Rot>(k, b);
        if (o.fresnel) pass_commit<false, true, Rot>(k, b); else pass_commit<false, false, Rot>(k, b);
    }
}

// All passes of a conic (or, with c = 0, its vertex plane) without asphere or wall.
template <bool Rot>
ICL_RT_INLINE void conic_or_plane(bool conic, const Surface& s, const Consts& k, const Options& o, Block& b) {
    if (conic) {
        pass_distance<true, Rot>(k, b);
        finish<Kind::conic, Rot>(s, k, o, b);
    } else {
        pass_distance<false, Rot>(k, b);
        finish<Kind::plane, Rot>(s, k, o, b);
    }
}

// One block through every surface. Compiled per instruction set (ICL_RT_CLONES); the passes are inlined.
ICL_RT_CLONES void trace_block(const Surface* surfaces, const Consts* consts, std::ptrdiff_t n_surfaces,
                               const Options& o, Block& b) {
    for (std::ptrdiff_t j = 0; j < n_surfaces; ++j) {
        const Surface& s = surfaces[j];
        const Consts& k = consts[j];
        const bool conic = s.kind != Kind::plane && s.c != 0.0;
        const bool wall = o.apertures && s.wall_side != 0;
        if (s.kind == Kind::asphere || wall) {
            // Newton and the wall test read the local frame from the block: the rotated passes store it.
            if (conic)
                pass_distance<true, true>(k, b);
            else
                pass_distance<false, true>(k, b);
            if (s.kind == Kind::asphere) pass_newton(s, o, b);
            if (wall) pass_wall(s, b);
            if (s.kind == Kind::asphere)
                finish<Kind::asphere, true>(s, k, o, b);
            else if (conic)
                finish<Kind::conic, true>(s, k, o, b);
            else
                finish<Kind::plane, true>(s, k, o, b);
        } else if (k.rotated) {
            conic_or_plane<true>(conic, s, k, o, b);
        } else {
            conic_or_plane<false>(conic, s, k, o, b);
        }
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
    // Work items of up to 16 consecutive blocks (threads write separate stretches of memory), at least 8 per
    // thread when there are enough blocks, handed out in turn to whichever thread is free: a thread slowed by
    // other work on a shared machine takes fewer. A ray's arithmetic does not depend on its block, item or
    // thread, so this partition does not change any result.
    const std::ptrdiff_t n_blocks = (in.count + kBlock - 1) / kBlock;
    const int nt = icl::workers(n_blocks);
    const std::ptrdiff_t per_item = std::clamp<std::ptrdiff_t>(n_blocks / (8 * nt), 1, 16);
    const std::ptrdiff_t item_rays = per_item * kBlock;
    const std::ptrdiff_t n_items = (in.count + item_rays - 1) / item_rays;
    std::vector<Consts> consts(static_cast<std::size_t>(n_surfaces));
    for (std::ptrdiff_t j = 0; j < n_surfaces; ++j) consts[static_cast<std::size_t>(j)] = Consts(surfaces[j], opt);
    std::atomic<std::ptrdiff_t> next{0};
    const auto work = [&](int) {
        Block b;
        for (std::ptrdiff_t item; (item = next.fetch_add(1, std::memory_order_relaxed)) < n_items;) {
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
                trace_block(surfaces, consts.data(), n_surfaces, opt, b);
                std::copy_n(b.x, cnt, out.x + lo); std::copy_n(b.y, cnt, out.y + lo); std::copy_n(b.z, cnt, out.z + lo);
                std::copy_n(b.l, cnt, out.l + lo); std::copy_n(b.m, cnt, out.m + lo); std::copy_n(b.n, cnt, out.n + lo);
                std::copy_n(b.opl, cnt, out.opl + lo); std::copy_n(b.w, cnt, out.w + lo);
                std::copy_n(b.flags, cnt, out.flags + lo);  // every flag fits in 32 bits
            }
        }
    };
    if (nt <= 1)
        work(0);
    else
        icl::run_parallel(nt, work);
}

void trace(const Surface* surfaces, std::ptrdiff_t n_surfaces, const Options& opt, Rays rays) {
    const ConstRays in{rays.x, rays.y, rays.z, rays.l, rays.m, rays.n, rays.opl, rays.w, rays.flags, rays.count};
    trace(surfaces, n_surfaces, opt, in, rays);
}

}  // namespace icl::rt
