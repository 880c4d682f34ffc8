// Sequential ray tracing through placed plane, conic and even-asphere surfaces.
//
// Units: millimetres for lengths, optical path in millimetres (index x length). Rays are held as a
// structure of arrays, traced in blocks whose per-surface loops over rays vectorise.
#pragma once
#include <cstddef>
#include <cstdint>

namespace icl::rt {

// Why a ray stopped; 0 means it is still alive. A stopped ray keeps its last state.
enum Flag : std::uint32_t {
    alive = 0,
    missed = 1u,          // no intersection with the surface (or outside its conic's valid zone)
    tir = 2u,             // total internal reflection on a refracting surface
    clipped = 4u,         // outside the annular clear aperture r_inner <= r <= r_outer
    wall = 8u,            // crossed the cylindrical wall that bounds the segment reaching this surface
    no_converge = 16u,    // the asphere Newton iteration did not converge
};

enum class Kind : int { plane = 0, conic = 1, asphere = 2 };

// One surface. Local frame: vertex at the origin, optical axis +z, sag
//   z = c r^2 / (1 + sqrt(1 - (1+k) c^2 r^2)) + a4 r^4 + a6 r^6 + a8 r^8 + a10 r^10.
// Placement: p_local = rot * (p_global - origin); rot's rows are the local axes in global coordinates.
struct Surface {
    Kind kind = Kind::plane;
    double c = 0.0, k = 0.0;
    double a4 = 0.0, a6 = 0.0, a8 = 0.0, a10 = 0.0;
    double origin[3] = {0.0, 0.0, 0.0};
    double rot[9] = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0};
    double r_inner = 0.0, r_outer = 1e300;  // annular clear aperture (local radius)
    // Optional cylinder x^2 + y^2 = wall_radius^2 (this surface's frame) bounding the straight segment that
    // reaches the surface: wall_side +1 the ray must stay inside it, -1 outside, 0 no wall.
    double wall_radius = 0.0;
    int wall_side = 0;
    double n1 = 1.0, n2 = 1.0;  // index before and after the surface
    bool reflect = false;       // mirror branch (Fresnel R) instead of refraction (Fresnel T)
};

struct Options {
    bool apertures = true;  // apply clear apertures and walls
    bool fresnel = true;    // multiply the weight by the unpolarised Fresnel energy coefficient
    bool opl = true;        // accumulate optical path
    int max_newton = 40;    // iterations allowed for aspheres
    double newton_tol = 1e-13;  // |dt| (mm) accepted as converged
};

// Rays as separate contiguous arrays (all of length count). Direction cosines (l, m, n) are unit.
struct Rays {
    double *x, *y, *z, *l, *m, *n, *opl, *w;
    std::uint32_t* flags;
    std::ptrdiff_t count;
};
struct ConstRays {
    const double *x, *y, *z, *l, *m, *n, *opl, *w;
    const std::uint32_t* flags;
    std::ptrdiff_t count;
};

// Unpolarised Fresnel coefficients for incidence cosine ci from index n1 into n2 (ci in [0, 1]).
// Outputs amplitude rs, rp, ts, tp and energy R, T (T from the amplitudes, so R + T = 1 is a check).
void fresnel(double n1, double n2, const double* ci, std::ptrdiff_t count, double* rs, double* rp, double* ts,
             double* tp, double* r_energy, double* t_energy);

// Trace every alive ray of `in` through the surfaces in order and write the result to `out` (same count; `out`
// may be `in`). Rays are processed in fixed blocks of 128 in parallel, each block as vectorised passes over
// its rays (cpp/raytrace.cpp); the arithmetic of a ray is that of the scalar definition, operation by
// operation, so results depend neither on the thread count nor on the instruction set.
void trace(const Surface* surfaces, std::ptrdiff_t n_surfaces, const Options& opt, ConstRays in, Rays out);
// In place.
void trace(const Surface* surfaces, std::ptrdiff_t n_surfaces, const Options& opt, Rays rays);

}  // namespace icl::rt
