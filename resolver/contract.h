// Numerical contracts (schema cke.contract/1): the equivalence classes of arithmetic.
//
// Two providers compete only if they name the same contract. A contract fixes the op (and
// variant), the numerical profile it implements (`ggml` = what llama.cpp's CPU backend
// computes), the dtype of every port, the typed params, how it accumulates and rounds, the
// scalar reference provider (the oracle) and the comparison every provider must pass
// against it. The resolver derives the one contract of a query from
// (op, variant, profile, port dtypes): see resolve.h.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/formats/dtype.h"
#include "resolver/expr.h"
#include "resolver/load_error.h"
#include "resolver/types.h"

namespace cke {

struct Comparison {
  enum class Kind : uint8_t { BitExact, Ulp, Rel };
  Kind kind = Kind::BitExact;
  double bound = 0;         // Ulp: max ulp distance per element; Rel: max |a-b| / max|ref| per row
  std::string str() const;  // "bit_exact", "ulp:2", "rel:1e-05"
  bool operator==(const Comparison&) const = default;
};

struct ContractPort {
  std::string name;
  std::optional<DType> dtype;  // nullopt: `any` (a dtype-generic port, e.g. a byte copy)
  bool operator==(const ContractPort&) const = default;
};

// A port whose values reach the provider converted: a circuit edge of dtype `from` feeds it
// through a conversion step of contract `via` (ggml's conversion of a matmul's activations
// to the weight's vec_dot type). See resolver/conversions.h.
struct ContractConvert {
  std::string port;
  DType from;
  std::string via;  // contract id of the conversion (ports x: from, y: this port's dtype)
  bool operator==(const ContractConvert&) const = default;
};

// One stage of a fused contract (`composes`): a contract of the circuit-level pattern, each
// of its ports bound by name to a port of the fused contract. A port name two stages share
// is the buffer between them (rmsnorm's y is act_quant's x).
struct ContractStage {
  std::string contract;
  std::vector<std::pair<std::string, std::string>> ports;  // stage port -> fused port
  bool operator==(const ContractStage&) const = default;
};

struct ContractParam {
  std::string name;
  ParamType type;
  bool operator==(const ContractParam&) const = default;
};

struct Contract {
  std::string file;    // where it was loaded from
  std::string sha256;  // of the file's bytes
  std::string id;      // e.g. "linear.q4_0.ggml"
  std::string op;
  std::string variant;              // empty when the op has no variants
  std::string profile;              // e.g. "ggml"
  std::vector<ContractPort> ports;  // declaration order
  std::vector<ContractParam> params;
  std::string accumulator;                // none | f32 | f64 | i32_f32 | mixed
  std::optional<DType> activation_quant;  // the vec_dot type activations are converted to
  std::string reduction_order;            // prose, exact
  std::vector<std::string> rounding;      // rounding points, prose
  bool thread_count_changes_arithmetic = false;
  // A row's result depends on how many tokens the call has (ggml's repacked gemm for groups
  // of 4 tokens and gemv for the rest; the flash loop tiled from 64 tokens; a layout that
  // interleaves rows). A batched decode (plan.h) runs such steps one token at a time.
  bool token_count_changes_arithmetic = false;
  std::string reference;  // provider id of the scalar oracle
  Comparison comparison;
  // Optional: the shapes the contract covers, over <port>_ne<i> (dimension i of a port, ggml
  // order). Where ggml picks another arithmetic by shape (its repacked kernels when a
  // matrix has a multiple of 8 rows), that arithmetic is its own contract, and `when`
  // says which one a query gets: "w_ne1 % 8 == 0".
  std::optional<Expr> when;
  std::vector<ContractConvert> converts;
  // A fused contract: the arithmetic of these contracts run one after another on
  // consecutive graph nodes, bit for bit (the resolver's fusion pass, resolve.h). Its ports
  // are every buffer the pattern touches: a fused provider writes all that the stages
  // write, so the memory after it is the unfused plan's.
  std::vector<ContractStage> composes;
  std::string notes;

  const ContractPort* port(std::string_view name) const;
  const ContractParam* param(std::string_view name) const;
  bool operator==(const Contract&) const = default;
};

// Parses one contract document; `file` names it in errors. Checks the schema only (the
// registry checks references across files).
std::optional<Contract> parse_contract(std::string_view yaml, const std::string& file,
                                       std::vector<LoadError>* errors);
std::optional<Contract> load_contract(const std::filesystem::path& path,
                                      std::vector<LoadError>* errors);

}  // namespace cke
