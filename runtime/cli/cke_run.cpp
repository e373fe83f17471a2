// cke-run: load a GGUF model, compile it for this host, and generate text.
//
//   cke-run -m model.gguf -p "Once upon a time" -n 32 --temp 0
//
// Flags follow llama.cpp's where they exist. Parity flags: --prompt-tokens (ids, used as
// given: no BOS added), --force-tokens (teacher forcing through the decode path),
// --logits-out (raw f32 rows: every prompt position, then one per decode step).
//
//   cke-run -m model.gguf --chat [--system TEXT] [--chat-template NAME] [-p FIRST]
//
// --chat: an interactive multi-turn chat (docs/chat.md). User lines come from stdin ("> " on
// stderr; a line ending in \ continues on the next), each reply is streamed to stdout, and
// only the new part of the conversation is evaluated on top of the KV cache. EOF ends it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/chat/chat_prompt.h"
#include "runtime/chat/chat_template.h"
#include "runtime/chat/generate_session.h"
#include "runtime/chat/session.h"
#include "runtime/cli/finite_range.h"
#include "runtime/cli/llama_flags.h"
#include "runtime/core/engine.h"
#include "runtime/core/process_heap.h"
#include "runtime/core/sampler.h"

namespace {

bool parse_ids(const std::string& s, std::vector<int32_t>* out, std::string* err) {
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX) {
      *err = "not a token id: '" + item + "'";
      return false;
    }
    out->push_back(int32_t(v));
  }
  return true;
}

