// Circuits (schema cke.circuit/1): what a model architecture computes, as requirements.
//
// One file per GGUF `general.architecture`. It binds hyper-parameters from GGUF metadata,
// names the weights (GGUF tensor names, expected shapes), declares the buffers (inputs,
// f32 activations, persistent state such as the KV cache, outputs) and lists the op
// instances of the header, of each layer and of the footer with named port edges and
// params. It never names a provider: which kernel runs is the resolver's decision.
// docs/circuits.md documents every field with the annotated llama circuit.
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

struct HparamSpec {
  std::string name;
  ParamType type = ParamType::I64;
  std::string key;                    // GGUF metadata key, or
  std::string tensor;                 // a tensor whose dimension gives the value,
  int tensor_dim = 0;                 //   and which dimension
  std::optional<Expr> default_value;  // when the key is absent (may name other hparams)
};

struct WeightSpec {
  std::string name;
  std::string tensor;       // GGUF name; "{L}" is replaced by the layer index
  std::vector<Expr> shape;  // expected shape (ggml order)
  bool per_layer = false;
  bool optional = false;  // may be absent; nodes guard on `has_<name>` in `when`
  std::string fallback;   // absent → use this (non per-layer) weight instead (tied output)
};

enum class BufferKind : uint8_t { Input, Activation, State, Output, Weight };
std::string_view buffer_kind_name(BufferKind k);

struct BufferSpec {
  std::string name;
  BufferKind kind;
  DType dtype = DType::F32;
  // State only, `dtype: cache_type`: the KV cache type the build chose (InstanceOptions).
  bool dtype_is_cache_type = false;
  std::vector<Expr> shape;  // may use T (tokens in the chunk), n_ctx and flash_attn
  std::string layout = "row_major";
  bool per_layer = false;  // state only: one buffer per layer
};

struct PortEdge {
  std::string port;
  std::string buffer;                     // a weight, input, activation, state or output
  std::optional<std::vector<Expr>> view;  // a reshape of the whole buffer (same element count)
};

struct NodeSpec {
  std::string name;
  std::string op;
  std::string variant;
  std::string profile;
  std::vector<PortEdge> ports;
  std::vector<std::pair<std::string, Expr>> params;
  std::optional<Expr> when;  // the node exists only where this is true
  std::string path;          // "layer[3]" etc., for errors
};

struct Circuit {
  std::string file;
  std::string sha256;
  std::string architecture;
  // Which models of `architecture` this circuit describes: a predicate over hparams and
  // derived values (e.g. "n_expert > 0"); absent = every model. Several circuits may serve
  // one architecture (`<arch>.yaml`, `<arch>.<name>.yaml`): a model must be selected by
  // exactly one of them (select_circuit, resolver/graph.h), else it fails to load.
  std::optional<Expr> select;
  std::vector<HparamSpec> hparams;
  std::vector<std::pair<std::string, Expr>> derived;
  Expr layers = Expr::constant(Value::integer(0), "0");  // number of layers
  std::vector<Expr> checks;  // predicates over hparams that must hold for a model
  std::vector<WeightSpec> weights;
  std::vector<BufferSpec> buffers;  // inputs, activations, state, outputs
  std::vector<NodeSpec> header, layer, footer;

  const WeightSpec* weight(std::string_view name) const;
  const BufferSpec* buffer(std::string_view name) const;
};

// Parses and validates one circuit: schema, every expression, every name an expression or
// a port edge uses, and that no node names a provider.
std::optional<Circuit> parse_circuit(std::string_view yaml, const std::string& file,
                                     std::vector<LoadError>* errors);
std::optional<Circuit> load_circuit(const std::filesystem::path& path,
                                    std::vector<LoadError>* errors);
// `<dir>/<architecture>.yaml` in the first dir that has it.
std::optional<std::filesystem::path> find_circuit(std::string_view architecture,
                                                  const std::vector<std::filesystem::path>& dirs);
// Every circuit file of `architecture`: `<architecture>.yaml` and `<architecture>.<name>.yaml`
// in dirs, a file name in an earlier dir hiding the same name in later ones; sorted by name.
std::vector<std::filesystem::path> circuit_files(std::string_view architecture,
                                                 const std::vector<std::filesystem::path>& dirs);
// Whether a file name (stem) names a circuit of `architecture`: "llama" or "llama.<name>".
bool circuit_stem_matches(std::string_view stem, std::string_view architecture);

}  // namespace cke
