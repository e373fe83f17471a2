#include "resolver/registry_snapshot.h"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "resolver/sha256.h"

namespace cke::snapshot {
namespace {

using nlohmann::json;

// Bump when the encoding or the parsed structs change shape.
constexpr const char* kFormat = "cke-registry-snapshot/3";

std::string hex(const std::array<uint8_t, 32>& d) {
  std::string s;
  for (uint8_t b : d) s += fmt::format("{:02x}", b);
  return s;
}

// The GNU build id of the object this code is linked into (the executable, or libcke.so).
std::string build_id() {
  struct Found {
    uintptr_t self;
    std::string id;
  } f{reinterpret_cast<uintptr_t>(&build_id), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Found*>(data);
        bool mine = false;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& p = info->dlpi_phdr[i];
          const uintptr_t b = info->dlpi_addr + p.p_vaddr;
          if (p.p_type == PT_LOAD && f->self >= b && f->self < b + p.p_memsz) mine = true;
        }
        if (!mine) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& p = info->dlpi_phdr[i];
          if (p.p_type != PT_NOTE) continue;
          const auto* n = reinterpret_cast<const uint8_t*>(info->dlpi_addr + p.p_vaddr);
          for (size_t at = 0; at + sizeof(ElfW(Nhdr)) <= p.p_memsz;) {
            const auto* h = reinterpret_cast<const ElfW(Nhdr)*>(n + at);
            const size_t name = (h->n_namesz + 3) & ~size_t(3),
                         desc = (h->n_descsz + 3) & ~size_t(3);
            const uint8_t* d = n + at + sizeof(ElfW(Nhdr)) + name;
            if (h->n_type == NT_GNU_BUILD_ID && h->n_descsz > 0)
              for (size_t k = 0; k < h->n_descsz; ++k) f->id += fmt::format("{:02x}", d[k]);
            at += sizeof(ElfW(Nhdr)) + name + desc;
          }
        }
        return 1;
      },
      &f);
  return f.id;
}

template <class E>
json e(E v) {
  return static_cast<int64_t>(v);
}
template <class E>
E to_enum(const json& j) {
  return static_cast<E>(j.get<int64_t>());
}
std::vector<std::string> strs(const json& j) {
  return j.get<std::vector<std::string>>();
}

// Expressions as their source text: every map and contract expression comes from
// Expr::parse of that text, which gives the same tree again.
json ex(const Expr& x) {
  return x.text();
}
Expr to_expr(const json& j) {
  std::string err;
  std::optional<Expr> x = Expr::parse(j.get<std::string>(), &err);
  if (!x) throw std::runtime_error("snapshot: expression: " + err);
  return *x;
}
json exs(const std::vector<Expr>& v) {
  json a = json::array();
  for (const Expr& x : v) a.push_back(ex(x));
  return a;
}
std::vector<Expr> to_exprs(const json& j) {
  std::vector<Expr> v;
  for (const json& x : j) v.push_back(to_expr(x));
  return v;
}

json enc(const KernelMap& m) {
  json ports = json::array(), params = json::array(), dims = json::array(), abi = json::array(),
       isa = json::array(), phases = json::array();
  for (const PortSpec& p : m.ports)
    ports.push_back(json::array({p.name, e(p.role), e(p.dtype), exs(p.shape), p.layout, e(p.access),
                                 e(p.storage), p.alias_of, p.may_alias}));
  for (const ParamSpec& p : m.params) params.push_back(json::array({p.name, e(p.type)}));
  for (const auto& [n, x] : m.dims) dims.push_back(json::array({n, ex(x)}));
  for (const AbiArg& a : m.call_abi)
    abi.push_back(json::array({e(a.source), a.name, e(a.role), e(a.runtime), a.text}));
  for (Feature f : m.isa) isa.push_back(e(f));
  for (Phase p : m.selection.phases) phases.push_back(e(p));
  return json::array(
      {m.file, m.sha256, m.id, m.op, m.interface, m.contract,
       json::array({e(m.selection.status), m.selection.priority, phases, m.selection.decode_batch}),
       isa, exs(m.shape_predicates), ports, params, dims,
       json::array({m.impl.function, m.impl.generator, m.impl.generator_params}), abi,
       json::array({m.parallel.enabled, m.parallel.dim, m.parallel.min_chunk,
                    m.parallel.changes_arithmetic}),
       m.notes});
}

