#include "linear_oracle.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels/formats/quant.h"
#include "kernels/ref/act_quant.h"

namespace cke::test {
namespace {

template <class B>
B block_at(const uint8_t* row, int64_t i) {
  B b;
  std::memcpy(&b, row + i * static_cast<int64_t>(sizeof(B)), sizeof(B));
  return b;
}

double h2d(uint16_t h) {
  return fp16_to_fp32(h);
}

// ggml's get_scale_min_k4, restated: 8 six-bit (scale, min) pairs in 12 bytes.
void scale_min_k4(int j, const uint8_t* q, int* sc, int* mn) {
  if (j < 4) {
    *sc = q[j] & 63;
    *mn = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

}  // namespace

const std::vector<Provider>& providers() {
  static const std::vector<Provider> all = {
      {"linear_f32_f32__ref", DType::F32, ActKind::F32, linear_f32_f32__ref},
      {"linear_f16_f32__ref", DType::F16, ActKind::F16, linear_f16_f32__ref},
      {"linear_bf16_f32__ref", DType::BF16, ActKind::BF16, linear_bf16_f32__ref},
      {"linear_f32_tinyblas_f32__ref", DType::F32, ActKind::F32, linear_f32_tinyblas_f32__ref},
      {"linear_f16_tinyblas_f32__ref", DType::F16, ActKind::F16, linear_f16_tinyblas_f32__ref},
      {"linear_bf16_tinyblas_f32__ref", DType::BF16, ActKind::BF16, linear_bf16_tinyblas_f32__ref},
      {"linear_q8_0_f32__ref", DType::Q8_0, ActKind::Q8_0, linear_q8_0_f32__ref},
      {"linear_q4_0_f32__ref", DType::Q4_0, ActKind::Q8_0, linear_q4_0_f32__ref},
      {"linear_q4_1_f32__ref", DType::Q4_1, ActKind::Q8_1, linear_q4_1_f32__ref},
      {"linear_q5_0_f32__ref", DType::Q5_0, ActKind::Q8_0, linear_q5_0_f32__ref},
      {"linear_q5_1_f32__ref", DType::Q5_1, ActKind::Q8_1, linear_q5_1_f32__ref},
      {"linear_q2_K_f32__ref", DType::Q2_K, ActKind::Q8_K, linear_q2_K_f32__ref},
      {"linear_q3_K_f32__ref", DType::Q3_K, ActKind::Q8_K, linear_q3_K_f32__ref},
      {"linear_q4_K_f32__ref", DType::Q4_K, ActKind::Q8_K, linear_q4_K_f32__ref},
      {"linear_q5_K_f32__ref", DType::Q5_K, ActKind::Q8_K, linear_q5_K_f32__ref},
      {"linear_q6_K_f32__ref", DType::Q6_K, ActKind::Q8_K, linear_q6_K_f32__ref},
      // ggml's repacked arithmetic (test_repacked.cpp)
      {"linear_q4_0x8_f32__ref", DType::Q4_0, ActKind::Q8_0, linear_q4_0x8_f32__ref},
      {"linear_q4_Kx8_f32__ref", DType::Q4_K, ActKind::Q8_K, linear_q4_Kx8_f32__ref},
      {"linear_q2_Kx8_f32__ref", DType::Q2_K, ActKind::Q8_K, linear_q2_Kx8_f32__ref},
  };
  return all;
}

const Provider& provider(const std::string& id) {
  for (const Provider& p : providers())
    if (id == p.id) return p;
  throw std::runtime_error("no provider " + id);
}

ExactRow decode_weight_exact(DType t, const uint8_t* row, int64_t K) {
  ExactRow r;
  r.s.assign(K, 0.0);
  r.m.assign(K, 0.0);
  for (int64_t e = 0; e < K; ++e) {
    double s = 0, m = 0;
    switch (t) {
      case DType::F32: {
        float v;
        std::memcpy(&v, row + 4 * e, 4);
        s = v;
        break;
      }
      case DType::F16:
      case DType::BF16: {
        uint16_t h;
        std::memcpy(&h, row + 2 * e, 2);
        s = t == DType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
        break;
      }
      case DType::Q8_0: {
        const auto b = block_at<block_q8_0>(row, e / 32);
        s = h2d(b.d) * b.qs[e % 32];
        break;
      }
      case DType::Q4_0: {
        const auto b = block_at<block_q4_0>(row, e / 32);
        const int i = e % 32;
        s = h2d(b.d) * ((i < 16 ? (b.qs[i] & 0xF) : (b.qs[i - 16] >> 4)) - 8);
        break;
      }
      case DType::Q4_1: {
        const auto b = block_at<block_q4_1>(row, e / 32);
        const int i = e % 32;
        s = h2d(b.d) * (i < 16 ? (b.qs[i] & 0xF) : (b.qs[i - 16] >> 4));
        m = -h2d(b.m);
        break;
      }
      case DType::Q5_0:
      case DType::Q5_1: {
        // Same bit layout; q5_1 has the extra fp16 m after d.
        const int i = e % 32;
        uint16_t d = 0, mm = 0;
        uint8_t qh[4], qs[16];
        if (t == DType::Q5_0) {
          const auto b = block_at<block_q5_0>(row, e / 32);
          d = b.d;
          std::memcpy(qh, b.qh, 4);
          std::memcpy(qs, b.qs, 16);
        } else {
          const auto b = block_at<block_q5_1>(row, e / 32);
          d = b.d;
          mm = b.m;
          std::memcpy(qh, b.qh, 4);
          std::memcpy(qs, b.qs, 16);
        }
        const int lo = i < 16 ? (qs[i] & 0xF) : (qs[i - 16] >> 4);
        const int hi = (qh[i / 8] >> (i % 8)) & 1;
        const int q = lo | (hi << 4);
        if (t == DType::Q5_0) {
          s = h2d(d) * (q - 16);
        } else {
          s = h2d(d) * q;
          m = -h2d(mm);
        }
        break;
      }
      case DType::Q2_K: {
        const auto b = block_at<block_q2_K>(row, e / 256);
        const int i = e % 256, h = i / 128, sh = (i % 128) / 32, l = i % 32;
        const int q = (b.qs[32 * h + l] >> (2 * sh)) & 3;
        const uint8_t sc = b.scales[i / 16];
        s = h2d(b.d) * (sc & 0xF) * q;
        m = h2d(b.dmin) * (sc >> 4);
        break;
      }
      case DType::Q3_K: {
        const auto b = block_at<block_q3_K>(row, e / 256);
        const int i = e % 256, h = i / 128, sh = (i % 128) / 32, l = i % 32;
        const int lo = (b.qs[32 * h + l] >> (2 * sh)) & 3;
        const int hbit = (b.hmask[l] >> (i / 32)) & 1;
        const int k = i / 16;
        const int low4 = k < 8 ? (b.scales[k] & 0xF) : (b.scales[k - 8] >> 4);
        const int high2 = (b.scales[8 + k % 4] >> (2 * (k / 4))) & 3;
        s = h2d(b.d) * ((low4 | (high2 << 4)) - 32) * (lo - (hbit ? 0 : 4));
        break;
      }
      case DType::Q4_K:
      case DType::Q5_K: {
        const int i = e % 256, c = i / 64, half = (i % 64) / 32, l = i % 32;
        uint16_t d, dmin;
        uint8_t scales[12], byte;
        int hbit = 0;
        if (t == DType::Q4_K) {
          const auto b = block_at<block_q4_K>(row, e / 256);
          d = b.d, dmin = b.dmin, byte = b.qs[32 * c + l];
          std::memcpy(scales, b.scales, 12);
        } else {
          const auto b = block_at<block_q5_K>(row, e / 256);
          d = b.d, dmin = b.dmin, byte = b.qs[32 * c + l];
          std::memcpy(scales, b.scales, 12);
          hbit = (b.qh[l] >> (2 * c + half)) & 1;
        }
        const int q = (half ? (byte >> 4) : (byte & 0xF)) | (hbit << 4);
        int sc, mn;
        scale_min_k4(i / 32, scales, &sc, &mn);
        s = h2d(d) * sc * q;
        m = h2d(dmin) * mn;
        break;
      }
      case DType::Q6_K: {
        const auto b = block_at<block_q6_K>(row, e / 256);
        const int i = e % 256, h = i / 128, sh = (i % 128) / 32, l = i % 32;
        const uint8_t lbyte = b.ql[64 * h + 32 * (sh & 1) + l];
        const int lo = sh < 2 ? (lbyte & 0xF) : (lbyte >> 4);
        const int hi = (b.qh[32 * h + l] >> (2 * sh)) & 3;
        s = h2d(b.d) * b.scales[i / 16] * ((lo | (hi << 4)) - 32);
        break;
      }
      default:
        throw std::runtime_error("decode_weight_exact: unsupported type");
    }
    r.s[e] = s;
    r.m[e] = m;
  }
  return r;
}

ExactAct convert_activation_exact(ActKind k, const float* x, int64_t K) {
  ExactAct r;
  r.a.resize(K);
  switch (k) {
    case ActKind::F32:
      for (int64_t e = 0; e < K; ++e) r.a[e] = x[e];
      break;
    case ActKind::F16:
    case ActKind::BF16: {
      std::vector<uint16_t> h(K);
      if (k == ActKind::F16)
        act_convert_f16(x, h.data(), K);
      else
        act_convert_bf16(x, h.data(), K);
      for (int64_t e = 0; e < K; ++e)
        r.a[e] = k == ActKind::F16 ? fp16_to_fp32(h[e]) : bf16_to_fp32(h[e]);
      break;
    }
    case ActKind::Q8_0: {
      std::vector<block_q8_0> b(K / 32);
      act_quantize_q8_0(x, b.data(), K);
      for (int64_t e = 0; e < K; ++e) r.a[e] = h2d(b[e / 32].d) * b[e / 32].qs[e % 32];
      break;
    }
    case ActKind::Q8_1: {
      std::vector<block_q8_1> b(K / 32);
      act_quantize_q8_1(x, b.data(), K);
      for (int64_t e = 0; e < K; ++e) r.a[e] = h2d(b[e / 32].d) * b[e / 32].qs[e % 32];
      for (const auto& blk : b) r.s_q8_1.push_back(h2d(blk.s));
      break;
    }
    case ActKind::Q8_K: {
      std::vector<block_q8_K> b(K / 256);
      act_quantize_q8_K(x, b.data(), K);
      for (int64_t e = 0; e < K; ++e)
        r.a[e] = static_cast<double>(b[e / 256].d) * b[e / 256].qs[e % 256];
      break;
    }
  }
  return r;
}

OracleDot oracle_dot(const Provider& p, const uint8_t* wrow, const float* x, int64_t K) {
  const ExactRow w = decode_weight_exact(p.wtype, wrow, K);
  const ExactAct a = convert_activation_exact(p.act, x, K);
  OracleDot o;
  for (int64_t e = 0; e < K; ++e) {
    o.value += w.s[e] * a.a[e];
    o.mag += std::fabs(w.s[e] * a.a[e]);
  }
  if (p.act == ActKind::Q8_1) {
    // q4_1/q5_1: the min term is m * s per block, s = the Q8_1 block's stored sum.
    for (int64_t b = 0; b < K / 32; ++b) {
      o.value += -w.m[32 * b] * a.s_q8_1[b];
      o.mag += std::fabs(w.m[32 * b] * a.s_q8_1[b]);
    }
  } else {
    for (int64_t e = 0; e < K; ++e) {
      o.value -= w.m[e] * a.a[e];
      o.mag += std::fabs(w.m[e] * a.a[e]);
    }
  }
  return o;
}

int64_t rounding_steps(const Provider& p, int64_t K) {
  // tinyBLAS: one FMA (bf16: two dpbf16 adds per 32) per 16 elements and lane, 4 levels.
  if (p.tinyblas()) return K / 16 + 4;
  switch (p.act) {
    case ActKind::F32:
    case ActKind::F16:
      // FMA chain per lane, 2 folds, 4 reduce levels; then the n % 64 tail one by one
      // (a rounded product and an add each), and for f16 the final double -> float.
      return K / 64 + 6 + 2 * (K % 64) + 1;
    case ActKind::BF16:
      return 2 * (K / 64) + 4 + 1 + 2 * (K % 64) + 1;
    case ActKind::Q8_0:
    case ActKind::Q8_1:
      // fl(dw * da), one FMA per block per lane, hsum8 (3), plus summs and its final add.
      return 1 + K / 32 + 3 + 1;
    case ActKind::Q8_K:
      // fl(da * dw), 1-2 FMAs per super-block per lane, hsum8 (3) and the min part.
      return 1 + 2 * (K / 256) + 3 + 3;
  }
  return 0;
}

int64_t rounding_steps_repacked(const Provider& p, int64_t K, bool gemm) {
  const int64_t nb = K / 256;
  switch (p.wtype) {
    case DType::Q4_0:
      // fl(dw * da), then one FMA per 32-block (|block sum| <= 32*8*128: exact as float).
      return 1 + K / 32;
    case DType::Q4_K:
      // fl(dw * da); int32 -> float may round (a super-block sum reaches ~2^25); an FMA
      // per super-block (gemv) or per 64 elements (gemm); acc - accmin.
      return 1 + 1 + (gemm ? 4 * nb : nb) + 1;
    case DType::Q2_K:
      return 1 + 1 + (gemm ? 2 * nb : nb) + 1;
    default:
      return rounding_steps(p, K);
  }
}

std::vector<uint8_t> random_weights(DType t, int64_t K, int64_t N, std::mt19937& rng) {
  const size_t rb = row_bytes(t, K);
  std::vector<uint8_t> w(rb * N);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> scale(0.002f, 0.05f);
  std::uniform_int_distribution<int> byte(0, 255);
  if (t == DType::F32 || t == DType::F16 || t == DType::BF16) {
    for (int64_t i = 0; i < K * N; ++i) {
      const float v = nd(rng);
      if (t == DType::F32) {
        std::memcpy(&w[4 * i], &v, 4);
      } else {
        const uint16_t h = t == DType::F16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
        std::memcpy(&w[2 * i], &h, 2);
      }
    }
    return w;
  }
  for (auto& b : w) b = static_cast<uint8_t>(byte(rng));
  const int64_t bs = dtype_info(t).block_size, nblocks = K / bs * N;
  const size_t bsize = dtype_info(t).type_size;
  auto h = [&](bool allow_negative) {
    float v = scale(rng);
    if (allow_negative && (rng() & 1)) v = -v;
    return fp32_to_fp16(v);
  };
  for (int64_t i = 0; i < nblocks; ++i) {
    uint8_t* p = w.data() + i * bsize;
    auto patch = [&](auto blk) {
      std::memcpy(&blk, p, sizeof blk);
      using B = decltype(blk);
      if constexpr (requires { blk.dmin; }) blk.dmin = h(false);
      if constexpr (requires { blk.m; }) blk.m = h(true);
      blk.d = h(!std::is_same_v<B, block_q2_K> && !std::is_same_v<B, block_q4_K> &&
                !std::is_same_v<B, block_q5_K>);
      std::memcpy(p, &blk, sizeof blk);
    };
    switch (t) {
      case DType::Q8_0:
        patch(block_q8_0{});
        break;
      case DType::Q4_0:
        patch(block_q4_0{});
        break;
      case DType::Q4_1:
        patch(block_q4_1{});
        break;
      case DType::Q5_0:
        patch(block_q5_0{});
        break;
      case DType::Q5_1:
        patch(block_q5_1{});
        break;
      case DType::Q2_K:
        patch(block_q2_K{});
        break;
      case DType::Q3_K:
        patch(block_q3_K{});
        break;
      case DType::Q4_K:
        patch(block_q4_K{});
        break;
      case DType::Q5_K:
        patch(block_q5_K{});
        break;
      case DType::Q6_K:
        patch(block_q6_K{});
        break;
      default:
        throw std::runtime_error("random_weights: unsupported type");
    }
  }
  return w;
}

}  // namespace cke::test
