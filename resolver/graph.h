// Graph: a circuit instantiated for one model — concrete nodes and buffers.
//
// instantiate() binds the circuit's hyper-parameters from the model's metadata, checks
// every weight tensor against its expected shape, evaluates every shape and param, and
// unrolls the layers. Shapes are concrete except the token count: a dim is an Int or a
// multiple of T (the tokens of the chunk, 1 in decode, at most `max_tokens` in prefill).
// The graph knows nothing about kernels; the resolver picks them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernels/formats/dtype.h"
#include "resolver/circuit.h"
#include "resolver/expr.h"
#include "resolver/load_error.h"

namespace cke {

struct TensorFact {
  DType dtype;
  std::vector<int64_t> shape;  // ggml order
};

// A key that is present but holds nothing a circuit can read (an array, an integer past
// int64): its description, for the error that names the key (never a silent default).
struct MetaUnreadable {
  std::string what;  // e.g. "an array of 3 u32"
};
using MetaValue = std::variant<int64_t, double, std::string, MetaUnreadable>;

// What instantiate() needs to know about a model (the runtime adapts its GGUF reader).
class ModelFacts {
 public:
  virtual ~ModelFacts() = default;
  virtual std::optional<MetaValue> key(std::string_view name) const = 0;
  virtual std::optional<TensorFact> tensor(std::string_view name) const = 0;
};

// ModelFacts from in-memory tables (tests, tools).
class MapModelFacts : public ModelFacts {
 public:
  void set_key(std::string name, MetaValue v);
  void set_tensor(std::string name, TensorFact t);
  void erase_tensor(std::string_view name);
  void erase_key(std::string_view name);
  std::optional<MetaValue> key(std::string_view name) const override;
  std::optional<TensorFact> tensor(std::string_view name) const override;

 private:
  std::vector<std::pair<std::string, MetaValue>> keys_;
  std::vector<std::pair<std::string, TensorFact>> tensors_;
};

struct GraphBuffer {
  std::string name;  // the circuit's name
  int layer = -1;    // per-layer weights and state: the layer; shared buffers: -1
  BufferKind kind;
  DType dtype;
  std::vector<Value> shape;  // Int or c*T dims
  std::string layout;
  std::string tensor;         // weights: the GGUF tensor name
  uint64_t bytes = 0;         // size with T = max_tokens
  std::string label() const;  // "wq@3", "x"
};

struct GraphPort {
  std::string port;
  int buffer;                // index into Graph::buffers
  std::vector<Value> shape;  // the buffer's shape or the edge's view of it
};

struct GraphNode {
  std::string name;
  std::string section;  // header | layer | footer
  int layer = -1;
  std::string op;
  std::string variant;
  std::string profile;
  std::vector<GraphPort> ports;
  std::vector<std::pair<std::string, Value>> params;
  std::string label() const;  // "blk.3.wq" for layer nodes, else the name
  const GraphPort* port(std::string_view name) const;
};

struct Graph {
  std::string architecture;
  std::string circuit_file;
  std::string circuit_sha256;
  int64_t n_layer = 0;
  int64_t n_ctx = 0;
  int64_t max_tokens = 0;
  std::vector<std::pair<std::string, Value>> values;  // hparams and derived, evaluated
  std::vector<GraphBuffer> buffers;
  std::vector<GraphNode> nodes;  // header, layers in order, footer

  std::optional<Value> value(std::string_view name) const;
};

struct InstanceOptions {
  int64_t n_ctx = 0;       // context size (KV cache cells), >= 1
  int64_t max_tokens = 0;  // prefill chunk size, 1..n_ctx
  // The KV cache type: state buffers declared `dtype: cache_type`. F32 (llama.cpp's `exact`:
  // no flash attention) or F16 (llama.cpp's default: flash attention); circuits see the
  // pairing as `flash_attn` (1 with F16).
  DType cache_type = DType::F32;
};

// Whether `circuit` describes this model: its `select` predicate evaluated over the model's
// hparams and derived values (true without one). nullopt + errors when the predicate cannot
// be evaluated (a key it needs is absent and has no default, ...). *why: the predicate with
// the values it saw and where each came from.
std::optional<bool> circuit_selects(const Circuit& circuit, const ModelFacts& facts,
                                    std::vector<LoadError>* errors, std::string* why);

// The circuit of a model of `architecture` (circuit_files in dirs): the one whose `select`
// holds. None, several, a file that does not load or a predicate that cannot be evaluated
// is an error naming the circuits and the values they saw (fail closed); nullopt + *err.
std::optional<Circuit> select_circuit(std::string_view architecture,
                                      const std::vector<std::filesystem::path>& dirs,
                                      const ModelFacts& facts, std::string* err);

// nullopt + errors naming the circuit and the key, tensor, weight or node at fault.
std::optional<Graph> instantiate(const Circuit& circuit, const ModelFacts& facts,
                                 const InstanceOptions& options, std::vector<LoadError>* errors);

}  // namespace cke
