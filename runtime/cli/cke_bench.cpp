// cke-bench: end-to-end prefill and decode throughput, in the shape of llama-bench.
//
//   cke-bench -m model.gguf -p 512 -n 128 -t 2 --isa avx2,avx512 -r 3 [--probe]
//   cke-bench -m model.gguf -p 128,512 -n 32 -d 0,2048
//   cke-bench -m model.gguf -p 0 -n 0 -pg 512,128       (a prompt, then generation from it)
//   cke-bench -m model.gguf -p 0 -n 32 --decode-prefetch on,off   (a new host's prefetch choice)
//
//   cke-bench -m model.gguf -p 512 -n 32 -d 2048 -ctk f32,f16   (CKE's cache against llama.cpp's)
//
// Every (model, ISA cap, KV cache, threads) combination compiles its own plan (-ctk, -ctv
// and -fa take lists, -ctv defaulting to each -ctk type; a combination CKE does not run,
// such as f16 K with f32 V, is an error before any test); pp<N> evaluates N
// prompt tokens from an empty cache (prefill plan, chunks of -b, the next token's logits
// only, as llama-bench), tg<N> N single-token decode steps. -p, -n, -d and -t take lists, as
// llama-bench (128,512; ranges 128-512*2 or 1-4+1; the flag repeated appends: parse_counts):
// each depth D > 0 runs every test after D context tokens evaluated untimed
// before each repetition ("pp512 @ d2048"). -pg P,G (repeatable) is llama-bench's combined
// test pp<P>+tg<G>: P prompt tokens, then G decode steps after them, timed together, t/s
// counting both. Results are tokens/s, mean ± stddev over -r repetitions, as llama-bench's
// markdown table (plus load and compile times), one JSON document, JSON lines (-o jsonl: a
// test a line, as it ends) or CSV. --probe measures the machine's limits first
// (machine_probe.h) and adds what fraction of them each test reaches (not of a -pg test,
// which is both): decode as GB/s of weights read per second
// against the read bandwidth, prefill as GOPS (2 per weight element per token) against
// the FMA and int8 peaks. Compare rows of one run: the machine may be shared and noisy.
// --parallel N adds tg<n>xN: N sequences decoded together, one batched plan call a step
// (Engine::decode_batch, as cke-server --parallel N); t/s counts every sequence's tokens.
// As llama-bench: --delay S waits S seconds before each test (a shared host's memory and
// clocks settle), --no-warmup drops the untimed first run of each test.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include "runtime/cli/finite_range.h"
#include "runtime/cli/llama_flags.h"
#include "runtime/cli/machine_probe.h"
#include "runtime/core/engine.h"
#include "runtime/core/process_heap.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

constexpr int kMaxCount = 1 << 20;       // a count's largest value
constexpr size_t kMaxListValues = 1024;  // values one flag may expand to

// A count in [0, kMaxCount] at the start of `s` (digits only); its length in *used, 0 if none.
int leading_count(std::string_view s, size_t* used) {
  int64_t v = 0;
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && v <= kMaxCount) v = v * 10 + (s[i++] - '0');
  *used = v > kMaxCount ? 0 : i;
  return int(v);
}

// llama-bench's list syntax for `flag`: comma-separated items, each a count, or a range
// first-last (step 1), first-last+step or first-last*factor (first, then on while <= last);
// counts in [0, 1048576]. Appends to *out; false and an error naming the flag and the item
// for anything else, for a range that does not grow, or past kMaxListValues values.
bool parse_counts(const char* flag, const std::string& text, std::vector<int>* out,
                  std::string* err) {
  const auto bad = [&](const std::string& item, std::string_view why) {
    *err = fmt::format("{} {}: '{}' {}", flag, text, item, why);
    return false;
  };
  const char* const syntax = "is not a count in [0, 1048576] or a range first-last[+step|*factor]";
  for (const std::string& item : split(text)) {
    std::string_view rest = item;
    size_t used = 0;
    const int first = leading_count(rest, &used);
    if (used == 0) return bad(item, syntax);
    rest.remove_prefix(used);
    int last = first, step = 1;
    char op = '+';
    if (!rest.empty()) {
      if (rest[0] != '-') return bad(item, syntax);
      rest.remove_prefix(1);
      last = leading_count(rest, &used);
      if (used == 0) return bad(item, syntax);
      rest.remove_prefix(used);
      if (!rest.empty()) {
        op = rest[0];
        if (op != '+' && op != '*') return bad(item, syntax);
        rest.remove_prefix(1);
        step = leading_count(rest, &used);
        if (used == 0 || used != rest.size()) return bad(item, syntax);
      }
    }
    if (last < first) return bad(item, "is a range whose last is below its first");
    for (int64_t v = first; v <= last;) {
      if (out->size() == kMaxListValues)
        return bad(item, fmt::format("makes more than {} values", kMaxListValues));
      out->push_back(int(v));
      const int64_t next = op == '+' ? v + step : v * step;
      if (next <= v) return bad(item, "is a range that does not grow (step 0, factor 0 or 1)");
      v = next;
    }
  }
  if (out->empty()) {
    *err = fmt::format("{}: an empty list", flag);
    return false;
  }
  return true;
}

