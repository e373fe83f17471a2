// cke-server: an OpenAI-compatible HTTP server over CKE (docs/server.md).
//
//   cke-server -m model.gguf [--host 127.0.0.1] [--port 8080] [--parallel N] [-c CTX]
//              [-t THREADS] [--api-key KEY] [--queue Q] [--timeout S]
//
// --parallel N: N slots, the N sequences of one Engine (each its own KV cells); a scheduler
// thread evaluates the next tokens of every generating slot in one batched plan call and
// prefills waiting prompts in chunks between those steps. SIGTERM / SIGINT stop
// accepting, let requests in flight finish within --grace seconds, and exit 0.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <thread>

#include "runtime/chat/chat_prompt.h"
#include "runtime/cli/finite_range.h"
#include "runtime/cli/llama_flags.h"
#include "runtime/core/process_heap.h"
#include "runtime/server/batch_scheduler.h"
#include "runtime/server/http_server.h"

namespace {

// Waits for SIGINT/SIGTERM (blocked in every thread, taken here) while `running`.
int wait_for_signal(const sigset_t& set, const std::atomic<bool>& running) {
  while (running) {
    timespec ts{0, 100 * 1000 * 1000};
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig > 0) return sig;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  cke::tune_process_heap();
  CLI::App app{"cke-server: an OpenAI-compatible HTTP server over CKE"};
  cke::EngineOptions eo;
  cke::server::ServerConfig cfg;
  int32_t parallel = 1, queue = 16;
  double grace_s = 10;
  std::string alias, chat_template;
  std::string type_k = "f32", type_v = "f32", flash_attn = "auto";
  cke::SamplerParams& sp = cfg.defaults.sampling;
  app.add_option("-m,--model", eo.model_path, "GGUF model file")->required();
  app.add_option("--host", cfg.host, "address to listen on")->capture_default_str();
  app.add_option("--port", cfg.port, "port (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--parallel", parallel, "slots: requests generated at the same time (also -np)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--queue", queue, "requests that may wait for a slot (more: HTTP 503)")
      ->check(CLI::Range(0, 1 << 16))
      ->capture_default_str();
  app.add_option("-c,--ctx-size", eo.n_ctx, "context size per slot (0: model's, at most 4096)")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("-t,--threads", eo.n_threads, "threads (0: physical cores)")
      ->check(CLI::Range(0, 1024));
  app.add_option("-b,--batch-size", eo.n_batch,
                 "prefill chunk size (a prompt is prefilled in chunks between decode steps)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--cache-type-k", type_k, "KV cache type of K: f32 or f16 (also -ctk)");
  app.add_option("--cache-type-v", type_v, "KV cache type of V: f32 or f16 (also -ctv)");
  app.add_option("--flash-attn", flash_attn, "on|off|auto (also -fa)");
  app.add_option("--api-key", cfg.api_key, "require 'Authorization: Bearer KEY' (not on /health)");
  app.add_option("--timeout", cfg.timeout_s, "socket read/write timeout, seconds")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--grace", grace_s, "seconds requests in flight get at SIGTERM/SIGINT")
      ->check(cke::cli::finite_range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--max-body", cfg.max_body_bytes, "request body limit in bytes (more: HTTP 413)")
      ->check(CLI::Range(size_t(1), size_t(1) << 30))
      ->capture_default_str();
  app.add_option("--alias", alias, "model name to serve (default: the file name without .gguf)");
  app.add_option("--chat-template", chat_template,
                 "chat template name or .yaml file (default: from tokenizer.chat_template)");
  app.add_option("--isa", eo.isa, "cap the CPU features (as cke-run)");
  app.add_option("--temp", sp.temp, "default temperature")
      ->check(cke::cli::sampler_flag_range("temperature"));
  app.add_option("--top-k", sp.top_k, "default top-k")->check(CLI::Range(0, 1 << 30));
  app.add_option("--top-p", sp.top_p, "default top-p")
      ->check(cke::cli::sampler_flag_range("top_p"));
  app.add_option("--min-p", sp.min_p, "default min-p")
      ->check(cke::cli::sampler_flag_range("min_p"));
  app.add_option("-n,--n-predict", cfg.defaults.max_tokens,
                 "default max_tokens (-1: until end of generation or context)")
      ->check(CLI::Range(-1, INT32_MAX));
  try {
    cke::cli::LlamaArgs args(argc, argv);
    if (args.report_unknown_flag("cke-server")) return 2;
    app.parse(args.argc(), args.argv());
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  std::string err;
  if (!cke::kv_cache_from_flags(type_k, type_v, flash_attn, &eo.cache_type, &err)) {
    fmt::print(stderr, "cke-server: {}\n", err);
    return 2;
  }

  // Signals go to one thread: block them before any thread (engine pools, HTTP) exists.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a client gone mid-write is an error value, not a signal

  // The chat template: named, recognised from the model, or none (chat requests get a 400).
  std::optional<cke::ChatTemplate> tmpl =
      cke::chat_template_for_model(eo.model_path, chat_template, &err);
  if (!tmpl && !chat_template.empty()) {
    fmt::print(stderr, "cke-server: --chat-template: {}\n", err);
    return 1;
  }
  if (!tmpl)
    fmt::print(stderr, "cke-server: no chat template ({}); /v1/chat/completions answers 400\n",
               err);

  eo.n_seq = parallel;
  std::unique_ptr<cke::Engine> engine = cke::Engine::load(eo, &err);
  if (!engine) {
    fmt::print(stderr, "cke-server: {}\n", err);
    return 1;
  }
  cke::server::BatchScheduler scheduler(*engine);
  std::vector<std::unique_ptr<cke::server::Slot>> slots;
  for (int32_t i = 0; i < parallel; ++i) {
    auto slot = std::make_unique<cke::server::Slot>();
    slot->id = i;
    slot->engine = engine.get();
    slot->session = std::make_unique<cke::Session>(*engine, tmpl, i, &scheduler);
    slots.push_back(std::move(slot));
  }
  fmt::print(stderr,
             "cke-server: {} slot(s) of {} ({}), context {} each, {} thread(s); load {:.1f} "
             "ms, compile {:.1f} ms\n",
             parallel, eo.model_path, engine->architecture(), engine->n_ctx(), engine->n_threads(),
             engine->stats().load_ms, engine->stats().compile_ms);
  const std::filesystem::path model_file(eo.model_path);
  cfg.model_id = alias.empty() ? model_file.stem().string() : alias;
  cfg.model_names = {cfg.model_id, model_file.filename().string(), model_file.stem().string(),
                     eo.model_path};
  // Every slot and every waiting request holds an HTTP thread; a few more serve /health etc.
  cfg.http_threads = size_t(parallel + queue + 4);
  cke::server::SlotPool pool(std::move(slots), size_t(queue),
                             [&](int id, bool leased) { scheduler.set_active(id, leased); });
  cke::server::HttpServer server(cfg, pool, tmpl, &scheduler);
  if (!server.bind(&err)) {
    fmt::print(stderr, "cke-server: {}\n", err);
    return 1;
  }
  fmt::print(stderr, "cke-server: listening on http://{}:{}\n", cfg.host, server.port());

  std::atomic<bool> serving{true};
  std::thread http([&] {
    server.serve();
    serving = false;
  });
  const int sig = wait_for_signal(sigs, serving);
  if (sig != 0) {
    fmt::print(stderr, "cke-server: {}: no new requests; {:.0f} s for those in flight\n",
               sig == SIGTERM ? "SIGTERM" : "SIGINT", grace_s);
    server.stop();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(grace_s * 1000));
    while (serving && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (serving) {
      fmt::print(stderr, "cke-server: grace time over: cancelling the generations in flight\n");
      server.cancel_all();
    }
  }
  http.join();
  fmt::print(stderr, "cke-server: stopped\n");
  return 0;
}
