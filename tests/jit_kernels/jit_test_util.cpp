#include "jit_test_util.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "jit/kir/kir_c.h"
#include "kernels/formats/blocks.h"
#include "kernels/formats/quant.h"
#include "kernels/ref/linear.h"
#include "resolver/host_caps.h"

namespace cke::test {

std::string missing_isa(const jit::Generator& g) {
  static const HostCaps host = HostCaps::probe();
  std::string missing;
  for (int i = 0; i < g.n_isa; ++i) {
    const std::optional<Feature> f = feature_from_name(g.isa[i]);
    if (f && host.has(*f)) continue;
    if (!missing.empty()) missing += ',';
    missing += g.isa[i];
  }
  return missing;
}

namespace {

uint16_t f16(float v) {
  return fp32_to_fp16(v);
}

// A scale of random sign and a magnitude spread over several decades.
float random_scale(std::mt19937& rng) {
  std::uniform_real_distribution<float> e(-5.0f, 0.0f);
  std::bernoulli_distribution neg(0.3);
  const float m = std::pow(10.0f, e(rng));
  return neg(rng) ? -m : m;
}

float special_value(std::mt19937& rng) {
  const float v[] = {std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::quiet_NaN(),
                     0.0f,
                     -0.0f,
                     5.96e-8f /* f16 min */,
                     1e-40f /* f32 subnormal */,
                     65504.0f};
  return v[std::uniform_int_distribution<int>(0, 7)(rng)];
}

}  // namespace

std::vector<uint8_t> make_weights(DType t, int64_t K, int64_t N, WeightStyle s, std::mt19937& rng) {
  const size_t rb = row_bytes(t, K);
  std::vector<uint8_t> w(rb * size_t(N), 0);
  if (s == WeightStyle::Zero) return w;
  std::uniform_int_distribution<int> byte(0, 255);
  std::bernoulli_distribution rare(0.1);
  if (t == DType::F32) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    auto* f = reinterpret_cast<float*>(w.data());
    for (int64_t i = 0; i < K * N; ++i) {
      if (s == WeightStyle::Extreme)
        f[i] = byte(rng) & 1 ? 1e30f : -1e30f;
      else if (s == WeightStyle::SpecialScale && rare(rng))
        f[i] = special_value(rng);
      else
        f[i] = nd(rng) * random_scale(rng);
    }
    return w;
  }
  if (t == DType::F16) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    auto* h = reinterpret_cast<uint16_t*>(w.data());
    for (int64_t i = 0; i < K * N; ++i) {
      if (s == WeightStyle::Extreme)
        h[i] = f16(byte(rng) & 1 ? 65504.0f : -65504.0f);
      else if (s == WeightStyle::SpecialScale && rare(rng))
        h[i] = f16(special_value(rng));
      else
        h[i] = f16(nd(rng) * random_scale(rng));
    }
    return w;
  }
  if (t == DType::BF16) {
    // Extreme: +-3e38 (products overflow to Inf); SpecialScale adds Inf, NaN, signed zeros
    // and bf16 subnormals (1e-40: vdpbf16ps treats them as zero, DAZ).
    std::normal_distribution<float> nd(0.0f, 1.0f);
    auto* h = reinterpret_cast<uint16_t*>(w.data());
    for (int64_t i = 0; i < K * N; ++i) {
      if (s == WeightStyle::Extreme)
        h[i] = fp32_to_bf16(byte(rng) & 1 ? 3e38f : -3e38f);
      else if (s == WeightStyle::SpecialScale && rare(rng))
        h[i] = fp32_to_bf16(special_value(rng));
      else
        h[i] = fp32_to_bf16(nd(rng) * random_scale(rng));
    }
    return w;
  }
  if (t == DType::Q6_K) {
    // ql, qh: any bits; scales: any int8 (Extreme: -128 / 127 with all quants 63 or 0);
    // d: as the other formats' scales.
    for (int64_t r = 0; r < N; ++r)
      for (int64_t b = 0; b < K / 256; ++b) {
        auto* blk = reinterpret_cast<block_q6_K*>(w.data() + size_t(r) * rb) + b;
        for (auto& v : blk->ql)
          v = uint8_t(s == WeightStyle::Extreme ? (byte(rng) & 1 ? 0xFF : 0) : byte(rng));
        for (auto& v : blk->qh)
          v = uint8_t(s == WeightStyle::Extreme ? (byte(rng) & 1 ? 0xFF : 0) : byte(rng));
        for (auto& v : blk->scales)
          v = int8_t(s == WeightStyle::Extreme ? (byte(rng) & 1 ? 127 : -128) : byte(rng) - 128);
        blk->d = s == WeightStyle::Extreme ? f16(byte(rng) & 1 ? 65504.0f : -65504.0f)
                 : (s == WeightStyle::SpecialScale && rare(rng)) ? f16(special_value(rng))
                                                                 : f16(random_scale(rng));
      }
    return w;
  }
  if (t == DType::Q2_K || t == DType::Q3_K || t == DType::Q5_K) {
    // Every byte of quants, high bits and packed scales/mins is valid: any bits (Extreme:
    // 0x00 or 0xFF bytes: all quants and scales at their ends); d, dmin: as the other
    // formats' scales (Extreme: +-65504).
    const size_t bb = row_bytes(t, 256);
    const size_t d_off = t == DType::Q2_K   ? offsetof(block_q2_K, d)
                         : t == DType::Q3_K ? offsetof(block_q3_K, d)
                                            : offsetof(block_q5_K, d);
    const int nscales = t == DType::Q3_K ? 1 : 2;  // d (and dmin right after it)
    for (int64_t r = 0; r < N; ++r)
      for (int64_t b = 0; b < K / 256; ++b) {
        uint8_t* blk = w.data() + size_t(r) * rb + size_t(b) * bb;
        for (size_t i = 0; i < bb; ++i)
          blk[i] = uint8_t(s == WeightStyle::Extreme ? (byte(rng) & 1 ? 0xFF : 0) : byte(rng));
        for (int k = 0; k < nscales; ++k) {
          const uint16_t d = s == WeightStyle::Extreme ? f16(byte(rng) & 1 ? 65504.0f : -65504.0f)
                             : (s == WeightStyle::SpecialScale && rare(rng))
                                 ? f16(special_value(rng))
                                 : f16(random_scale(rng));
          std::memcpy(blk + d_off + 2 * k, &d, 2);
        }
      }
    return w;
  }
  if (t == DType::Q4_K) {
    // qs: any nibbles (Extreme: 0 or 15); 6-bit scales and mins packed as ggml packs them
    // (Extreme: 63 or 0); d, dmin: as the other formats' scales (Extreme: +-65504).
    auto scale = [&] {
      return s == WeightStyle::Extreme ? f16(byte(rng) & 1 ? 65504.0f : -65504.0f)
             : (s == WeightStyle::SpecialScale && rare(rng)) ? f16(special_value(rng))
                                                             : f16(random_scale(rng));
    };
    for (int64_t r = 0; r < N; ++r)
      for (int64_t b = 0; b < K / 256; ++b) {
        auto* blk = reinterpret_cast<block_q4_K*>(w.data() + size_t(r) * rb) + b;
        for (auto& v : blk->qs)
          v = uint8_t(s == WeightStyle::Extreme
                          ? (byte(rng) & 1 ? 0xFF : (byte(rng) & 1 ? 0xF0 : 0x0F))
                          : byte(rng));
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; ++j) {
          sc[j] = uint8_t(s == WeightStyle::Extreme ? (byte(rng) & 1 ? 63 : 0) : byte(rng) & 63);
          mn[j] = uint8_t(s == WeightStyle::Extreme ? (byte(rng) & 1 ? 63 : 0) : byte(rng) & 63);
        }
        std::memset(blk->scales, 0, sizeof blk->scales);
        for (int j = 0; j < 8; ++j) {  // ggml's make_qkx2 packing (quant_q4k_q5k.cpp)
          if (j < 4) {
            blk->scales[j] = sc[j];
            blk->scales[j + 4] = mn[j];
          } else {
            blk->scales[j + 4] = uint8_t((sc[j] & 0xF) | ((mn[j] & 0xF) << 4));
            blk->scales[j - 4] = uint8_t(blk->scales[j - 4] | ((sc[j] >> 4) << 6));
            blk->scales[j - 0] = uint8_t(blk->scales[j - 0] | ((mn[j] >> 4) << 6));
          }
        }
        blk->d = scale();
        blk->dmin = scale();
      }
    return w;
  }
  // The 32-element formats: fp16 d (q4_1, q5_1: and fp16 m), then q5's 32 high bits (any;
  // Extreme: 0 or all ones) and the quants (any nibbles or bytes; Extreme: the extremes).
  const bool q8 = t == DType::Q8_0;
  const bool has_m = t == DType::Q4_1 || t == DType::Q5_1;
  const int64_t bb = int64_t(rb) / (K / 32);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t b = 0; b < K / 32; ++b) {
      uint8_t* blk = w.data() + size_t(r) * rb + size_t(b * bb);
      for (int f = 0; f < (has_m ? 2 : 1); ++f) {
        uint16_t d;
        if (s == WeightStyle::Extreme)
          d = f16(byte(rng) & 1 ? 65504.0f : -65504.0f);
        else if (s == WeightStyle::SpecialScale && rare(rng))
          d = f16(special_value(rng));
        else
          d = f16(random_scale(rng));
        std::memcpy(blk + 2 * f, &d, 2);
      }
      for (int64_t i = has_m ? 4 : 2; i < bb; ++i) {
        int v = byte(rng);
        if (s == WeightStyle::Extreme)
          v = q8 ? (v & 1 ? 0x80 : 0x7F) : (v & 1 ? 0xF0 : 0x0F);
        else if (q8 && v == 0x80)
          v = 0x81;  // weights quantized by ggml never hold -128
        blk[i] = uint8_t(v);
      }
    }
  return w;
}

