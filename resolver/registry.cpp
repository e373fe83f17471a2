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
  // A fused contract's stages are loaded contracts that are not fused themselves; each
  // stage binds every one of its ports to a fused port of the same dtype, every fused port
  // is some stage's, and the fused params are the stages' params (one type per name).
  for (const Contract& c : r.contracts_) {
    if (c.composes.empty()) continue;
    std::vector<std::string> used;
    std::map<std::string, ParamType> params;
    for (size_t i = 0; i < c.composes.size(); ++i) {
      const ContractStage& st = c.composes[i];
      const std::string at = fmt::format("composes[{}]", i);
      const Contract* s = r.find_contract(st.contract);
      if (!s) {
        out->push_back(
            {c.file, at + ".contract", fmt::format("unknown contract '{}'", st.contract)});
        continue;
      }
      if (!s->composes.empty())
        out->push_back(
            {c.file, at + ".contract",
             fmt::format("'{}' is fused itself: a stage is one node's contract", s->id)});
      for (const ContractPort& sp : s->ports) {
        auto b = std::find_if(st.ports.begin(), st.ports.end(),
                              [&](const auto& x) { return x.first == sp.name; });
        if (b == st.ports.end()) {
          out->push_back(
              {c.file, at + ".ports", fmt::format("port '{}' of {} is not bound", sp.name, s->id)});
          continue;
        }
        const ContractPort* fp = c.port(b->second);
        if (fp && fp->dtype != sp.dtype)
          out->push_back({c.file, at + ".ports." + sp.name,
                          fmt::format("{} takes {} but fused port '{}' is {}", s->id,
                                      sp.dtype ? dtype_name(*sp.dtype) : "any", b->second,
                                      fp->dtype ? dtype_name(*fp->dtype) : "any")});
      }
      for (const auto& [from, to] : st.ports) {
        if (!s->port(from))
          out->push_back(
              {c.file, at + ".ports." + from, fmt::format("{} has no port '{}'", s->id, from)});
        used.push_back(to);
      }
      for (const ContractParam& p : s->params) {
        auto [it, fresh] = params.emplace(p.name, p.type);
        if (!fresh && it->second != p.type)
          out->push_back(
              {c.file, at, fmt::format("param '{}' has two types in the stages", p.name)});
      }
    }
    for (const ContractPort& p : c.ports)
      if (std::find(used.begin(), used.end(), p.name) == used.end())
        out->push_back({c.file, "ports." + p.name, "no stage binds this port"});
    std::map<std::string, ParamType> own;
    for (const ContractParam& p : c.params) own.emplace(p.name, p.type);
    if (own != params)
      out->push_back(
          {c.file, "params", "a fused contract's params are exactly its stages' params"});
  }
  if (out->size() != before) return std::nullopt;
  return r;
}