std::string str(const json& j) {
  return j.get<std::string>();
}

KernelMap dec_map(const json& j) {
  KernelMap m;
  m.file = str(j.at(0));
  m.sha256 = str(j.at(1));
  m.id = str(j.at(2));
  m.op = str(j.at(3));
  m.interface = str(j.at(4));
  m.contract = str(j.at(5));
  const json& s = j.at(6);
  m.selection.status = to_enum<Status>(s.at(0));
  m.selection.priority = s.at(1).get<int64_t>();
  for (const json& p : s.at(2)) m.selection.phases.push_back(to_enum<Phase>(p));
  m.selection.decode_batch = s.at(3).get<bool>();
  for (const json& f : j.at(7)) m.isa.push_back(to_enum<Feature>(f));
  m.shape_predicates = to_exprs(j.at(8));
  for (const json& p : j.at(9)) {
    PortSpec ps;
    ps.name = str(p.at(0));
    ps.role = to_enum<PortRole>(p.at(1));
    ps.dtype = to_enum<DType>(p.at(2));
    ps.shape = to_exprs(p.at(3));
    ps.layout = str(p.at(4));
    ps.access = to_enum<Access>(p.at(5));
    ps.storage = to_enum<Storage>(p.at(6));
    ps.alias_of = str(p.at(7));
    ps.may_alias = strs(p.at(8));
    m.ports.push_back(std::move(ps));
  }
  for (const json& p : j.at(10)) m.params.push_back({str(p.at(0)), to_enum<ParamType>(p.at(1))});
  for (const json& d : j.at(11)) m.dims.emplace_back(str(d.at(0)), to_expr(d.at(1)));
  const json& impl = j.at(12);
  m.impl.function = str(impl.at(0));
  m.impl.generator = str(impl.at(1));
  m.impl.generator_params = impl.at(2).get<std::map<std::string, std::string>>();
  for (const json& a : j.at(13)) {
    AbiArg x;
    x.source = to_enum<AbiArg::Source>(a.at(0));
    x.name = str(a.at(1));
    x.role = to_enum<PortRole>(a.at(2));
    x.runtime = to_enum<RuntimeValue>(a.at(3));
    x.text = str(a.at(4));
    m.call_abi.push_back(std::move(x));
  }
  const json& par = j.at(14);
  m.parallel.enabled = par.at(0).get<bool>();
  m.parallel.dim = str(par.at(1));
  m.parallel.min_chunk = par.at(2).get<int64_t>();
  m.parallel.changes_arithmetic = par.at(3).get<bool>();
  m.notes = str(j.at(15));
  return m;
}

json opt_dtype(const std::optional<DType>& d) {
  return d ? e(*d) : json(nullptr);
}
std::optional<DType> to_opt_dtype(const json& j) {
  if (j.is_null()) return std::nullopt;
  return to_enum<DType>(j);
}

json enc(const Contract& c) {
  json ports = json::array(), params = json::array(), converts = json::array();
  for (const ContractPort& p : c.ports) ports.push_back(json::array({p.name, opt_dtype(p.dtype)}));
  for (const ContractParam& p : c.params) params.push_back(json::array({p.name, e(p.type)}));
  for (const ContractConvert& k : c.converts)
    converts.push_back(json::array({k.port, e(k.from), k.via}));
  json composes = json::array();
  for (const ContractStage& st : c.composes) {
    json ps = json::array();
    for (const auto& [from, to] : st.ports) ps.push_back(json::array({from, to}));
    composes.push_back(json::array({st.contract, ps}));
  }
  return json::array({c.file,
                      c.sha256,
                      c.id,
                      c.op,
                      c.variant,
                      c.profile,
                      ports,
                      params,
                      c.accumulator,
                      opt_dtype(c.activation_quant),
                      c.reduction_order,
                      c.rounding,
                      c.thread_count_changes_arithmetic,
                      c.token_count_changes_arithmetic,
                      c.reference,
                      json::array({e(c.comparison.kind), c.comparison.bound}),
                      c.when ? ex(*c.when) : json(nullptr),
                      converts,
                      c.notes,
                      composes});
}