std::vector<float> make_acts(int64_t K, int64_t T, ActStyle s, std::mt19937& rng) {
  std::vector<float> x(size_t(K * T), 0.0f);
  if (s == ActStyle::Zero) return x;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> mag(-3.0f, 3.0f);
  std::bernoulli_distribution rare(0.02);
  float m = 1.0f;
  for (int64_t i = 0; i < K * T; ++i) {
    if (i % 32 == 0) m = std::pow(10.0f, mag(rng) / 3.0f);
    float v = nd(rng) * m;
    switch (s) {
      case ActStyle::Large:
        v = nd(rng) * (rare(rng) ? 3e38f : 1e30f);
        break;
      case ActStyle::NaNs:
        if (rare(rng))
          v = rare(rng) ? std::numeric_limits<float>::infinity()
                        : std::numeric_limits<float>::quiet_NaN();
        break;
      case ActStyle::Subnormal:
        v = nd(rng) * 1e-39f;
        break;
      case ActStyle::Tiny: {
        std::uniform_real_distribution<float> e(-38.0f, -33.0f);
        v = (nd(rng) < 0 ? -1.0f : 1.0f) * std::pow(10.0f, e(rng));
        break;
      }
      default:
        break;
    }
    x[size_t(i)] = v;
  }
  return x;
}