struct Stat {
  double mean = 0, sd = 0;
};
Stat stat(const std::vector<double>& v) {
  Stat s;
  for (double x : v) s.mean += x;
  s.mean /= double(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / double(v.size() - 1)) : 0;
  return s;
}

std::string human_params(int64_t n) {
  return n >= 1'000'000'000 ? fmt::format("{:.2f} B", n / 1e9)
         : n >= 1'000'000   ? fmt::format("{:.2f} M", n / 1e6)
                            : fmt::format("{:.2f} K", n / 1e3);
}

std::string human_size(int64_t b) {
  return b >= (int64_t(1) << 30) ? fmt::format("{:.2f} GiB", double(b) / (1 << 30))
                                 : fmt::format("{:.2f} MiB", double(b) / (1 << 20));
}

// -o csv: these fields of each test's row, in this order (the JSON row has them all).
constexpr const char* kCsvColumns[] = {
    "model",  "size_bytes", "params",     "isa",      "cache_type", "threads",
    "test",   "n_prompt",   "n_gen",      "n_depth",  "sequences",  "tokens_per_second",
    "stddev", "load_ms",    "compile_ms", "repack_ms"};

std::string csv_row(const nlohmann::json& row) {
  std::string out;
  for (const char* c : kCsvColumns) {
    if (!out.empty()) out += ',';
    const nlohmann::json& v = row[c];
    if (!v.is_string()) {
      out += v.dump();
      continue;
    }
    std::string q = "\"";  // RFC 4180: quoted, a quote doubled
    for (char ch : v.get<std::string>()) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    out += q + '"';
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  cke::tune_process_heap();
  CLI::App app{"cke-bench: prefill and decode tokens/s of a compiled model"};
  std::vector<std::string> models;
  std::string isas = "", out_format = "md";
  // -p, -n, -d, -t: llama-bench's lists (parse_counts), repeatable, each use appending.
  std::vector<std::string> threads_list = {"0"}, prompt_list = {"512"}, gen_list = {"128"},
                           depth_list = {"0"};
  std::vector<std::string> pg_list;
  int32_t reps = 3, n_batch = 256;
  bool probe = false;
  int32_t n_parallel = 1;
  app.add_option("-m,--model", models, "GGUF model (repeat for several)")->required()->take_all();
  const auto list = [](CLI::Option* o) {
    return o->expected(1)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  list(app.add_option("-p,--n-prompt", prompt_list,
                      "prompt lengths, a pp test each (0: none); a list: 128,512, ranges "
                      "128-512*2 or 1-4+1, the flag repeatable"));
  list(app.add_option("-n,--n-gen", gen_list,
                      "generation lengths, a tg test each (0: none); lists as -p"));
  list(app.add_option("--pg", pg_list,
                      "P,G: a pp<P>+tg<G> test, P prompt tokens then G generated (repeatable; "
                      "also -pg)"));
  list(app.add_option("-d,--n-depth", depth_list,
                      "context depths: every test runs after that many tokens; lists as -p"));
  app.add_option("-b,--batch-size", n_batch, "prefill chunk")->check(CLI::Range(1, 1 << 16));
  // -ctk, -ctv, -fa: lists as llama-bench's (comma-separated, the flag repeatable); every
  // combination is a KV cache configuration of its own plan.
  std::vector<std::string> type_k_list, type_v_list, flash_list;
  CLI::Option* ctk = list(app.add_option(
      "--cache-type-k", type_k_list, "KV cache types of K: f32 or f16, a list as -p (also -ctk)"));
  CLI::Option* ctv = list(app.add_option(
      "--cache-type-v", type_v_list,
      "KV cache types of V, a list (default: each K type; K and V have one type; also -ctv)"));
  CLI::Option* fa = list(app.add_option(
      "--flash-attn", flash_list,
      "on|off|auto, a list: flash attention (auto: with an f16 cache, as llama.cpp; also -fa)"));
  double delay = 0;
  app.add_option("--delay", delay, "seconds to wait before each test")
      ->check(cke::cli::finite_range(0.0, 3600.0));
  bool no_warmup = false;
  app.add_flag("--no-warmup", no_warmup,
               "no untimed first run of each test (it warms the caches and pages in the weights)");
  list(app.add_option("-t,--threads", threads_list,
                      "thread counts (0: physical cores); lists as -p"));
  app.add_option("--isa", isas, "comma-separated ISA caps to compare (empty: as probed)");
  std::string prefetches = "";
  app.add_option("--decode-prefetch", prefetches,
                 "comma-separated on|off: the decode tiles' prefetch ahead of the weights, to "
                 "compare on a new host (empty: the host's probed choice)");
  app.add_option("-r,--repetitions", reps, "repetitions")->check(CLI::Range(1, 1000));
  app.add_option("-o,--output", out_format,
                 "md, json, jsonl (a line per test as it ends) or csv (a row per test)")
      ->check(CLI::IsMember({"md", "json", "jsonl", "csv"}));
  app.add_option("--parallel", n_parallel,
                 "also decode N sequences together in batched steps (tg<n>xN; 1: no; also -np)")
      ->check(CLI::Range(1, 64));
  bool no_repack = false, mmap_weights = false;
  app.add_flag("--no-repack", no_repack,
               "no repacked weight copies: providers that read the file's blocks only");
  app.add_flag("--mmap-weights", mmap_weights,
               "weights in the file's layout read from the file's mapping, not from a copy in "
               "2 MiB pages made at load");
  app.add_flag("--probe", probe,
               "measure read bandwidth and FMA/int8 peaks first; report each test's fraction");
  try {
    cke::cli::LlamaArgs args(argc, argv);
    if (args.report_unknown_flag("cke-bench")) return 2;
    app.parse(args.argc(), args.argv());
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // The KV cache configurations: every (K, V, flash) combination, V defaulting to K's type.
  std::vector<std::string> cache_types;
  {
    std::vector<std::string> ks, vs, fas;
    for (auto [texts, out, def] : {std::tuple{&type_k_list, &ks, "f32"},
                                   {&type_v_list, &vs, ""},
                                   {&flash_list, &fas, "auto"}}) {
      for (const std::string& text : *texts)
        for (const std::string& item : split(text)) out->push_back(item);
      if (texts->empty() && *def) out->push_back(def);
    }
    for (const std::string& k : ks)
      for (const std::string& v : vs.empty() ? std::vector<std::string>{k} : vs)
        for (const std::string& f : fas) {
          std::string ct, err;
          if (!cke::kv_cache_from_flags(k, v, f, &ct, &err)) {
            fmt::print(stderr, "cke-bench: {}\n", err);
            return 2;
          }
          cache_types.push_back(ct);
        }
  }
  // The md table names the cache only when it was asked for (llama-bench shows the
  // columns of parameters set away from their defaults).
  const bool cache_column = ctk->count() + ctv->count() + fa->count() > 0;
  std::vector<std::string> caps = isas.empty() ? std::vector<std::string>{""} : split(isas);
  std::vector<std::string> pfs =
      prefetches.empty() ? std::vector<std::string>{""} : split(prefetches);
  std::vector<int> threads, prompts, gens, depths;
  for (auto [flag, texts, out] : {std::tuple{"-t", &threads_list, &threads},
                                  {"-p", &prompt_list, &prompts},
                                  {"-n", &gen_list, &gens},
                                  {"-d", &depth_list, &depths}})
    for (const std::string& text : *texts)
      if (std::string err; !parse_counts(flag, text, out, &err)) {
        fmt::print(stderr, "cke-bench: {}\n", err);
        return 2;
      }
  std::vector<std::pair<int, int>> pgs;  // -pg: (prompt, generated)
  int max_pg = 0;
  for (const std::string& text : pg_list) {
    std::vector<int> pair;
    std::string err;
    // Two plain counts: a range would expand into the pair (2-3 read as P = 2, G = 3).
    if (split(text).size() != 2 || !parse_counts("-pg", text, &pair, &err) || pair.size() != 2 ||
        pair[0] < 1 || pair[1] < 1) {
      fmt::print(
          stderr, "cke-bench: {}\n",
          err.empty() ? fmt::format("-pg {}: expected P,G, two counts of at least 1", text) : err);
      return 2;
    }
    pgs.emplace_back(pair[0], pair[1]);
    max_pg = std::max(max_pg, pair[0] + pair[1]);
  }
  const int max_prompt = *std::max_element(prompts.begin(), prompts.end()),
            max_gen = *std::max_element(gens.begin(), gens.end()),
            max_depth = *std::max_element(depths.begin(), depths.end());
  const cke::HostCaps host = cke::HostCaps::probe();
  nlohmann::json rows = nlohmann::json::array(), limits_json = nlohmann::json::object();
  std::map<int, cke::MachineLimits> limits;  // by thread count
  if (out_format == "csv")
    fmt::print("{}\n", fmt::join(std::begin(kCsvColumns), std::end(kCsvColumns), ","));
  if (out_format == "md")
    fmt::print(
        "| model | size | params | isa |{} threads | test | t/s | load ms | compile ms | repack "
        "ms |{}\n"
        "|---|---:|---:|---|{}---:|---|---:|---:|---:|---:|{}\n",
        cache_column ? " cache |" : "", probe ? " of limit |" : "", cache_column ? "---|" : "",
        probe ? "---|" : "");
  for (const std::string& model : models)
    for (const std::string& isa : caps)
      for (const std::string& pf : pfs)
        for (const std::string& cache_type : cache_types)
          for (int t : threads) {
            cke::EngineOptions o;
            o.model_path = model;
            o.isa = isa;
            o.decode_prefetch = pf;
            o.n_threads = t;
            o.n_batch = n_batch;
            o.cache_type = cache_type;
            o.no_repack = no_repack;
            o.mmap_weights = mmap_weights;
            o.n_ctx = max_depth + std::max({max_prompt, max_gen + 1, max_pg});
            o.n_seq = n_parallel;
            std::string err;
            auto e = cke::Engine::load(o, &err);
            if (!e) {
              fmt::print(stderr, "cke-bench: {}\n", err);
              return 1;
            }
            const cke::EngineStats& es = e->stats();
            if (probe && !limits.count(e->n_threads())) {
              const cke::MachineLimits m = cke::probe_machine(host, e->n_threads());
              limits[e->n_threads()] = m;
              limits_json[std::to_string(e->n_threads())] = {{"read_gbps", m.read_gbps},
                                                             {"f32_gflops", m.f32_gflops},
                                                             {"fma_isa", m.fma_isa},
                                                             {"int8_gops", m.int8_gops},
                                                             {"int8_isa", m.int8_isa}};
              if (out_format == "md")
                fmt::print(stderr,
                           "cke-bench: {} threads: read {:.1f} GB/s, f32 FMA {:.0f} GFLOPS ({}), "
                           "int8 {:.0f} GOPS ({})\n",
                           e->n_threads(), m.read_gbps, m.f32_gflops, m.fma_isa, m.int8_gops,
                           m.int8_isa);
            }
            std::mt19937 rng(1234);
            std::uniform_int_distribution<int32_t> tok(0, e->n_vocab() - 1);
            // Timed: a prefill of n_prompt tokens (if any), then n_gen decode steps (each
            // sequence's token in one batched call when seqs > 1, with no prompt); depth > 0:
            // each sequence holds `depth` tokens before the timed part.
            auto run = [&](const std::string& test, int n_prompt, int n_gen, int depth,
                           int seqs = 1) {
              const bool prefill = n_gen == 0;  // what the fractions of the limits measure
              std::vector<double> tps;
              std::vector<int32_t> prompt(static_cast<size_t>(n_prompt)),
                  ids(static_cast<size_t>(n_gen * seqs), 0), context(static_cast<size_t>(depth));
              for (auto& id : prompt) id = tok(rng);
              for (auto& id : ids) id = tok(rng);
              for (auto& id : context) id = tok(rng);
              std::vector<int32_t> seq_ids(static_cast<size_t>(seqs));
              for (int s = 0; s < seqs; ++s) seq_ids[size_t(s)] = s;
              std::vector<float> logits;
              if (delay > 0) std::this_thread::sleep_for(std::chrono::duration<double>(delay));
              // The first run (unless --no-warmup) warms the caches and pages in the weights.
              const int warmup = no_warmup ? 0 : 1;
              for (int r = 0; r < reps + warmup; ++r) {
                for (int s = 0; s < seqs; ++s) {
                  e->rewind(s, 0);
                  if (depth > 0 && !e->eval(s, context, nullptr, false, &err)) return false;
                }
                auto t0 = std::chrono::steady_clock::now();
                if (n_prompt > 0 && !e->eval(prompt, &logits, false, &err)) return false;
                if (seqs == 1) {
                  for (int i = 0; i < n_gen; ++i)
                    if (!e->eval({&ids[size_t(i)], 1}, &logits, false, &err)) return false;
                } else {
                  for (int i = 0; i < n_gen; ++i)
                    if (!e->decode_batch(seq_ids, {&ids[size_t(i * seqs)], size_t(seqs)}, &logits,
                                         &err))
                      return false;
                }
                const double s =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r >= warmup) tps.push_back(double(n_prompt + n_gen * seqs) / s);
              }
              const Stat st = stat(tps);
              const std::string isa_name =
                  (isa.empty() ? "probed" : isa) + (pf.empty() ? "" : " prefetch " + pf);
              // Fractions of the machine's limits.
              const double gbps = st.mean * double(es.decode_weight_bytes) / 1e9;
              const double gops = st.mean * 2.0 * double(es.decode_weight_elements) / 1e9;
              std::string frac;
              nlohmann::json row = {{"model", model},
                                    {"size_bytes", es.file_bytes},
                                    {"params", es.n_params},
                                    {"isa", isa_name},
                                    {"cache_type", cache_type},
                                    {"threads", e->n_threads()},
                                    {"test", test},
                                    {"n", n_prompt + n_gen},
                                    {"n_prompt", n_prompt},
                                    {"n_gen", n_gen},
                                    {"n_depth", depth},
                                    {"sequences", seqs},
                                    {"tokens_per_second", st.mean},
                                    {"stddev", st.sd},
                                    {"samples", tps},
                                    {"load_ms", es.load_ms},
                                    {"compile_ms", es.compile_ms},
                                    {"compile_maps_ms", es.maps_ms},
                                    {"compile_resolve_ms", es.resolve_ms},
                                    {"compile_jit_ms", es.jit_ms},
                                    {"repack_ms", es.repack_ms},
                                    {"repack_bytes", es.repack_bytes},
                                    {"weight_copy_bytes", es.weight_copy_bytes},
                                    {"weight_pages", es.weight_pages}};
              if (probe && n_prompt > 0 && n_gen > 0) {
                frac = "-";  // a prompt and its generation: neither limit alone
              } else if (probe) {
                const cke::MachineLimits& m = limits[e->n_threads()];
                if (prefill) {
                  frac = fmt::format("{:.0f} GOPS: {:.0f}% f32 FMA, {:.0f}% int8", gops,
                                     100 * gops / m.f32_gflops, 100 * gops / m.int8_gops);
                  row["gops"] = gops;
                  row["fraction_of_f32_peak"] = gops / m.f32_gflops;
                  row["fraction_of_int8_peak"] = gops / m.int8_gops;
                } else {
                  frac = fmt::format("{:.1f} GB/s: {:.0f}% read", gbps, 100 * gbps / m.read_gbps);
                  row["weight_gbps"] = gbps;
                  row["fraction_of_read_bandwidth"] = gbps / m.read_gbps;
                }
              }
              if (out_format == "md")
                fmt::print(
                    "| {} | {} | {} | {} |{} {} | {} | {:.2f} ± {:.2f} | {:.1f} | {:.1f} | {:.1f} "
                    "|{}\n",
                    model.substr(model.find_last_of('/') + 1), human_size(es.file_bytes),
                    human_params(es.n_params), isa_name,
                    cache_column ? " " + cache_type + " |" : "", e->n_threads(), test, st.mean,
                    st.sd, es.load_ms, es.compile_ms, es.repack_ms, probe ? " " + frac + " |" : "");
              if (out_format == "jsonl") fmt::print("{}\n", row.dump());
              if (out_format == "csv") fmt::print("{}\n", csv_row(row));
              std::fflush(stdout);  // a long run shows each test as it ends
              rows.push_back(row);
              return true;
            };
            // llama-bench's order and names: per depth, the pp tests, then the tg tests.
            for (int d : depths) {
              const std::string at = d > 0 ? fmt::format(" @ d{}", d) : "";
              bool ok = true;
              for (int n : prompts)
                ok = ok && (n == 0 || run(fmt::format("pp{}{}", n, at), n, 0, d));
              for (int n : gens) {
                ok = ok && (n == 0 || run(fmt::format("tg{}{}", n, at), 0, n, d));
                ok = ok && (n == 0 || n_parallel == 1 ||
                            run(fmt::format("tg{}x{}{}", n, n_parallel, at), 0, n, d, n_parallel));
              }
              for (auto [pp, tg] : pgs)
                ok = ok && run(fmt::format("pp{}+tg{}{}", pp, tg, at), pp, tg, d);
              if (!ok) {
                fmt::print(stderr, "cke-bench: {}\n", err);
                return 1;
              }
            }
          }
  if (out_format == "json") {
    nlohmann::json out = {{"results", rows}};
    if (probe) out["machine_limits_by_threads"] = limits_json;
    fmt::print("{}\n", out.dump(2));
  }
  return 0;
}