namespace {

// The data files of a load: their bytes (the snapshots' keys), read in parallel, and each
// file's read errors.
struct Inputs {
  std::vector<snapshot::InputFile> maps, contracts;
  std::vector<std::vector<LoadError>> errs;  // per file, maps then contracts
  std::vector<char> readable;
  bool all_read = false;
  std::vector<std::string> paths() const {
    std::vector<std::string> p;
    for (const auto* fs : {&maps, &contracts})
      for (const snapshot::InputFile& f : *fs) p.push_back(f.path);
    return p;
  }
};

Inputs read_inputs(const std::vector<std::filesystem::path>& map_files,
                   const std::vector<std::filesystem::path>& contract_files) {
  Inputs in;
  in.maps.resize(map_files.size());
  in.contracts.resize(contract_files.size());
  in.errs.resize(map_files.size() + contract_files.size());
  in.readable.assign(in.errs.size(), 0);
  tbb::parallel_for(size_t(0), in.errs.size(), [&](size_t i) {
    const bool is_map = i < map_files.size();
    const std::filesystem::path& p = is_map ? map_files[i] : contract_files[i - map_files.size()];
    snapshot::InputFile& f = is_map ? in.maps[i] : in.contracts[i - map_files.size()];
    f.path = p.string();
    if (std::optional<std::string> t = read_data_file(p, &in.errs[i])) {
      f.bytes = std::move(*t);
      in.readable[i] = 1;
    }
  });
  in.all_read = std::all_of(in.readable.begin(), in.readable.end(), [](char r) { return r; });
  return in;
}

// Parses every readable file. Files parse independently: in parallel, gathered in file order
// (the same maps, errors and provenance as one by one). Errors go to `out`.
snapshot::Parsed parse_inputs(Inputs& in, std::vector<LoadError>* out) {
  const size_t n_maps = in.maps.size();
  std::vector<std::vector<KernelMap>> per_map_file(n_maps);
  std::vector<std::optional<Contract>> per_contract(in.contracts.size());
  tbb::parallel_for(size_t(0), in.errs.size(), [&](size_t i) {
    if (!in.readable[i]) return;
    if (i < n_maps)
      per_map_file[i] = parse_kernel_maps(in.maps[i].bytes, in.maps[i].path, &in.errs[i]);
    else
      per_contract[i - n_maps] = parse_contract(in.contracts[i - n_maps].bytes,
                                                in.contracts[i - n_maps].path, &in.errs[i]);
  });
  for (const std::vector<LoadError>& e : in.errs) out->insert(out->end(), e.begin(), e.end());
  snapshot::Parsed p;
  for (std::vector<KernelMap>& ms : per_map_file)
    for (KernelMap& m : ms) p.maps.push_back(std::move(m));
  for (std::optional<Contract>& c : per_contract)
    if (c) p.contracts.push_back(std::move(*c));
  p.files = in.paths();
  return p;
}

// The files `map_dirs` hold (Registry::load).
bool list_data_files(const std::vector<std::filesystem::path>& map_dirs,
                     std::vector<std::filesystem::path>* maps,
                     std::vector<std::filesystem::path>* contracts, std::vector<LoadError>* out) {
  const size_t before = out->size();
  for (const auto& d : map_dirs) {
    for (auto& p : list_yaml_files(d, out))
      if (p.filename() != "ratchet.yaml") maps->push_back(p);  // the audit's file, not a map
    if (std::filesystem::is_directory(d / "contracts"))
      for (auto& p : list_yaml_files(d / "contracts", out)) contracts->push_back(p);
  }
  return out->size() == before;
}

}  // namespace

std::optional<Registry> Registry::load_files(
    const std::vector<std::filesystem::path>& map_files,
    const std::vector<std::filesystem::path>& contract_files, const SymbolLookup& symbols,
    std::vector<LoadError>* errors, std::string_view builtin_snapshot) {
  std::vector<LoadError> local;
  std::vector<LoadError>* out = errors ? errors : &local;
  const size_t before = out->size();
  Inputs in = read_inputs(map_files, contract_files);
  auto from = [&](snapshot::Parsed p, const char* source) -> std::optional<Registry> {
    std::optional<Registry> r = build(std::move(p.maps), std::move(p.contracts), symbols, out);
    if (r) r->loaded_from_ = source;
    return r;
  };
  if (in.all_read && !builtin_snapshot.empty()) {
    const std::string k = snapshot::builtin_key(in.maps, in.contracts);
    std::optional<snapshot::Parsed> s = snapshot::decode(k, std::string(builtin_snapshot));
    if (s && snapshot::rebase(&*s, in.paths())) return from(std::move(*s), "built-in snapshot");
  }
  const std::string key = in.all_read ? snapshot::key(in.maps, in.contracts) : std::string();
  if (std::optional<snapshot::Parsed> s = snapshot::read(key))
    if (snapshot::rebase(&*s, in.paths())) return from(std::move(*s), "cached snapshot");
  snapshot::Parsed p = parse_inputs(in, out);
  if (out->size() != before) return std::nullopt;
  if (!key.empty()) snapshot::write(key, p);
  return from(std::move(p), "parse");
}

std::optional<Registry> Registry::load(const std::vector<std::filesystem::path>& map_dirs,
                                       const SymbolLookup& symbols, std::vector<LoadError>* errors,
                                       std::string_view builtin_snapshot) {
  std::vector<LoadError> local;
  std::vector<LoadError>* out = errors ? errors : &local;
  std::vector<std::filesystem::path> maps, contracts;
  if (!list_data_files(map_dirs, &maps, &contracts, out)) return std::nullopt;
  return load_files(maps, contracts, symbols, out, builtin_snapshot);
}

std::optional<std::string> Registry::make_builtin_snapshot(
    const std::vector<std::filesystem::path>& map_dirs, std::vector<LoadError>* errors) {
  std::vector<std::filesystem::path> maps, contracts;
  if (!list_data_files(map_dirs, &maps, &contracts, errors)) return std::nullopt;
  const size_t before = errors->size();
  Inputs in = read_inputs(maps, contracts);
  snapshot::Parsed p = parse_inputs(in, errors);
  if (errors->size() != before) return std::nullopt;
  return snapshot::encode(snapshot::builtin_key(in.maps, in.contracts), p);
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