Contract dec_contract(const json& j) {
  Contract c;
  c.file = str(j.at(0));
  c.sha256 = str(j.at(1));
  c.id = str(j.at(2));
  c.op = str(j.at(3));
  c.variant = str(j.at(4));
  c.profile = str(j.at(5));
  for (const json& p : j.at(6)) c.ports.push_back({str(p.at(0)), to_opt_dtype(p.at(1))});
  for (const json& p : j.at(7)) c.params.push_back({str(p.at(0)), to_enum<ParamType>(p.at(1))});
  c.accumulator = str(j.at(8));
  c.activation_quant = to_opt_dtype(j.at(9));
  c.reduction_order = str(j.at(10));
  c.rounding = strs(j.at(11));
  c.thread_count_changes_arithmetic = j.at(12).get<bool>();
  c.token_count_changes_arithmetic = j.at(13).get<bool>();
  c.reference = str(j.at(14));
  c.comparison.kind = to_enum<Comparison::Kind>(j.at(15).at(0));
  c.comparison.bound = j.at(15).at(1).get<double>();
  if (!j.at(16).is_null()) c.when = to_expr(j.at(16));
  for (const json& k : j.at(17))
    c.converts.push_back({str(k.at(0)), to_enum<DType>(k.at(1)), str(k.at(2))});
  c.notes = str(j.at(18));
  for (const json& st : j.at(19)) {
    ContractStage s{str(st.at(0)), {}};
    for (const json& p : st.at(1)) s.ports.emplace_back(str(p.at(0)), str(p.at(1)));
    c.composes.push_back(std::move(s));
  }
  return c;
}

}  // namespace

