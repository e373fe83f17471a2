#include "runtime/core/engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>

#include "jit/generators.h"
#include "jit/glue.h"
#include "kernels/formats/layouts.h"
#include "resolver/circuit.h"
#include "resolver/conversions.h"
#include "resolver/data_dirs.h"
#include "resolver/host_caps.h"
#include "resolver/registry.h"
#include "resolver/sha256.h"
#include "resolver/xray.h"
#include "runtime/core/backend.h"
#include "runtime/core/builtin_snapshot.h"
#include "runtime/core/emit_c.h"
#include "runtime/core/gguf_facts.h"
#include "runtime/core/page_buffer.h"
#include "runtime/core/plan.h"
#include "runtime/exec/parallel.h"
#include "runtime/gguf/gguf.h"
#include "runtime/tokenizer/vocab_gguf.h"

namespace cke {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Rows of a tensor: every dim after the first (a 3-D expert tensor [K, N, E] is E * N rows;
// a repacked layout's row groups then never straddle two experts when N is a multiple of
// the group, which the expert matmuls' maps require).
int64_t tensor_rows(const gguf::TensorInfo& t) {
  return t.ne[1] * t.ne[2] * t.ne[3];
}

std::string available_circuits(const std::vector<std::filesystem::path>& dirs) {
  std::set<std::string> names;
  for (const auto& d : dirs) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(d, ec))
      if (e.path().extension() == ".yaml") names.insert(e.path().stem().string());
  }
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

}  // namespace

struct Engine::Impl {
  EngineOptions opt;
  EngineStats stats;
  std::unique_ptr<gguf::File> file;
  std::optional<Tokenizer> tok;
  std::optional<Registry> registry;
  std::optional<Circuit> circuit;
  std::optional<Graph> graph;
  HostCaps caps;
  Resolution res;
  ResolveOptions resolve_options;
  std::string plan_sha256;
  // The X-Ray trace, made on first use: it records every rejection of every node (tens of
  // thousands of entries), which costs more than resolving itself.
  std::optional<nlohmann::json> trace;
  std::string arch;
  int32_t n_ctx = 0, n_vocab = 0;
  std::vector<int32_t> pos;                        // per sequence: tokens in its cells
  PhasePlan prefill, decode, batch;                // batch: with n_seq > 1 (plan.h)
  std::vector<std::unique_ptr<AlignedBuf>> state;  // per graph buffer (null if not state)
  std::unique_ptr<AlignedBuf> arena;
  // The repacked weights (plan_repacks): one buffer, each copy at its offset.
  std::vector<Repack> repacks;
  std::vector<size_t> repack_offset;  // per repacks entry
  size_t repack_bytes = 0;
  std::shared_ptr<const AlignedBuf> repacked;  // shared by engines of the same file and plan
  // The weights read in the file's layout, at their file offsets (place_weights); null: the
  // file's mapping. Shared like `repacked`.
  std::shared_ptr<const AlignedBuf> placed;
  std::unique_ptr<Backend> backend;  // the plan as code: JIT glue or the emitted C
  std::unique_ptr<ThreadPool> pool;
  std::map<std::string, std::unique_ptr<jit::KernelModule>>
      modules;  // generated kernels by provider id

  std::optional<KernelSymbol> kernel_for(const KernelMap& m, std::string* err);

  // compile(): a pipeline from data to data, one function per stage.
  bool compile(std::string* err);
  bool load_data(GgufFacts& facts, std::string* err);    // registry, circuit of the arch
  bool build_graph(GgufFacts& facts, std::string* err);  // instantiate + conversion steps
  bool resolve_kernels(std::string* err);                // HostCaps, resolution, X-Ray
  bool build_plans(std::string* err);                    // phase plans, memory, the hash
  bool repack_weights(std::string* err);                 // the layouts the plans read
  bool fill_repacked(AlignedBuf& buf, std::string* err);
  bool place_weights(std::string* err);  // those read in the file's layout, in 2 MiB pages
  bool fill_placed(AlignedBuf& buf, const std::vector<const gguf::TensorInfo*>& tensors,
                   uint64_t bytes, std::string* err);
  std::set<int> row_major_weights() const;  // weight buffers a step reads in the file's layout
  int load_threads() const;
  bool make_backend(std::string* err);  // JIT glue or emitted C
  PlanMemory memory() const;
  void count_weights();  // EngineStats n_params, file_bytes, decode_weight_bytes
  bool run(const PhasePlan& p, jit::GlueFn fn, int32_t seq, std::span<const int32_t> toks,
           float* logits_out, bool all_logits);
  bool has_batch() const { return opt.n_seq > 1; }
  EmitInput emit_input() const;
};

