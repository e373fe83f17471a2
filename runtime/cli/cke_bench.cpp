// cke-bench: end-to-end prefill and decode throughput, in the spirit of llama-bench.
//
//   cke-bench -m model.gguf -p 512 -n 128 -t 2 --isa avx2,avx512 -r 3
//
// Every (ISA cap, threads) combination compiles its own plan; pp<N> evaluates N prompt
// tokens from an empty cache (prefill plan, chunks of -b), tg<N> N single-token decode
// steps. Results are tokens/s, mean ± stddev over -r repetitions, as a markdown table or
// JSON; compare rows of one run (the machine may be shared and noisy).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "runtime/core/engine.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cke-bench: prefill and decode tokens/s of a compiled model"};
  std::string model, isas = "", threads_list = "0", out_format = "md";
  int32_t n_prompt = 512, n_gen = 128, reps = 3, n_batch = 256;
  app.add_option("-m,--model", model, "GGUF model")->required();
  app.add_option("-p,--n-prompt", n_prompt, "prompt tokens for the pp test (0: skip)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-n,--n-gen", n_gen, "generated tokens for the tg test (0: skip)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-b,--batch-size", n_batch, "prefill chunk")->check(CLI::Range(1, 1 << 16));
  app.add_option("-t,--threads", threads_list, "comma-separated thread counts (0: physical cores)");
  app.add_option("--isa", isas, "comma-separated ISA caps to compare (empty: as probed)");
  app.add_option("-r,--repetitions", reps, "repetitions")->check(CLI::Range(1, 1000));
  app.add_option("-o,--output", out_format, "md or json")->check(CLI::IsMember({"md", "json"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::vector<std::string> caps = isas.empty() ? std::vector<std::string>{""} : split(isas);
  std::vector<int> threads;
  for (const auto& t : split(threads_list)) {
    try {
      threads.push_back(std::stoi(t));
    } catch (...) {
      fmt::print(stderr, "cke-bench: -t: not a number: '{}'\n", t);
      return 2;
    }
  }
  nlohmann::json rows = nlohmann::json::array();
  if (out_format == "md")
    fmt::print("| model | isa | threads | test | t/s |\n|---|---|---:|---|---:|\n");
  for (const std::string& isa : caps)
    for (int t : threads) {
      cke::EngineOptions o;
      o.model_path = model;
      o.isa = isa;
      o.n_threads = t;
      o.n_batch = n_batch;
      o.n_ctx = std::max(n_prompt, n_gen + 1);
      std::string err;
      auto e = cke::Engine::load(o, &err);
      if (!e) {
        fmt::print(stderr, "cke-bench: {}\n", err);
        return 1;
      }
      std::mt19937 rng(1234);
      std::uniform_int_distribution<int32_t> tok(0, e->n_vocab() - 1);
      auto run = [&](const std::string& test, int n, bool prefill) {
        std::vector<double> tps;
        std::vector<int32_t> ids(static_cast<size_t>(n), 0);
        for (auto& id : ids) id = tok(rng);
        std::vector<float> logits;
        for (int r = 0; r < reps + 1; ++r) {  // the first run warms caches and pages in weights
          e->rewind(0);
          auto t0 = std::chrono::steady_clock::now();
          if (prefill) {
            if (!e->eval(ids, &logits, false, &err)) return false;
          } else {
            for (int i = 0; i < n; ++i)
              if (!e->eval({&ids[size_t(i)], 1}, &logits, false, &err)) return false;
          }
          const double s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (r > 0) tps.push_back(n / s);
        }
        const Stat st = stat(tps);
        const std::string isa_name = isa.empty() ? "probed" : isa;
        if (out_format == "md")
          fmt::print("| {} | {} | {} | {} | {:.2f} ± {:.2f} |\n",
                     model.substr(model.find_last_of('/') + 1), isa_name, e->n_threads(), test,
                     st.mean, st.sd);
        rows.push_back({{"model", model},
                        {"isa", isa_name},
                        {"threads", e->n_threads()},
                        {"test", test},
                        {"n", n},
                        {"tokens_per_second", st.mean},
                        {"stddev", st.sd},
                        {"samples", tps},
                        {"compile_ms", e->stats().compile_ms}});
        return true;
      };
      if ((n_prompt > 0 && !run(fmt::format("pp{}", n_prompt), n_prompt, true)) ||
          (n_gen > 0 && !run(fmt::format("tg{}", n_gen), n_gen, false))) {
        fmt::print(stderr, "cke-bench: {}\n", err);
        return 1;
      }
    }
  if (out_format == "json") fmt::print("{}\n", rows.dump(2));
  return 0;
}