std::optional<std::filesystem::path> cache_dir() {
  if (const char* d = std::getenv("CKE_CACHE_DIR")) {
    if (!*d || std::string_view(d) == "off") return std::nullopt;
    return std::filesystem::path(d);
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "cke";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "cke";
  return std::nullopt;
}

namespace {

// SHA-256 of the format, `id` and each file's name (`whole_path`: its path) and bytes.
std::string hash_inputs(std::string_view id, bool whole_path,
                        const std::vector<InputFile>& map_files,
                        const std::vector<InputFile>& contract_files) {
  Sha256 h;
  auto add = [&h](std::string_view s) {
    const uint64_t n = s.size();  // length-prefixed: no two inputs hash alike
    h.update(&n, sizeof n);
    h.update(s.data(), s.size());
  };
  add(kFormat);
  add(id);
  for (const auto* files : {&map_files, &contract_files}) {
    add(files == &map_files ? "maps" : "contracts");
    for (const InputFile& f : *files) {
      add(whole_path ? f.path : std::filesystem::path(f.path).filename().string());
      add(f.bytes);
    }
  }
  return hex(h.finish());
}

// `file` with its leading `from` replaced by `to`, if it is `from` or "`from`:<line>".
std::optional<std::string> rebased(const std::string& file, const std::string& from,
                                   const std::string& to) {
  if (file.compare(0, from.size(), from) != 0) return std::nullopt;
  if (file.size() != from.size() && file[from.size()] != ':') return std::nullopt;
  return to + file.substr(from.size());
}

}  // namespace

std::string key(const std::vector<InputFile>& map_files,
                const std::vector<InputFile>& contract_files) {
  static const std::string id = build_id();
  if (id.empty() || !cache_dir()) return {};
  return hash_inputs(id, true, map_files, contract_files);
}

std::string builtin_key(const std::vector<InputFile>& map_files,
                        const std::vector<InputFile>& contract_files) {
  return hash_inputs("built-in", false, map_files, contract_files);
}

bool rebase(Parsed* p, const std::vector<std::string>& paths) {
  if (p->files.size() != paths.size()) return false;
  // Maps come in their files' order, then contracts in theirs: one cursor walks the files.
  size_t at = 0;
  auto move = [&](std::string* file) {
    for (; at < paths.size(); ++at)
      if (std::optional<std::string> r = rebased(*file, p->files[at], paths[at])) {
        *file = std::move(*r);
        return true;
      }
    return false;
  };
  for (KernelMap& m : p->maps)
    if (!move(&m.file)) return false;
  for (Contract& c : p->contracts)
    if (!move(&c.file)) return false;
  p->files = paths;
  return true;
}

std::string encode(const std::string& key, const Parsed& p) {
  json maps = json::array(), contracts = json::array();
  for (const KernelMap& m : p.maps) maps.push_back(enc(m));
  for (const Contract& c : p.contracts) contracts.push_back(enc(c));
  const std::vector<uint8_t> bin = json::to_msgpack(json::array({maps, contracts, p.files}));
  const std::string payload(bin.begin(), bin.end());
  return fmt::format("{} {} {}\n", kFormat, key, sha256_hex(payload)) + payload;
}

std::optional<Parsed> decode(const std::string& key, const std::string& bytes) {
  const size_t nl = bytes.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  const std::string payload = bytes.substr(nl + 1);
  if (bytes.substr(0, nl) != fmt::format("{} {} {}", kFormat, key, sha256_hex(payload)))
    return std::nullopt;
  try {
    const json j = json::from_msgpack(payload);
    Parsed p;
    for (const json& m : j.at(0)) p.maps.push_back(dec_map(m));
    for (const json& c : j.at(1)) p.contracts.push_back(dec_contract(c));
    p.files = strs(j.at(2));
    return p;
  } catch (const std::exception&) {  // json's type and range errors, a bad expression
    return std::nullopt;
  }
}

std::optional<Parsed> read(const std::string& key) {
  const auto dir = cache_dir();
  if (key.empty() || !dir) return std::nullopt;
  const std::filesystem::path path = *dir / ("registry-" + key + ".bin");
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::optional<Parsed> p = decode(key, ss.str());
  if (p) {  // in use: the newest by mtime, so prune() keeps it
    std::error_code ec;
    std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
  }
  return p;
}

namespace {

// Keeps the kKeepSnapshots most recently written or read snapshots of `dir` (every edit of
// a map is a new key: without this a developer's cache, or a test run's, grows by a
// snapshot per edit).
void prune(const std::filesystem::path& dir) {
  std::error_code ec;
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("registry-", 0) != 0 || it->path().extension() != ".bin") continue;
    std::error_code tec;
    const auto t = it->last_write_time(tec);
    if (!tec) files.emplace_back(t, it->path());
  }
  if (files.size() <= kKeepSnapshots) return;
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = kKeepSnapshots; i < files.size(); ++i)
    std::filesystem::remove(files[i].second, ec);
}

}  // namespace

bool write(const std::string& key, const Parsed& p) {
  const auto dir = cache_dir();
  if (key.empty() || !dir) return false;
  std::error_code ec;
  std::filesystem::create_directories(*dir, ec);
  static std::atomic<int> seq{0};
  const std::filesystem::path final_path = *dir / ("registry-" + key + ".bin");
  const std::filesystem::path tmp =
      *dir / fmt::format(".registry-{}.{}.{}.tmp", key, int(getpid()), ++seq);
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return false;
    out << encode(key, p);
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return false;
  }
  prune(*dir);
  return true;
}

}  // namespace cke::snapshot