EmitInput Engine::Impl::emit_input() const {
  EmitInput in;
  in.graph = &*graph;
  in.res = &res;
  in.prefill = &prefill;
  in.decode = &decode;
  in.batch = has_batch() ? &batch : nullptr;
  in.weight_offset.assign(graph->buffers.size(), -1);
  in.state_slot.assign(graph->buffers.size(), -1);
  for (size_t i = 0; i < graph->buffers.size(); ++i) {
    const GraphBuffer& b = graph->buffers[i];
    if (b.kind == BufferKind::Weight)
      in.weight_offset[i] = file->tensor(b.tensor)->data - file->bytes().data();
    if (b.kind == BufferKind::State) in.state_slot[i] = in.n_state++;
  }
  for (size_t i = 0; i < repacks.size(); ++i) in.repack_offset[repacks[i]] = repack_offset[i];
  in.plan_sha256 = plan_sha256;
  in.model_name = std::filesystem::path(opt.model_path).filename().string();
  in.decode_prefetch = caps.decode_stream_prefetch;
  return in;
}

// The callable of a provider: its linked symbol, or its generated kernel (one module per
// provider id, generated once at compile time and kept for the engine's life).
std::optional<KernelSymbol> Engine::Impl::kernel_for(const KernelMap& m, std::string* err) {
  if (m.impl.generator.empty()) return linked_kernel(m, err);
  const jit::Generator* g = jit::find_generator(m.impl.generator);
  if (!g) {
    *err = m.file + ": impl.generator '" + m.impl.generator + "' is not a generator of this binary";
    return std::nullopt;
  }
  auto& mod = modules[m.id];
  if (!mod) {
    mod = jit::generate_kernel(
        m.impl.generator,
        jit::plan_params(m.impl.generator, m.impl.generator_params, m.selection.decode_batch,
                         has_batch(), caps.decode_stream_prefetch),
        m.id, err);
    if (!mod) return std::nullopt;
  }
  KernelSymbol k{m.id, mod->entry(), g->n_args, {}};
  for (int i = 0; i < g->n_args; ++i) k.args[i] = g->args[i];
  return k;
}

bool Engine::Impl::compile(std::string* err) {
  GgufFacts facts(*file);
  auto t = std::chrono::steady_clock::now();
  if (!load_data(facts, err)) return false;
  stats.maps_ms = ms_since(t);
  t = std::chrono::steady_clock::now();
  if (!build_graph(facts, err) || !resolve_kernels(err)) return false;
  stats.resolve_ms = ms_since(t);
  t = std::chrono::steady_clock::now();
  if (!build_plans(err)) return false;
  if (!opt.plan_only && (!repack_weights(err) || !place_weights(err) || !make_backend(err)))
    return false;
  stats.jit_ms = ms_since(t) - stats.repack_ms;
  return true;
}

bool Engine::Impl::load_data(GgufFacts& facts, std::string* err) {
  gguf::GgufError gerr;
  auto a = file->str("general.architecture", &gerr);
  if (!a) {
    *err = gerr.message;
    return false;
  }
  arch = std::string(*a);
  DataDirs dirs = default_data_dirs();
  if (!opt.kernel_map_dirs.empty())
    dirs.kernel_maps.assign(opt.kernel_map_dirs.begin(), opt.kernel_map_dirs.end());
  if (!opt.circuit_dirs.empty())
    dirs.circuits.assign(opt.circuit_dirs.begin(), opt.circuit_dirs.end());
  std::vector<LoadError> errors;
  registry =
      Registry::load(dirs.kernel_maps, linked_symbols(), &errors, builtin_registry_snapshot());
  if (!registry) {
    *err = "kernel maps: " + format_errors(errors);
    return false;
  }
  if (circuit_files(arch, dirs.circuits).empty()) {
    *err = fmt::format("{}: no circuit for architecture '{}' (available: {})", opt.model_path, arch,
                       available_circuits(dirs.circuits));
    return false;
  }
  // The one circuit of the architecture whose `select` holds for this model.
  std::string serr;
  circuit = select_circuit(arch, dirs.circuits, facts, &serr);
  if (!circuit) {
    *err = opt.model_path + ": " + serr;
    return false;
  }
  return true;
}

bool Engine::Impl::build_graph(GgufFacts& facts, std::string* err) {
  // Context: as asked, else the model's training context capped at 4096.
  int64_t n = opt.n_ctx;
  if (n <= 0) {
    n = 4096;
    if (auto v = facts.key(arch + ".context_length"); v && std::holds_alternative<int64_t>(*v))
      n = std::min<int64_t>(n, std::get<int64_t>(*v));
  }
  n_ctx = int32_t(n);
  const int64_t max_tokens = std::max<int64_t>(1, std::min<int64_t>(opt.n_batch, n_ctx));
  // A batched decode is one chunk of the prefill's size at most (its row-wise steps are the
  // prefill's, resolved for up to max_tokens).
  if (opt.n_seq > max_tokens) {
    *err = fmt::format(
        "{}: {} sequences do not fit a chunk of {} tokens (the smaller of n_batch "
        "{} and the context {})",
        opt.model_path, opt.n_seq, max_tokens, opt.n_batch, n_ctx);
    return false;
  }
  std::vector<LoadError> errors;
  const DType cache_type = opt.cache_type == "f16" ? DType::F16 : DType::F32;
  graph = instantiate(*circuit, facts, {n_ctx, max_tokens, cache_type}, &errors);
  if (!graph || !insert_conversions(&*graph, *registry, &errors)) {
    *err = opt.model_path + ": " + format_errors(errors);
    return false;
  }
  // Every tensor of the file must be one the circuit reads, as llama.cpp refuses a file
  // with tensors it did not create: a tensor nobody computes with means the circuit is not
  // this model (e.g. block_count smaller than the blocks in the file).
  std::set<std::string_view> used;
  for (const GraphBuffer& b : graph->buffers)
    if (b.kind == BufferKind::Weight) used.insert(b.tensor);
  for (const gguf::TensorInfo& t : file->tensors())
    if (!used.count(t.name)) {
      *err = fmt::format(
          "{}: tensor '{}' is not read by circuit {} ({} of the file's {} tensors are): the "
          "file holds a model the circuit does not describe",
          opt.model_path, t.name, graph->circuit_file, used.size(), file->tensors().size());
      return false;
    }
  if (auto v = graph->value("n_vocab"); v && v->is_int()) n_vocab = int32_t(v->i);
  if (n_vocab != tok->n_vocab()) {
    *err = fmt::format("{}: the output has {} rows but the tokenizer has {} tokens", opt.model_path,
                       n_vocab, tok->n_vocab());
    return false;
  }
  return true;
}

