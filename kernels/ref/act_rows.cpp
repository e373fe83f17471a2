#include "kernels/ref/act_rows.h"

#include <cstring>

#include "kernels/formats/quant.h"
#include "kernels/ref/act_quant.h"

extern "C" void cke_act_q8_0f_rows(const float* x, int64_t K, int64_t T, uint8_t* out) {
  const int64_t nb = K / 32;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      // act_quantize_q8_0 is block-local: one block at a time needs no buffer.
      cke::block_q8_0 q;
      cke::act_quantize_q8_0(x + t * K + b * 32, &q, 32);
      uint8_t* o = out + (t * nb + b) * cke::kQ8_0fBlockBytes;
      std::memcpy(o, q.qs, 32);
      const float d = cke::fp16_to_fp32(q.d);
      std::memcpy(o + 32, &d, sizeof d);
    }
}
