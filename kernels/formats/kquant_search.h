// The scale searches of ggml's K-quant reference quantizers (ggml-quants.c), reproduced with
// the same loops, constants and float expression order so that the chosen scales, and so
// the quantized bytes, are identical. Only the variants the *_ref quantizers call (no
// importance weights) are provided.
#pragma once

#include <cstdint>

namespace cke::kq {

// Groups whose largest |x| is below this are treated as all zero (ggml GROUP_MAX_EPS).
inline constexpr float kGroupMaxEps = 1e-15f;

// make_qx_quants with rmse_type = 1 and no quant weights (weights w_i = x_i^2): symmetric
// quantization to L[i] in 0..2*nmax-1 (value L - nmax); tries 18 scales around nmax/max
// and keeps the weighted least-squares best. Returns the scale (0 for an all-zero group).
// Used by q6_K.
float make_qx_quants_rmse1(int n, int nmax, const float* x, int8_t* L);

// make_q3_quants with do_rmse = true: symmetric levels -nmax..nmax-1, then up to 5 rounds
// of coordinate descent on the x^2-weighted error. L[i] in 0..2*nmax-1. Used by q3_K.
float make_q3_quants_rmse(int n, int nmax, const float* x, int8_t* L);

// make_qkx2_quants: asymmetric x ~ scale * L + min with L in 0..nmax, min <= 0; grid search
// over nstep+1 inverse scales (rmin + rdelta*is + nmax) / (max - min), each followed by a
// weighted least-squares fit of (scale, min). Error is weighted |diff| (use_mad) or diff^2.
// Returns the scale; *the_min receives -min (>= 0). Laux is scratch of n bytes.
// Used by q2_K, q4_K, q5_K.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);

}  // namespace cke::kq