bool Engine::Impl::resolve_kernels(std::string* err) {
  caps = HostCaps::probe();
  if (!opt.isa.empty()) {
    std::string cerr;
    auto capped = caps.cap(opt.isa, &cerr);
    if (!capped) {
      *err = "--isa: " + cerr;
      return false;
    }
    caps = *capped;
  }
  if (opt.decode_prefetch == "on" || opt.decode_prefetch == "off") {
    caps.decode_stream_prefetch = opt.decode_prefetch == "on";
  } else if (!opt.decode_prefetch.empty()) {
    *err = fmt::format("--decode-prefetch: '{}' is not on, off or empty (the host's choice)",
                       opt.decode_prefetch);
    return false;
  }
  resolve_options.allow_candidate = opt.allow_candidate;
  resolve_options.allow_repack = !opt.no_repack;
  res = resolve(*graph, *registry, caps, resolve_options);
  if (!res.ok()) {
    *err = fmt::format("{}: the model does not compile for this host:\n{}", opt.model_path,
                       res.fault_report());
    return false;
  }
  return true;
}

bool Engine::Impl::build_plans(std::string* err) {
  // Every generated kernel the plans call, generated in parallel (kernel_for then finds it).
  std::vector<const KernelMap*> gen;
  for (const Step& s : res.steps)
    if (!s.provider->impl.generator.empty() && !modules.count(s.provider->id) &&
        jit::find_generator(s.provider->impl.generator) &&
        std::find(gen.begin(), gen.end(), s.provider) == gen.end())
      gen.push_back(s.provider);
  std::vector<std::unique_ptr<jit::KernelModule>> made(gen.size());
  std::vector<std::string> errs(gen.size());
  tbb::parallel_for(size_t(0), gen.size(), [&](size_t i) {
    made[i] = jit::generate_kernel(
        gen[i]->impl.generator,
        jit::plan_params(gen[i]->impl.generator, gen[i]->impl.generator_params,
                         gen[i]->selection.decode_batch, has_batch(), caps.decode_stream_prefetch),
        gen[i]->id, &errs[i]);
  });
  for (size_t i = 0; i < gen.size(); ++i) {
    if (!made[i]) {
      *err = errs[i];
      return false;
    }
    modules[gen[i]->id] = std::move(made[i]);
  }
  auto lookup = [this](const KernelMap& m, std::string* e) { return kernel_for(m, e); };
  if (!build_phase_plan(*graph, res, Phase::Prefill, graph->max_tokens, lookup, &prefill, err) ||
      !build_phase_plan(*graph, res, Phase::Decode, 1, lookup, &decode, err))
    return false;
  if (has_batch() && !build_batch_plan(*graph, res, opt.n_seq, lookup, &batch, err)) return false;
  for (PhasePlan* p : {&prefill, &decode, &batch}) address_sequences(*graph, opt.n_seq, p);
  plan_sha256 = sha256_hex(cke::plan_text(*graph, prefill) + cke::plan_text(*graph, decode) +
                           (has_batch() ? cke::plan_text(*graph, batch) : ""));
  // Everything the plans will touch, before any of it is mapped: the pages are reserved
  // lazily, so an oversized -c would otherwise fail much later, as the OOM killer.
  uint64_t state_bytes = 0;
  for (const GraphBuffer& b : graph->buffers)
    if (b.kind == BufferKind::State)
      state_bytes += buffer_bytes(b, graph->max_tokens) * uint64_t(opt.n_seq);
  const uint64_t arena_bytes =
      std::max({prefill.arena_bytes, decode.arena_bytes, has_batch() ? batch.arena_bytes : 0});
  repacks = plan_repacks(prefill, decode);
  repack_offset.clear();
  repack_bytes = 0;
  for (const Repack& r : repacks) {
    const gguf::TensorInfo* t = file->tensor(graph->buffers[r.buffer].tensor);
    repack_offset.push_back(repack_bytes);
    const size_t n = find_weight_layout(r.layout)->bytes(t->ne[0], tensor_rows(*t));
    repack_bytes += (n + 63) / 64 * 64;
  }
  const uint64_t need =
      state_bytes + arena_bytes + uint64_t(file->bytes().size()) + uint64_t(repack_bytes);
  const uint64_t have = opt.memory_limit_bytes > 0
                            ? uint64_t(opt.memory_limit_bytes)
                            : uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  if (need > have && !opt.plan_only) {
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    *err = fmt::format(
        "{}: needs {:.2f} GiB (weights {:.2f}, repacked weights {:.2f}, KV cache and state "
        "{:.2f} for {}a context of {} tokens, activations {:.2f}) but {} {:.2f} GiB; use a "
        "smaller -c",
        opt.model_path, double(need) / kGiB, double(file->bytes().size()) / kGiB,
        double(repack_bytes) / kGiB, double(state_bytes) / kGiB,
        opt.n_seq > 1 ? fmt::format("{} sequences, each ", opt.n_seq) : "", graph->n_ctx,
        double(arena_bytes) / kGiB,
        opt.memory_limit_bytes > 0 ? "the memory limit is" : "this machine has",
        double(have) / kGiB);
    return false;
  }
  state.resize(graph->buffers.size());
  for (size_t i = 0; i < graph->buffers.size(); ++i) {
    if (graph->buffers[i].kind != BufferKind::State) continue;
    const size_t bytes = buffer_bytes(graph->buffers[i], graph->max_tokens) * size_t(opt.n_seq);
    state[i] = std::make_unique<AlignedBuf>(bytes);
    if (!state[i]->p) {
      *err = fmt::format("out of memory for {} ({} bytes; -c sets the context)",
                         graph->buffers[i].label(), bytes);
      return false;
    }
  }
  arena = std::make_unique<AlignedBuf>(arena_bytes);
  if (!arena->p) {
    *err = "out of memory for the activation arena";
    return false;
  }
  return true;
}