std::string compare_kernels(jit::LinearFn jit, jit::LinearFn ref, const std::vector<uint8_t>& w,
                            const std::vector<uint8_t>& x, int64_t K, int64_t N, int64_t T,
                            int64_t n0, int64_t n1, jit::LinearFn c,
                            const std::vector<uint8_t>* w_kernel) {
  constexpr float kSentinel = -7777.25f;
  const uint8_t* wk = w_kernel ? w_kernel->data() : w.data();  // the kernel's weight layout
  std::vector<float> yr(size_t(N * T), kSentinel), yj(size_t(N * T), kSentinel);
  ref(x.data(), w.data(), yr.data(), K, N, T, n0, n1);
  jit(x.data(), wk, yj.data(), K, N, T, n0, n1);
  if (c) {
    // The emitted C against the machine code: the same description, so the same bits. A
    // NaN's sign and payload are the exception (jit/kir/kir_c.h: the C compiler may
    // commute the operands of an add, and x86 returns the first NaN operand).
    std::vector<float> yc(size_t(N * T), kSentinel);
    c(x.data(), wk, yc.data(), K, N, T, n0, n1);
    for (size_t i = 0; i < yc.size(); ++i)
      if (!(std::isnan(yc[i]) && std::isnan(yj[i])) &&
          std::memcmp(&yc[i], &yj[i], sizeof(float)) != 0) {
        std::ostringstream os;
        os << "K=" << K << " N=" << N << " T=" << T << " rows [" << n0 << "," << n1
           << "): emitted C differs from the JIT at y[t=" << i / size_t(N)
           << "][n=" << i % size_t(N) << "]: c=" << yc[i] << " jit=" << yj[i];
        return os.str();
      }
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = size_t(t * N + n);
      // NaN sign and payload are not arithmetic: x86 returns the first NaN operand, and
      // which operand is first in the reference is up to the C++ compiler (commuted adds,
      // libm's fma). Any NaN matches any NaN; every other value must match bit for bit.
      if (std::isnan(yr[i]) && std::isnan(yj[i])) continue;
      if (std::memcmp(&yr[i], &yj[i], sizeof(float)) != 0) {
        uint32_t br, bj;
        std::memcpy(&br, &yr[i], 4);
        std::memcpy(&bj, &yj[i], 4);
        std::ostringstream os;
        os << "K=" << K << " N=" << N << " T=" << T << " rows [" << n0 << "," << n1
           << "): y[t=" << t << "][n=" << n << "] ref=" << yr[i] << " (0x" << std::hex << br
           << ") jit=" << std::dec << yj[i] << " (0x" << std::hex << bj << ")";
        return os.str();
      }
    }
  return "";
}

