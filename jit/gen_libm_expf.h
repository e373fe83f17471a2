// libm's expf on 16 f32 lanes, bit for bit: the function ggml's flash attention calls once
// per cell and head for its online softmax (ms = expf(M_old - M), vs = expf(s - M)).
//
// Which expf. glibc (2.28 and later; Debian 12 ships 2.36) computes expf in double with a
// 32-entry table of 2^(i/32) and a cubic (sysdeps/ieee754/flt-32/e_expf.c), and on a host
// with AVX2 and FMA its ifunc picks the build of that file compiled with -mfma, whose
// contracted operations this reproduces; CKE's generated kernels require FMA, so that is
// the build every host running them uses. Read off the libm.so.6 of Debian 12 (the
// instructions of its __expf_fma), per lane:
//   xd  = double(x)
//   kds = fma(N/ln2, xd, 0x1.8p52)               (N = 32; kds's low bits are k = round(xd N/ln2))
//   kd  = kds - 0x1.8p52
//   r   = fma(N/ln2, xd, -kd)
//   s   = bits(T[k % 32] + (k << 47))            (T[i] = bits(2^(i/32)) - (i << 47))
//   y   = fma(fma(r, C0, C1), r * r, fma(r, C2, 1)) * s
//   expf(x) = float(y)                           (round to nearest)
// for |x| < 88 and for x in [-0x1.9d1d9ep6, 0x1.62e42ep6]; outside: +inf above 0x1.62e42ep6,
// 0 below -0x1.9fe368p6 (-inf included), 0x1p-149 in between (its "may underflow" value,
// 0x1.4p-75f squared), x + x for a NaN. tests/jit/test_libm_expf.cpp compares every lane
// with the host's expf, over all 2^32 inputs when asked (CKE_EXPF_EXHAUSTIVE=1).
#pragma once

#include "jit/gen_lanes16.h"

namespace cke::jit::gen {

// The constants, made once per kernel (outside its loops): doubles as full-width vectors of
// f64 lanes, the table on the stack (256 bytes), the f32 bounds.
struct LibmExpConsts {
  kir::V inv_ln2_n, shift, c0, c1, c2, one, sign, low5;  // f64 lanes (low5: integer 31)
  kir::V table;                                          // pointer to T[0..31]
  V16 over, under, may_under, inf, tiny, zero;           // f32 lanes
};
LibmExpConsts libm_exp_consts(Lanes16& L);

// d = expf(x) per lane (d may be x).
void libm_expf16(Lanes16& L, const LibmExpConsts& c, V16 d, V16 x);

}  // namespace cke::jit::gen