// The repack step: each (weight, layout) the plans read is made once, row groups in
// parallel. A permutation of the file's bytes (kernels/formats/layouts.h): no arithmetic.
//
// Engines of one file whose plans repack the same tensors (cke-server's slots, an app with
// several sessions) share one copy: it is read-only once made. Keyed by the file's identity
// and the repack list; held as long as an engine uses it.
std::shared_ptr<const AlignedBuf> shared_repack(const std::string& key,
                                                const std::function<bool(AlignedBuf&)>& make,
                                                bool* reused) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const AlignedBuf>> made;
  std::lock_guard<std::mutex> lock(mu);  // one at a time: a second engine waits for the copy
  *reused = false;
  if (auto b = made[key].lock()) {
    *reused = true;
    return b;
  }
  auto b = std::make_shared<AlignedBuf>(0);
  if (!make(*b)) return nullptr;
  made[key] = b;
  return b;
}

// The model file's identity, the key of the copies engines share.
static std::string file_key(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return fmt::format("{}:{}:{}:{}:{}", path, st.st_dev, st.st_ino, st.st_size,
                     st.st_mtim.tv_nsec + st.st_mtim.tv_sec * 1000000000LL);
}

// The file's pages of a tensor leave this process (they stay in the page cache, clean): a
// copy replaces them, not adds to them.
static void drop_file_pages(const gguf::TensorInfo& t) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t b = (uintptr_t(t.data) + page - 1) & ~(page - 1),
                  e = (uintptr_t(t.data) + t.n_bytes) & ~(page - 1);
  if (e > b) madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
}

