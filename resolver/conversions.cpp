#include "resolver/conversions.h"

#include <fmt/format.h>

#include <map>
#include <tuple>

#include "resolver/resolve.h"

namespace cke {
namespace {

struct Match {
  const Contract* contract = nullptr;
  bool converts = false;
};

// The contracts that fit node `i`: directly, or with its converted ports.
std::vector<Match> matching_contracts(const Graph& g, size_t i, const Registry& reg) {
  const Query q = make_query(g, i, Phase::Decode);
  std::vector<Match> out;
  for (const Contract& c : reg.contracts()) {
    if (c.op != q.op) continue;
    if (contract_misfit(c, q).empty()) {
      out.push_back({&c, false});
      continue;
    }
    if (c.converts.empty()) continue;
    Query qc = q;
    bool applies = true;
    for (const ContractConvert& k : c.converts) {
      bool found = false;
      for (QueryPort& p : qc.ports)
        if (p.name == k.port && p.dtype == k.from) {
          p.dtype = *c.port(k.port)->dtype;
          found = true;
        }
      applies = applies && found;
    }
    if (applies && contract_misfit(c, qc).empty()) out.push_back({&c, true});
  }
  return out;
}

uint64_t bytes_at(const std::vector<Value>& shape, DType t, int64_t max_tokens) {
  int64_t ne0 = 1, rest = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t v = shape[d].at_tokens(max_tokens).i;
    (d == 0 ? ne0 : rest) *= v;
  }
  const DTypeInfo& info = dtype_info(t);
  const int64_t blocks = (ne0 + info.block_size - 1) / info.block_size;
  return uint64_t(blocks) * uint64_t(info.type_size) * uint64_t(rest);
}

std::string shape_key(const std::vector<Value>& s) {
  std::string k;
  for (const Value& v : s) k += v.str() + ",";
  return k;
}

}  // namespace

bool insert_conversions(Graph* graph, const Registry& registry, std::vector<LoadError>* errors) {
  Graph& g = *graph;
  const size_t errors_before = errors->size();
  // (source buffer, conversion contract, shape) -> converted buffer; `open` holds the keys
  // whose converted buffer still equals the conversion of the source's current contents.
  using Key = std::tuple<int, std::string, std::string>;
  std::map<Key, int> buffer_of;
  std::map<Key, bool> open;
  std::vector<GraphNode> out;
  out.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    GraphNode node = g.nodes[i];
    const std::vector<Match> m = matching_contracts(g, i, registry);
    if (m.size() > 1) {
      std::string ids;
      for (const Match& x : m) ids += (ids.empty() ? "" : ", ") + x.contract->id;
      errors->push_back(
          {g.circuit_file, "nodes." + node.label(),
           fmt::format("several contracts fit (some through a conversion): {}", ids)});
    }
    if (m.size() == 1 && m[0].converts) {
      const Contract& c = *m[0].contract;
      for (const ContractConvert& k : c.converts) {
        GraphPort* port = nullptr;
        for (GraphPort& p : node.ports)
          if (p.port == k.port) port = &p;
        const Contract* via = registry.find_contract(k.via);
        if (!port || !via || g.buffers[port->buffer].dtype != k.from) continue;
        const DType to = *c.port(k.port)->dtype;
        const Key key{port->buffer, via->id, shape_key(port->shape)};
        auto b = buffer_of.find(key);
        if (b == buffer_of.end()) {
          const GraphBuffer& src = g.buffers[port->buffer];
          GraphBuffer cb;
          cb.name =
              fmt::format("{}_{}", src.name, via->variant.empty() ? dtype_name(to) : via->variant);
          cb.layer = src.layer;
          cb.kind = BufferKind::Activation;
          cb.dtype = to;
          cb.shape = port->shape;
          cb.layout = src.layout;
          cb.bytes = bytes_at(cb.shape, to, g.max_tokens);
          g.buffers.push_back(std::move(cb));
          b = buffer_of.emplace(key, int(g.buffers.size() - 1)).first;
        }
        if (!open[key]) {
          GraphNode conv;
          conv.name = fmt::format("{}.{}_{}", node.name, k.port,
                                  via->variant.empty() ? dtype_name(to) : via->variant);
          conv.section = node.section;
          conv.layer = node.layer;
          conv.op = via->op;
          conv.variant = via->variant;
          conv.profile = via->profile;
          conv.ports = {GraphPort{"x", port->buffer, port->shape},
                        GraphPort{"y", b->second, port->shape}};
          out.push_back(std::move(conv));
          open[key] = true;
        }
        port->buffer = b->second;
      }
    }
    // A node that names a source buffer may have written it: later consumers convert anew.
    for (auto& [key, is_open] : open)
      for (const GraphPort& p : node.ports)
        if (p.buffer == std::get<0>(key)) is_open = false;
    out.push_back(std::move(node));
  }
  g.nodes = std::move(out);
  return errors->size() == errors_before;
}

}  // namespace cke