double secs(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// One user message from stdin: a line, continued while it ends in a backslash. Empty input
// is skipped. False at EOF.
bool read_user_message(std::string* out) {
  out->clear();
  while (true) {
    std::fputs(out->empty() ? "> " : ". ", stderr);
    std::fflush(stderr);
    std::string line;
    if (!std::getline(std::cin, line)) return !out->empty();
    if (!line.empty() && line.back() == '\\') {
      line.pop_back();
      *out += line + "\n";
      continue;
    }
    *out += line;
    if (!out->empty()) return true;
  }
}

// The --chat session: -p (if given) is the first user message, then stdin, until EOF or a
// full context. After each reply one line of statistics on stderr shows what the KV cache
// reused and what was evaluated.
int run_chat(cke::Engine& engine, cke::ChatTemplate tmpl, const cke::SamplerParams& sp,
             const std::string& system, const std::string& first, int32_t n_predict) {
  fmt::print(stderr, "cke-run: chat template '{}' ({}); end with EOF (Ctrl-D)\n", tmpl.name,
             tmpl.file);
  cke::ChatSession chat(engine, std::move(tmpl), sp, {.system = system, .n_predict = n_predict});
  std::string msg = first, err;
  for (int turn = 1; !msg.empty() || read_user_message(&msg); ++turn) {
    cke::ChatTurnStats st;
    const bool ok = chat.send(
        msg,
        [](std::string_view s) {
          fmt::print("{}", s);
          std::fflush(stdout);
        },
        &st, &err);
    msg.clear();
    if (ok) fmt::print("\n");
    std::fflush(stdout);
    if (st.stop == cke::ChatStop::kContextFull) {
      if (ok)
        err = fmt::format("the reply reached the end of the context ({} tokens)", engine.n_ctx());
      fmt::print(stderr,
                 "cke-run: context full: {}; the conversation ends here (use -c for a larger "
                 "context)\n",
                 err);
      return 0;
    }
    if (!ok) {
      fmt::print(stderr, "cke-run: {}\n", err);
      return 1;
    }
    fmt::print(stderr,
               "cke-run: turn {}: KV reused {} of {}, evaluated {} new tokens ({:.1f} tok/s), "
               "generated {} ({:.1f} tok/s, {}), KV {}/{}\n",
               turn, st.kv_reused, st.kv_before, st.prompt_tokens,
               st.prompt_ms > 0 ? st.prompt_tokens * 1e3 / st.prompt_ms : 0.0, st.generated,
               st.generate_ms > 0 ? st.generated * 1e3 / st.generate_ms : 0.0,
               cke::chat_stop_name(st.stop), st.kv_after, engine.n_ctx());
  }
  fmt::print(stderr, "\n");  // after the last "> "
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cke::tune_process_heap();
  CLI::App app{"cke-run: compile a GGUF model for this CPU and generate"};
  cke::EngineOptions eo;
  cke::SamplerParams sp;
  std::string prompt, prompt_tokens, force_tokens, logits_out, xray_out, emit_dir;
  int32_t n_predict = -1;
  bool show_plan = false, no_display_prompt = false, chat = false;
  std::string system_prompt, chat_template;
  app.add_option("-m,--model", eo.model_path, "GGUF model file")->required();
  app.add_option("-p,--prompt", prompt, "prompt text");
  app.add_option("-n,--n-predict", n_predict, "tokens to generate (-1: until EOS or context end)");
  app.add_option("-t,--threads", eo.n_threads, "threads (0: physical cores)")
      ->check(CLI::Range(0, 1024));
  app.add_option("-c,--ctx-size", eo.n_ctx, "context size (0: model's, at most 4096)")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("-b,--batch-size", eo.n_batch, "prefill chunk size")
      ->check(CLI::Range(1, 1 << 16));
  std::string type_k = "f32", type_v = "f32", flash_attn = "auto";
  app.add_option("--cache-type-k", type_k, "KV cache type of K: f32 or f16 (also -ctk)");
  app.add_option("--cache-type-v", type_v, "KV cache type of V: f32 or f16 (also -ctv)");
  app.add_option("--flash-attn", flash_attn,
                 "on|off|auto: flash attention (auto: with an f16 cache, as llama.cpp; also -fa)");
  app.add_option("--temp", sp.temp, "temperature (0: greedy)")
      ->check(cke::cli::sampler_flag_range("temperature"));
  app.add_option("--top-k", sp.top_k, "top-k (0: off)")->check(CLI::Range(0, 1 << 30));
  app.add_option("--top-p", sp.top_p, "top-p (1: off)")
      ->check(cke::cli::sampler_flag_range("top_p"));
  app.add_option("--min-p", sp.min_p, "min-p (0: off)")
      ->check(cke::cli::sampler_flag_range("min_p"));
  app.add_option("--repeat-penalty", sp.repeat_penalty, "repeat penalty (1: off)")
      ->check(cke::cli::sampler_flag_range("repeat_penalty"));
  app.add_option("--presence-penalty", sp.presence_penalty, "presence penalty (0: off)")
      ->check(cke::cli::sampler_flag_range("presence_penalty"));
  app.add_option("--frequency-penalty", sp.frequency_penalty, "frequency penalty (0: off)")
      ->check(cke::cli::sampler_flag_range("frequency_penalty"));
  app.add_option("--repeat-last-n", sp.repeat_last_n, "tokens the penalties look back on")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("-s,--seed", sp.seed, "sampling seed");
  app.add_option(
      "--isa", eo.isa,
      "cap the CPU features: scalar|avx2|avx_vnni|avx512|avx512_vnni|amx or a feature list");
  app.add_flag("--plan", show_plan, "print the frozen plan and exit");
  app.add_option("--xray", xray_out, "write the X-Ray trace (JSON) to FILE");
  app.add_option("--prompt-tokens", prompt_tokens, "prompt as token ids 1,403,407 (no BOS added)");
  app.add_option("--force-tokens", force_tokens,
                 "teacher forcing: feed these ids one decode step at a time");
  app.add_option("--logits-out", logits_out, "write raw f32 logits of every evaluated position");
  app.add_option("--kernel-maps", eo.kernel_map_dirs, "kernel map directory (repeatable)");
  app.add_option("--circuits", eo.circuit_dirs, "circuit directory (repeatable)");
  app.add_option("--emit-c", emit_dir,
                 "write the frozen plan as C (cke_plan.h/.c) into DIR and exit");
  app.add_option("--run-emitted", eo.run_emitted_dir,
                 "run through the C emitted into DIR (compiled with $CC/cc)");
  app.add_flag("--allow-candidate", eo.allow_candidate, "let candidate providers compete");
  app.add_flag("--mmap-weights", eo.mmap_weights,
               "read the weights the plan takes in the file's layout from the file's mapping, "
               "not from a copy in 2 MiB pages made at load");
  app.add_flag("--no-repack", eo.no_repack,
               "no repacked weight copies at load: providers that read the file's blocks only");
  app.add_flag("--no-display-prompt", no_display_prompt, "do not echo the prompt");
  auto* chat_opt = app.add_flag(
      "--chat", chat,
      "interactive chat: user lines from stdin, -p is the first message, -n limits each reply");
  app.add_option("--system", system_prompt, "system message of the chat")->needs(chat_opt);
  app.add_option("--chat-template", chat_template,
                 "chat template name or .yaml file (default: from tokenizer.chat_template)")
      ->needs(chat_opt);
  for (const char* f : {"--prompt-tokens", "--force-tokens", "--logits-out"})
    chat_opt->excludes(app.get_option(f));
  try {
    cke::cli::LlamaArgs args(argc, argv);
    if (args.report_unknown_flag("cke-run")) return 2;
    app.parse(args.argc(), args.argv());
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  std::vector<int32_t> prompt_ids, forced;
  std::string err;
  if (!cke::kv_cache_from_flags(type_k, type_v, flash_attn, &eo.cache_type, &err)) {
    fmt::print(stderr, "cke-run: {}\n", err);
    return 2;
  }
  if (!prompt_tokens.empty() && !parse_ids(prompt_tokens, &prompt_ids, &err)) {
    fmt::print(stderr, "cke-run: --prompt-tokens: {}\n", err);
    return 2;
  }
  if (!force_tokens.empty() && !parse_ids(force_tokens, &forced, &err)) {
    fmt::print(stderr, "cke-run: --force-tokens: {}\n", err);
    return 2;
  }

  std::optional<cke::ChatTemplate> chat_tmpl;
  if (chat && !(chat_tmpl = cke::chat_template_for_model(eo.model_path, chat_template, &err))) {
    if (chat_template.empty()) err += "; choose one with --chat-template NAME";
    fmt::print(stderr, "cke-run: --chat: {}\n", err);
    return 1;
  }

  eo.plan_only = show_plan || !emit_dir.empty();  // both exit before running: no weight copies
  auto engine = cke::Engine::load(eo, &err);
  if (!engine) {
    fmt::print(stderr, "cke-run: {}\n", err);
    return 1;
  }
  if (!xray_out.empty()) {
    std::ofstream f(xray_out);
    f << engine->trace().dump(2) << "\n";
    if (!f) {
      fmt::print(stderr, "cke-run: cannot write {}\n", xray_out);
      return 1;
    }
  }
  if (!emit_dir.empty()) {
    if (!engine->emit_c(emit_dir, &err)) {
      fmt::print(stderr, "cke-run: {}\n", err);
      return 1;
    }
    fmt::print(stderr, "cke-run: wrote {}/cke_plan.h and {}/cke_plan.c\n", emit_dir, emit_dir);
    return 0;
  }
  if (show_plan) {
    fmt::print("{}", engine->plan_text());
    return 0;
  }
  if (chat) return run_chat(*engine, std::move(*chat_tmpl), sp, system_prompt, prompt, n_predict);
  const cke::Tokenizer& tok = engine->tokenizer();
  if (prompt_tokens.empty())
    prompt_ids = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  if (prompt_ids.empty()) {
    fmt::print(stderr, "cke-run: empty prompt (give -p TEXT or --prompt-tokens IDS)\n");
    return 2;
  }
  const int32_t n_vocab = engine->n_vocab();
  for (int32_t id : prompt_ids)
    if (id >= n_vocab) {
      fmt::print(stderr, "cke-run: prompt token {} out of range (n_vocab {})\n", id, n_vocab);
      return 2;
    }
  for (int32_t id : forced)
    if (id >= n_vocab) {
      fmt::print(stderr, "cke-run: forced token {} out of range (n_vocab {})\n", id, n_vocab);
      return 2;
    }
  const int64_t need = int64_t(prompt_ids.size()) + int64_t(forced.size());
  if (need > engine->n_ctx()) {
    fmt::print(
        stderr,
        "cke-run: prompt of {} tokens (+{} forced) does not fit the context of {} (use -c)\n",
        prompt_ids.size(), forced.size(), engine->n_ctx());
    return 1;
  }

  cke::Session session(*engine);
  std::ofstream lf;
  if (!logits_out.empty()) {
    lf.open(logits_out, std::ios::binary);
    if (!lf) {
      fmt::print(stderr, "cke-run: cannot write {}\n", logits_out);
      return 1;
    }
    session.set_logits_observer(
        [&](const std::vector<float>& rows) {
          lf.write(reinterpret_cast<const char*>(rows.data()), std::streamsize(rows.size() * 4));
        },
        /*all_prompt_logits=*/true);
  }

  if (!no_display_prompt && prompt_tokens.empty()) {
    fmt::print("{}", prompt);
    std::fflush(stdout);
  }
  // The prompt, the forced tokens one decode step each, then generation from there: -n
  // tokens, or until EOG / the context is full.
  auto t0 = std::chrono::steady_clock::now();
  if (!session.append(prompt_ids, /*one_at_a_time=*/false, &err)) {
    fmt::print(stderr, "cke-run: {}\n", err);
    return 1;
  }
  auto t1 = std::chrono::steady_clock::now();
  if (!session.append(forced, /*one_at_a_time=*/true, &err)) {
    fmt::print(stderr, "cke-run: {}\n", err);
    return 1;
  }
  cke::GenerateParams gp;
  gp.sampling = sp;
  gp.max_tokens = n_predict;
  cke::GenerateResult gen;
  const std::vector<int32_t> context = session.kv_tokens();
  const bool ok = session.generate(
      context, gp,
      [](int32_t, std::string_view text) {
        fmt::print("{}", text);
        std::fflush(stdout);
        return true;
      },
      &gen, &err);
  if (!ok) {
    fmt::print(stderr, "cke-run: {}\n", err);
    return 1;
  }
  auto t2 = std::chrono::steady_clock::now();
  const int32_t generated = gen.completion_tokens;
  fmt::print("\n");
  const auto& st = engine->stats();
  const double tp = secs(t0, t1), tg = secs(t1, t2);
  const int64_t decode_steps = int64_t(forced.size()) + std::max(0, generated - 1);
  // The repack step: the repacked layouts and the copy in 2 MiB pages of the weights read in
  // the file's layout (--mmap-weights: none).
  const int64_t copied = st.repack_bytes + st.weight_copy_bytes;
  const std::string repack =
      copied > 0 ? fmt::format(", repack {:.1f} ms ({:.1f} MiB repacked, {:.1f} MiB copied)",
                               st.repack_ms, double(st.repack_bytes) / (1 << 20),
                               double(st.weight_copy_bytes) / (1 << 20))
                 : "";
  // Why the weights stayed in the file's mapping, when they did.
  const std::string pages = st.weight_copy_bytes == 0 && !st.weight_pages.empty()
                                ? ", weights in the " + st.weight_pages
                                : "";
  fmt::print(
      stderr,
      "\ncke-run: load {:.1f} ms, compile {:.1f} ms (maps {:.1f}, resolve {:.1f}, jit "
      "{:.1f}){}{} | prompt {} tokens, {:.1f} tok/s | generation {} tokens, {:.1f} tok/s | {} "
      "threads\n",
      st.load_ms, st.compile_ms, st.maps_ms, st.resolve_ms, st.jit_ms, repack, pages,
      prompt_ids.size(), tp > 0 ? prompt_ids.size() / tp : 0.0, generated,
      tg > 0 && decode_steps > 0 ? decode_steps / tg : 0.0, engine->n_threads());
  return 0;
}