GuardedBuffer::GuardedBuffer(const void* bytes, size_t n) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t body = (n + page - 1) / page * page;
  map_len_ = body + page;
  map_ = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) throw std::runtime_error("mmap failed");
  mprotect(static_cast<uint8_t*>(map_) + body, page, PROT_NONE);
  data_ = static_cast<uint8_t*>(map_) + (body - n);
  std::memcpy(data_, bytes, n);
}

GuardedBuffer::~GuardedBuffer() {
  munmap(map_, map_len_);
}

CompiledC::CompiledC(const std::string& c_source, const std::string& id,
                     const std::string& isa_flags) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir = fs::temp_directory_path() /
                       ("cke_kc_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(dir);
  const fs::path src = dir / (id + ".c"), so = dir / (id + ".so");
  std::ofstream(src) << "#include <immintrin.h>\n#include <stdint.h>\n" << c_source;
  const char* cc = std::getenv("CC");
  const std::string cmd = std::string(cc && *cc ? cc : "cc") +
                          " -std=c11 -fPIC -shared -Wall -Wextra -Werror " +
                          jit::kir::kCNumericsFlags + " " + isa_flags + " -o '" + so.string() +
                          "' '" + src.string() + "'";
  if (std::system(cmd.c_str()) != 0) {
    error_ = "the C compiler failed: " + cmd;
    return;
  }
  handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    error_ = dlerror();
    return;
  }
  sym_ = dlsym(handle_, id.c_str());
  fn_ = reinterpret_cast<jit::LinearFn>(sym_);
  if (!fn_) error_ = "no symbol " + id + " in " + so.string();
  fs::remove_all(dir);
}

CompiledC::~CompiledC() {
  if (handle_) dlclose(handle_);
}

}  // namespace cke::test