// MemAvailable of /proc/meminfo in bytes; 0 if unknown.
static uint64_t mem_available() {
  std::ifstream f("/proc/meminfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return std::stoull(line.substr(13)) * 1024;
  return 0;
}

bool Engine::Impl::repack_weights(std::string* err) {
  if (repacks.empty()) return true;
  const auto t0 = std::chrono::steady_clock::now();
  std::string key = file_key(opt.model_path);
  for (const Repack& r : repacks) key += "|" + graph->buffers[r.buffer].tensor + "@" + r.layout;
  repacked = shared_repack(
      key, [&](AlignedBuf& buf) { return fill_repacked(buf, err); }, &stats.repack_reused);
  if (!repacked) return false;
  stats.repack_ms = ms_since(t0);
  stats.repack_bytes = int64_t(repack_bytes);
  return true;
}

// Threads of the load-time copies (repack, place_weights): every physical core, at least
// -t. They are a one-time step, and on a VM fresh memory costs a host fault per page, which
// parallelizes: F16's 2 GiB copy took 3.9-5.7 s on one thread, 1.3 s on two (AMD EPYC Zen 5,
// 2 vCPU). The plan's own threads stay -t.
int Engine::Impl::load_threads() const {
  return std::max(opt.n_threads, int(std::max<uint32_t>(1, caps.physical_cores)));
}

std::set<int> Engine::Impl::row_major_weights() const {
  std::set<int> out;
  for (const PhasePlan* p : {&prefill, &decode, &batch})
    for (const PlanStep& s : p->steps)
      for (const PlanArg& a : s.args)
        if (a.kind == PlanArg::Kind::Weight && a.layout.empty()) out.insert(a.buffer);
  return out;
}

// The weights steps read in the file's own layout (row-major F16, BF16, F32 matrices, the
// blocks no repacked layout covers, norms, token_embd), copied at load into anonymous memory
// in 2 MiB pages at their file offsets, so that PlanMemory::weights points at the copy and
// every offset stays the file's. The bytes are the file's: no arithmetic changes.
//
// Why: decode streams these matrices once per token, and how fast depends on the pages they
// sit in. The file's mapping is page-cache pages of 4 KiB, scattered as the cache happened
// to fill: on an AMD EPYC Zen 5 (2 vCPU, 2026-12-07), one F16 file decoded tg32 at 11.2 tok/s
// (1 thread) and a byte-identical `cp` of it at 13.6, from the same engine; the copy in
// 2 MiB pages gave 13.0-13.3 (1 thread) and 24.6-25.9 (2 threads) against 11.8-11.9 and
// 18.9-19.0 from that file's mapping, the same minutes. It is what llama.cpp's --no-mmap
// does, in huge pages. Off with EngineOptions::mmap_weights; without transparent huge
// pages (a 4 KiB copy gains nothing) or when the copy would not fit in MemAvailable, the
// mapping stays and EngineStats::weight_pages says why.
bool Engine::Impl::place_weights(std::string* err) {
  const std::set<int> row_major = row_major_weights();
  std::vector<const gguf::TensorInfo*> tensors;
  uint64_t bytes = 0;
  for (int b : row_major) {
    const gguf::TensorInfo* t = file->tensor(graph->buffers[b].tensor);
    tensors.push_back(t);
    bytes += t->n_bytes;
  }
  if (tensors.empty()) return true;
  if (opt.mmap_weights) {
    stats.weight_pages = "file mapping (--mmap-weights)";
    return true;
  }
  if (!AlignedBuf::huge_pages_available()) {
    stats.weight_pages = "file mapping (no transparent huge pages)";
    return true;
  }
  if (const uint64_t avail = mem_available(); bytes > avail) {
    stats.weight_pages = fmt::format("file mapping (a copy of {} MiB > MemAvailable {} MiB)",
                                     bytes >> 20, avail >> 20);
    return true;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::string key = "placed:" + file_key(opt.model_path);
  for (const gguf::TensorInfo* t : tensors) key += "|" + std::string(t->name);
  bool reused = false;
  placed = shared_repack(
      key, [&](AlignedBuf& buf) { return fill_placed(buf, tensors, bytes, err); }, &reused);
  if (!placed) return false;
  for (const gguf::TensorInfo* t : tensors) drop_file_pages(*t);
  stats.weight_pages = "2 MiB pages (copy)";
  stats.weight_copy_bytes = int64_t(bytes);
  stats.repack_ms += ms_since(t0);
  return true;
}

// Makes the copy of `tensors` (`bytes` in all) into `buf` (the file's size, allocated here:
// only the copied tensors' pages fill).
bool Engine::Impl::fill_placed(AlignedBuf& buf, const std::vector<const gguf::TensorInfo*>& tensors,
                               uint64_t bytes, std::string* err) {
  const uint8_t* base = file->bytes().data();
  buf = AlignedBuf(file->bytes().size(), true);
  if (!buf.p) {
    *err = fmt::format(
        "out of memory for a copy of the weights ({} bytes; "
        "--mmap-weights reads them from the file's mapping)",
        bytes);
    return false;
  }
  // 2 MiB pieces of every tensor, read in parallel with pread: a copy out of the
  // page cache, no page faults of the file's mapping (a memcpy from the mapping took
  // 1.9-5.7 s for 2 GiB, a fault per 4 KiB).
  const int fd = ::open(opt.model_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = fmt::format("{}: cannot reopen to copy the weights: {}", opt.model_path,
                       std::strerror(errno));
    return false;
  }
  constexpr size_t kPiece = size_t(2) << 20;
  std::vector<std::pair<size_t, size_t>> pieces;  // file offset, bytes
  for (const gguf::TensorInfo* t : tensors) {
    const size_t off = size_t(t->data - base);
    for (size_t o = 0; o < t->n_bytes; o += kPiece)
      pieces.emplace_back(off + o, std::min<size_t>(kPiece, t->n_bytes - o));
  }
  uint8_t* dst = static_cast<uint8_t*>(buf.p);
  std::atomic<bool> ok{true};
  tbb::task_arena workers(load_threads());
  workers.execute([&] {
    tbb::parallel_for(size_t(0), pieces.size(), [&](size_t i) {
      for (size_t done = 0; done < pieces[i].second;) {
        const ssize_t n = pread(fd, dst + pieces[i].first + done, pieces[i].second - done,
                                off_t(pieces[i].first + done));
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          ok = false;
          return;
        }
        done += size_t(n);
      }
    });
  });
  ::close(fd);
  if (!ok) {
    *err = fmt::format("{}: reading the weights into memory failed", opt.model_path);
    return false;
  }
  return true;
}

// Makes the copies into `buf` (repack_bytes, allocated here).
bool Engine::Impl::fill_repacked(AlignedBuf& buf, std::string* err) {
  buf = AlignedBuf(repack_bytes, true);
  if (!buf.p) {
    *err = fmt::format(
        "out of memory for the repacked weights ({} bytes; --no-repack reads "
        "the file's blocks instead)",
        repack_bytes);
    return false;
  }
  uint8_t* base = static_cast<uint8_t*>(buf.p);
  // A tensor no step reads in its own layout leaves the process as soon as its copy is made,
  // so that the file's pages and the copy are not both resident at the peak (Q8_0 TinyLlama:
  // peak RSS 2.17 GB when they left after the last copy).
  const std::set<int> row_major = row_major_weights();
  tbb::task_arena workers(load_threads());
  workers.execute([&] {
    tbb::parallel_for(size_t(0), repacks.size(), [&](size_t i) {
      const Repack& r = repacks[i];
      const WeightLayout& l = *find_weight_layout(r.layout);
      const gguf::TensorInfo* t = file->tensor(graph->buffers[r.buffer].tensor);
      const int64_t K = t->ne[0], N = tensor_rows(*t), groups = (N + l.row_group - 1) / l.row_group;
      tbb::parallel_for(int64_t(0), groups, int64_t(16), [&](int64_t g0) {
        l.repack(t->data, base + repack_offset[i], K, N, g0, std::min(groups, g0 + 16));
      });
      if (!row_major.count(r.buffer)) drop_file_pages(*t);
    });
  });
  return true;
}

PlanMemory Engine::Impl::memory() const {
  PlanMemory m;
  m.weights = placed ? static_cast<const uint8_t*>(placed->p) : file->bytes().data();
  m.weight_offset.assign(graph->buffers.size(), -1);
  m.state.assign(graph->buffers.size(), nullptr);
  for (size_t i = 0; i < graph->buffers.size(); ++i) {
    const GraphBuffer& b = graph->buffers[i];
    if (b.kind == BufferKind::Weight)
      m.weight_offset[i] = file->tensor(b.tensor)->data - file->bytes().data();
    if (b.kind == BufferKind::State) m.state[i] = static_cast<uint8_t*>(state[i]->p);
  }
  m.arena = static_cast<uint8_t*>(arena->p);
  if (repacked) m.repacked = static_cast<uint8_t*>(repacked->p);
  for (size_t i = 0; i < repacks.size(); ++i) m.repack_offset[repacks[i]] = repack_offset[i];
  return m;
}

bool Engine::Impl::make_backend(std::string* err) {
  if (opt.run_emitted_dir.empty()) {
    backend = make_jit_backend(prefill, decode, has_batch() ? &batch : nullptr, memory(), err);
  } else {
    // The flags come from this plan's own C; the directory must hold the same plan.
    EmittedC c;
    if (!cke::emit_c(emit_input(), &c, err)) return false;
    backend = load_emitted_c_backend(opt.run_emitted_dir, c, plan_sha256, *graph, memory(), err);
  }
  if (!backend) return false;
  const int threads =
      opt.n_threads > 0 ? opt.n_threads : int(std::max<uint32_t>(1, caps.physical_cores));
  pool = std::make_unique<ThreadPool>(threads);
  return true;
}

void Engine::Impl::count_weights() {
  for (const gguf::TensorInfo& t : file->tensors()) stats.n_params += t.n_elements();
  stats.file_bytes = int64_t(file->bytes().size());
  std::vector<bool> seen(graph->buffers.size(), false);
  for (const PlanStep& s : decode.steps) {
    if (s.provider->op == "embed") continue;
    // An expert matmul reads the experts its pairs were routed to: at most P of E ([K, N, E]
    // weights, x: [K, P]), the active weights of a mixture of experts.
    int64_t used = 1, of = 1;
    if (s.provider->op == "linear_id") {
      const GraphNode& n = graph->nodes[s.node];
      const GraphPort *x = n.port("x"), *w = n.port("w");
      if (x && w && x->shape.size() == 2 && w->shape.size() == 3) {
        of = w->shape[2].i;
        used = std::min(of, x->shape[1].at_tokens(1).i);
      }
    }
    for (const PlanArg& a : s.args) {
      if (a.kind != PlanArg::Kind::Weight || seen[size_t(a.buffer)]) continue;
      seen[size_t(a.buffer)] = true;
      const gguf::TensorInfo* t = file->tensor(graph->buffers[a.buffer].tensor);
      stats.decode_weight_bytes += int64_t(t->n_bytes) / of * used;
      stats.decode_weight_elements += t->n_elements() / of * used;
    }
  }
}

bool Engine::Impl::run(const PhasePlan& p, jit::GlueFn fn, int32_t seq,
                       std::span<const int32_t> toks, float* logits_out, bool all_logits) {
  uint8_t* base = static_cast<uint8_t*>(arena->p);
  std::memcpy(base + p.tokens_offset, toks.data(), toks.size() * sizeof(int32_t));
  // The output tail (plan.h) computes every row's logits or the last row's only.
  const int64_t T = int64_t(toks.size()), p0 = pos[size_t(seq)];
  RunContext ctx{
      p0,           T,       p0 + T, pool.get(), all_logits ? 0 : T - 1, all_logits ? T : 1,
      int64_t(seq), nullptr, nullptr};
  fn(&ctx);
  pos[size_t(seq)] += int32_t(toks.size());
  if (logits_out) {
    const float* l = reinterpret_cast<const float*>(base + p.logits_offset);
    if (all_logits)
      std::memcpy(logits_out, l, toks.size() * size_t(n_vocab) * sizeof(float));
    else
      std::memcpy(logits_out, l + (toks.size() - 1) * size_t(n_vocab),
                  size_t(n_vocab) * sizeof(float));
  }
  return true;
}

bool kv_cache_from_flags(const std::string& type_k, const std::string& type_v,
                         const std::string& flash_attn, std::string* cache_type, std::string* err) {
  for (const auto& [flag, v] : {std::pair{"--cache-type-k", &type_k}, {"--cache-type-v", &type_v}})
    if (*v != "f32" && *v != "f16") {
      *err = fmt::format("{} {}: CKE's KV cache is f32 or f16", flag, *v);
      return false;
    }
  if (type_k != type_v) {
    *err = fmt::format("--cache-type-k {} with --cache-type-v {}: K and V must have one type",
                       type_k, type_v);
    return false;
  }
  const bool on = flash_attn == "on" || flash_attn == "1";
  const bool off = flash_attn == "off" || flash_attn == "0";
  if (!on && !off && flash_attn != "auto") {
    *err = fmt::format("--flash-attn {}: expected on, off or auto", flash_attn);
    return false;
  }
  if ((on && type_k == "f32") || (off && type_k == "f16")) {
    *err = fmt::format(
        "--flash-attn {} with a {} cache: CKE pairs the f32 cache with plain attention and the "
        "f16 cache with flash attention (llama.cpp's `exact` and default configurations)",
        flash_attn, type_k);
    return false;
  }
  *cache_type = type_k;
  return true;
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

std::unique_ptr<Engine> Engine::load(const EngineOptions& options, std::string* err) {
  auto t0 = std::chrono::steady_clock::now();
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  if (options.cache_type != "f32" && options.cache_type != "f16") {
    *err = fmt::format("cache type '{}' is not supported (f32 or f16)", options.cache_type);
    return nullptr;
  }
  if (options.n_batch < 1) {
    *err = "n_batch must be >= 1";
    return nullptr;
  }
  // A batched decode is a chunk of one token per sequence: it fits the prefill chunk.
  if (options.n_seq < 1 || options.n_seq > options.n_batch) {
    *err = fmt::format("n_seq {}: expected 1 .. n_batch ({})", options.n_seq, options.n_batch);
    return nullptr;
  }
  impl->pos.assign(size_t(options.n_seq), 0);
  gguf::GgufError gerr;
  impl->file = gguf::File::open(options.model_path, &gerr);
  if (!impl->file) {
    *err = gerr.message;
    return nullptr;
  }
  auto vocab = vocab_from_gguf(*impl->file, err);
  if (!vocab) return nullptr;
  impl->tok = Tokenizer::create(std::move(*vocab), err);
  if (!impl->tok) {
    *err = options.model_path + ": tokenizer: " + *err;
    return nullptr;
  }
  impl->stats.load_ms = ms_since(t0);
  auto t1 = std::chrono::steady_clock::now();
  if (!impl->compile(err)) return nullptr;
  impl->stats.compile_ms = ms_since(t1) - impl->stats.repack_ms;
  impl->count_weights();
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

const Tokenizer& Engine::tokenizer() const {
  return *impl_->tok;
}
int32_t Engine::n_vocab() const {
  return impl_->n_vocab;
}
int32_t Engine::n_ctx() const {
  return impl_->n_ctx;
}
int32_t Engine::n_threads() const {
  return impl_->pool->n_threads();
}
int32_t Engine::n_batch() const {
  return int32_t(impl_->prefill.max_tokens);
}
int32_t Engine::n_seq() const {
  return impl_->opt.n_seq;
}
int32_t Engine::pos(int32_t seq) const {
  return seq >= 0 && seq < impl_->opt.n_seq ? impl_->pos[size_t(seq)] : 0;
}
const std::string& Engine::architecture() const {
  return impl_->arch;
}
const EngineStats& Engine::stats() const {
  return impl_->stats;
}
const nlohmann::json& Engine::trace() const {
  Impl& m = *impl_;
  if (!m.trace) {
    m.trace = xray_trace(m.res, *m.graph, *m.registry, m.caps, m.resolve_options);
    (*m.trace)["plan_sha256"] = m.plan_sha256;
  }
  return *m.trace;
}

void Engine::rewind(int32_t pos) {
  rewind(0, pos);
}

void Engine::rewind(int32_t seq, int32_t pos) {
  if (seq < 0 || seq >= impl_->opt.n_seq) return;
  int32_t& p = impl_->pos[size_t(seq)];
  p = std::clamp(pos, 0, p);
}

bool Engine::eval(std::span<const int32_t> tokens, std::vector<float>* logits, bool all_logits,
                  std::string* err) {
  return eval(0, tokens, logits, all_logits, err);
}

// The checks of eval and decode_batch: a sequence that exists, tokens in the vocabulary that
// fit its context.
static bool check_tokens(int32_t seq, int32_t n_seq, int32_t pos, int32_t n_ctx, int32_t n_vocab,
                         std::span<const int32_t> tokens, std::string* err) {
  if (seq < 0 || seq >= n_seq) {
    *err = fmt::format("eval: sequence {} out of range [0, {})", seq, n_seq);
    return false;
  }
  if (tokens.empty()) {
    *err = "eval: no tokens";
    return false;
  }
  if (int64_t(pos) + int64_t(tokens.size()) > n_ctx) {
    *err = fmt::format("eval: {} tokens at position {} exceed the context of {} (use -c)",
                       tokens.size(), pos, n_ctx);
    return false;
  }
  for (int32_t t : tokens)
    if (t < 0 || t >= n_vocab) {
      *err = fmt::format("eval: token id {} out of range [0, {})", t, n_vocab);
      return false;
    }
  return true;
}

// An engine loaded with plan_only has a plan but no weight copies and no backend.
static bool runnable(const Engine::Impl& m, std::string* err) {
  if (m.backend) return true;
  *err = fmt::format("{}: loaded with plan_only (compile only): nothing runs", m.opt.model_path);
  return false;
}

bool Engine::decode_batch(std::span<const int32_t> seqs, std::span<const int32_t> tokens,
                          std::vector<float>* logits, std::string* err) {
  Impl& m = *impl_;
  if (!runnable(m, err)) return false;
  if (seqs.size() != tokens.size() || seqs.empty() || seqs.size() > size_t(m.opt.n_seq)) {
    *err = fmt::format("decode_batch: {} sequences and {} tokens (expected 1 .. {} of each)",
                       seqs.size(), tokens.size(), m.opt.n_seq);
    return false;
  }
  for (size_t i = 0; i < seqs.size(); ++i) {
    const int32_t s = seqs[i];
    if (!check_tokens(s, m.opt.n_seq, pos(s), m.n_ctx, m.n_vocab, tokens.subspan(i, 1), err))
      return false;
    for (size_t j = 0; j < i; ++j)
      if (seqs[j] == s) {
        *err = fmt::format("decode_batch: sequence {} appears twice", s);
        return false;
      }
  }
  if (seqs.size() == 1) return eval(seqs[0], tokens, logits, false, err);
  const size_t B = seqs.size(), V = size_t(m.n_vocab);
  std::vector<int64_t> seq_of(seqs.begin(), seqs.end()), pos_of(B);
  for (size_t i = 0; i < B; ++i) pos_of[i] = m.pos[size_t(seqs[i])];
  uint8_t* base = static_cast<uint8_t*>(m.arena->p);
  std::memcpy(base + m.batch.tokens_offset, tokens.data(), B * sizeof(int32_t));
  const int64_t T = int64_t(B);
  RunContext ctx{0, T, 0, m.pool.get(), 0, T, 0, seq_of.data(), pos_of.data()};
  m.backend->batch()(&ctx);
  for (int32_t s : seqs) ++m.pos[size_t(s)];
  if (logits) {
    logits->resize(B * V);
    std::memcpy(logits->data(), base + m.batch.logits_offset, B * V * sizeof(float));
  }
  return true;
}

bool Engine::eval(int32_t seq, std::span<const int32_t> tokens, std::vector<float>* logits,
                  bool all_logits, std::string* err) {
  Impl& m = *impl_;
  if (!runnable(m, err)) return false;
  if (!check_tokens(seq, m.opt.n_seq, pos(seq), m.n_ctx, m.n_vocab, tokens, err)) return false;
  if (logits) logits->resize((all_logits ? tokens.size() : 1) * size_t(m.n_vocab));
  size_t done = 0;
  while (done < tokens.size()) {
    const size_t n = std::min<size_t>(tokens.size() - done, size_t(m.prefill.max_tokens));
    const bool last = done + n == tokens.size();
    float* out = nullptr;
    if (logits && all_logits) out = logits->data() + done * size_t(m.n_vocab);
    if (logits && !all_logits && last) out = logits->data();
    if (n == 1)
      m.run(m.decode, m.backend->decode(), seq, tokens.subspan(done, 1), out, all_logits);
    else
      m.run(m.prefill, m.backend->prefill(), seq, tokens.subspan(done, n), out, all_logits);
    done += n;
  }
  return true;
}

bool Engine::emit_c(const std::string& dir, std::string* err) const {
  EmittedC c;
  return cke::emit_c(impl_->emit_input(), &c, err) && write_emitted_c(c, dir, err);
}

bool Engine::runs_emitted_c() const {
  return !impl_->opt.run_emitted_dir.empty();
}

std::string Engine::plan_text() const {
  return cke::plan_text(*impl_->graph, impl_->prefill) +
         cke::plan_text(*impl_->graph, impl_->decode) +
         (impl_->has_batch() ? cke::plan_text(*impl_->graph, impl_->batch) : "");
}

}  // namespace cke
