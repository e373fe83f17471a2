#include "resolver/registry.h"

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <map>

#include "resolver/data_file.h"
#include "resolver/registry_snapshot.h"

namespace cke {

SymbolLookup linked_symbols() {
  return [](std::string_view name) { return find_kernel_symbol(name); };
}

namespace {

std::string_view kind_name(ArgKind k) {
  return k == ArgKind::Ptr ? "ptr" : k == ArgKind::I64 ? "i64" : "f32";
}

ArgKind abi_kind(const KernelMap& m, const AbiArg& a) {
  switch (a.source) {
    case AbiArg::Source::Port:
      return ArgKind::Ptr;
    case AbiArg::Source::Param:
      return m.param(a.name)->type == ParamType::F32 ? ArgKind::F32 : ArgKind::I64;
    default:
      return ArgKind::I64;
  }
}

void check_symbol(const KernelMap& m, const SymbolLookup& symbols, std::vector<LoadError>* errors) {
  if (!symbols || m.impl.function.empty()) return;
  const KernelSymbol* s = symbols(m.impl.function);
  if (!s) {
    errors->push_back(
        {m.file, "impl.function",
         fmt::format("symbol '{}' is not linked into this binary (kernels/registry.h)",
                     m.impl.function)});
    return;
  }
  std::string want, have;
  for (const AbiArg& a : m.call_abi)
    want += std::string(want.empty() ? "" : ", ") + std::string(kind_name(abi_kind(m, a)));
  for (int i = 0; i < s->n_args; ++i)
    have += std::string(i ? ", " : "") + std::string(kind_name(s->args[i]));
  if (want != have)
    errors->push_back({m.file, "call_abi",
                       fmt::format("argument kinds ({}) differ from the C++ signature of '{}' ({})",
                                   want, m.impl.function, have)});
}

// Same interface = same ports (name, role, access, layout, rank), params and call shape.
std::string interface_signature(const KernelMap& m) {
  std::string s;
  for (const PortSpec& p : m.ports)
    s += fmt::format("{}:{}:{}:{}:{};", role_name(p.role), p.name, access_name(p.access), p.layout,
                     p.shape.size());
  s += "|";
  for (const ParamSpec& p : m.params) s += fmt::format("{}:{};", p.name, param_type_name(p.type));
  s += "|";
  for (const AbiArg& a : m.call_abi) s += a.text + ";";
  return s;
}

void check_against_contract(const KernelMap& m, const Contract& c, std::vector<LoadError>* errors) {
  if (m.op != c.op)
    errors->push_back(
        {m.file, "op",
         fmt::format("op '{}' differs from contract {}'s op '{}'", m.op, c.id, c.op)});
  for (const PortSpec& p : m.ports) {
    const ContractPort* cp = c.port(p.name);
    std::string path = fmt::format("ports.{}.dtype", p.name);
    if (!cp) {
      errors->push_back({m.file, fmt::format("ports.{}", p.name),
                         fmt::format("contract {} has no port '{}'", c.id, p.name)});
    } else if (cp->dtype && *cp->dtype != p.dtype) {
      errors->push_back({m.file, path,
                         fmt::format("dtype {} differs from contract {} ({})", dtype_name(p.dtype),
                                     c.id, dtype_name(*cp->dtype))});
    }
  }
  for (const ContractPort& cp : c.ports)
    if (!m.port(cp.name))
      errors->push_back(
          {m.file, "ports",
           fmt::format("contract {} has port '{}' which the map lacks", c.id, cp.name)});
  for (const ParamSpec& p : m.params) {
    const ContractParam* cp = c.param(p.name);
    if (!cp || cp->type != p.type)
      errors->push_back({m.file, fmt::format("params.{}", p.name),
                         fmt::format("param differs from contract {}", c.id)});
  }
  for (const ContractParam& cp : c.params)
    if (!m.param(cp.name))
      errors->push_back(
          {m.file, "params",
           fmt::format("contract {} has param '{}' which the map lacks", c.id, cp.name)});
  if (m.parallel.enabled && m.parallel.changes_arithmetic && !c.thread_count_changes_arithmetic)
    errors->push_back({m.file, "parallel.changes_arithmetic",
                       fmt::format("contract {} does not allow the thread count to change the "
                                   "arithmetic",
                                   c.id)});
}

}  // namespace

std::optional<Registry> Registry::build(std::vector<KernelMap> maps,
                                        std::vector<Contract> contracts,
                                        const SymbolLookup& symbols,
                                        std::vector<LoadError>* errors) {
  std::vector<LoadError> local;
  std::vector<LoadError>* out = errors ? errors : &local;
  const size_t before = out->size();
  auto by_id = [](const auto& a, const auto& b) {
    return a.id != b.id ? a.id < b.id : a.file < b.file;
  };
  std::sort(maps.begin(), maps.end(), by_id);
  std::sort(contracts.begin(), contracts.end(), by_id);
  for (size_t i = 1; i < maps.size(); ++i)
    if (maps[i].id == maps[i - 1].id)
      out->push_back(
          {maps[i].file, "id",
           fmt::format("duplicate provider id '{}' (also in {})", maps[i].id, maps[i - 1].file)});
  for (size_t i = 1; i < contracts.size(); ++i)
    if (contracts[i].id == contracts[i - 1].id)
      out->push_back({contracts[i].file, "id",
                      fmt::format("duplicate contract id '{}' (also in {})", contracts[i].id,
                                  contracts[i - 1].file)});
  Registry r;
  r.maps_ = std::move(maps);
  r.contracts_ = std::move(contracts);

  std::map<std::string, const KernelMap*> interfaces;
  for (const KernelMap& m : r.maps_) {
    const Contract* c = r.find_contract(m.contract);
    if (!c)
      out->push_back({m.file, "contract", fmt::format("unknown contract '{}'", m.contract)});
    else
      check_against_contract(m, *c, out);
    check_symbol(m, symbols, out);
    auto [it, fresh] = interfaces.emplace(m.interface, &m);
    if (!fresh && interface_signature(*it->second) != interface_signature(m))
      out->push_back(
          {m.file, "interface",
           fmt::format("interface '{}' has different ports, params or call_abi than in {}",
                       m.interface, it->second->file)});
  }
  for (const Contract& c : r.contracts_) {
    const KernelMap* ref = r.find_map(c.reference);
    if (!ref)
      out->push_back(
          {c.file, "reference",
           fmt::format("reference provider '{}' is not a loaded kernel map", c.reference)});
    else if (ref->contract != c.id)
      out->push_back({c.file, "reference",
                      fmt::format("reference provider '{}' implements contract '{}', not this one",
                                  c.reference, ref->contract)});
  }
  // A conversion names a loaded contract with ports x: from and y: the converted dtype.
  for (const Contract& c : r.contracts_)
    for (const ContractConvert& k : c.converts) {
      const Contract* v = r.find_contract(k.via);
      const ContractPort* vx = v ? v->port("x") : nullptr;
      const ContractPort* vy = v ? v->port("y") : nullptr;
      if (!v)
        out->push_back(
            {c.file, "convert." + k.port + ".via", fmt::format("unknown contract '{}'", k.via)});
      else if (v->ports.size() != 2 || !vx || !vy || vx->dtype != k.from ||
               vy->dtype != c.port(k.port)->dtype)
        out->push_back({c.file, "convert." + k.port + ".via",
                        fmt::format("contract '{}' does not convert {} to {} (ports x -> y)", k.via,
                                    dtype_name(k.from), dtype_name(*c.port(k.port)->dtype))});
    }
  if (out->size() != before) return std::nullopt;
  return r;
}

std::optional<Registry> Registry::load_files(
    const std::vector<std::filesystem::path>& map_files,
    const std::vector<std::filesystem::path>& contract_files, const SymbolLookup& symbols,
    std::vector<LoadError>* errors) {
  std::vector<LoadError> local;
  std::vector<LoadError>* out = errors ? errors : &local;
  const size_t before = out->size();
  // The files' bytes (the snapshot's key), read in parallel.
  std::vector<snapshot::InputFile> map_in(map_files.size()), contract_in(contract_files.size());
  std::vector<char> readable(map_files.size() + contract_files.size(), 0);
  std::vector<std::vector<LoadError>> errs(map_files.size() + contract_files.size());
  tbb::parallel_for(size_t(0), errs.size(), [&](size_t i) {
    const bool is_map = i < map_files.size();
    const std::filesystem::path& p = is_map ? map_files[i] : contract_files[i - map_files.size()];
    snapshot::InputFile& f = is_map ? map_in[i] : contract_in[i - map_files.size()];
    f.path = p.string();
    if (std::optional<std::string> t = read_data_file(p, &errs[i])) {
      f.bytes = std::move(*t);
      readable[i] = 1;
    }
  });
  const bool all_read = std::all_of(readable.begin(), readable.end(), [](char r) { return r; });
  const std::string key = all_read ? snapshot::key(map_in, contract_in) : std::string();
  if (std::optional<snapshot::Parsed> s = snapshot::read(key))
    return build(std::move(s->maps), std::move(s->contracts), symbols, out);
  // Files parse independently: in parallel, gathered in file order (the same maps, errors
  // and provenance as one by one).
  std::vector<std::vector<KernelMap>> per_map_file(map_files.size());
  std::vector<std::optional<Contract>> per_contract(contract_files.size());
  tbb::parallel_for(size_t(0), errs.size(), [&](size_t i) {
    if (!readable[i]) return;
    if (i < map_files.size())
      per_map_file[i] = parse_kernel_maps(map_in[i].bytes, map_files[i], &errs[i]);
    else
      per_contract[i - map_files.size()] =
          parse_contract(contract_in[i - map_files.size()].bytes,
                         contract_files[i - map_files.size()].string(), &errs[i]);
  });
  for (const std::vector<LoadError>& e : errs) out->insert(out->end(), e.begin(), e.end());
  std::vector<KernelMap> maps;
  std::vector<Contract> contracts;
  for (std::vector<KernelMap>& ms : per_map_file)
    for (KernelMap& m : ms) maps.push_back(std::move(m));
  for (std::optional<Contract>& c : per_contract)
    if (c) contracts.push_back(std::move(*c));
  if (out->size() == before && !key.empty()) snapshot::write(key, {maps, contracts});
  if (out->size() != before) return std::nullopt;
  return build(std::move(maps), std::move(contracts), symbols, out);
}

std::optional<Registry> Registry::load(const std::vector<std::filesystem::path>& map_dirs,
                                       const SymbolLookup& symbols,
                                       std::vector<LoadError>* errors) {
  std::vector<LoadError> local;
  std::vector<LoadError>* out = errors ? errors : &local;
  std::vector<std::filesystem::path> maps, contracts;
  const size_t before = out->size();
  for (const auto& d : map_dirs) {
    for (auto& p : list_yaml_files(d, out))
      if (p.filename() != "ratchet.yaml") maps.push_back(p);  // the audit's file, not a map
    if (std::filesystem::is_directory(d / "contracts"))
      for (auto& p : list_yaml_files(d / "contracts", out)) contracts.push_back(p);
  }
  if (out->size() != before) return std::nullopt;
  return load_files(maps, contracts, symbols, out);
}

const KernelMap* Registry::find_map(std::string_view id) const {
  auto it = std::lower_bound(maps_.begin(), maps_.end(), id,
                             [](const KernelMap& m, std::string_view v) { return m.id < v; });
  return it != maps_.end() && it->id == id ? &*it : nullptr;
}

const Contract* Registry::find_contract(std::string_view id) const {
  auto it = std::lower_bound(contracts_.begin(), contracts_.end(), id,
                             [](const Contract& c, std::string_view v) { return c.id < v; });
  return it != contracts_.end() && it->id == id ? &*it : nullptr;
}

std::vector<const KernelMap*> Registry::maps_for_op(std::string_view op) const {
  std::vector<const KernelMap*> out;
  for (const KernelMap& m : maps_)
    if (m.op == op) out.push_back(&m);
  return out;
}

std::vector<Provenance> Registry::provenance() const {
  std::vector<Provenance> out;
  for (const Contract& c : contracts_) out.push_back({"contract", c.id, c.file, c.sha256});
  for (const KernelMap& m : maps_) out.push_back({"kernel_map", m.id, m.file, m.sha256});
  return out;
}

}  // namespace cke
