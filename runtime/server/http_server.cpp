#include "runtime/server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "runtime/chat/chat_prompt.h"
#include "runtime/server/openai_request.h"
#include "runtime/server/openai_response.h"
#include "runtime/server/utf8_holdback.h"

namespace cke::server {

using nlohmann::json;

namespace {

void send_error(httplib::Response& res, const HttpError& e) {
  res.status = e.status;
  res.set_content(error_body(e), "application/json");
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The counters' endpoint label: the routes by name, anything else as "other".
std::string endpoint_label(const std::string& path) {
  static const char* known[] = {
      "/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics", "/tokenize",
      "/detokenize"};
  for (const char* k : known)
    if (path == k) return k;
  return "other";
}

const char* reason_for(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 413:
      return "the request body is too large";
    default:
      return "error";
  }
}

}  // namespace

HttpServer::HttpServer(ServerConfig config, SlotPool& pool, std::optional<ChatTemplate> tmpl,
                       const BatchScheduler* scheduler)
    : cfg_(std::move(config)),
      pool_(pool),
      tmpl_(std::move(tmpl)),
      scheduler_(scheduler),
      http_(std::make_unique<httplib::Server>()) {
  routes();
}

HttpServer::~HttpServer() = default;

bool HttpServer::bind(std::string* err) {
  if (cfg_.port == 0) {
    port_ = http_->bind_to_any_port(cfg_.host);
  } else {
    port_ = http_->bind_to_port(cfg_.host, cfg_.port) ? cfg_.port : -1;
  }
  if (port_ <= 0) {
    *err = fmt::format("cannot listen on {}:{}", cfg_.host, cfg_.port);
    return false;
  }
  return true;
}

bool HttpServer::serve() {
  return http_->listen_after_bind();
}

void HttpServer::stop() {
  http_->stop();
}

std::string HttpServer::render_metrics() const {
  return metrics_.render(pool_.busy(), pool_.size(), pool_.queued()) +
         (scheduler_ ? Metrics::render_scheduler(scheduler_->stats()) : "");
}

void HttpServer::routes() {
  httplib::Server& s = *http_;
  const size_t threads = cfg_.http_threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_payload_max_length(cfg_.max_body_bytes);
  s.set_read_timeout(cfg_.timeout_s, 0);
  s.set_write_timeout(cfg_.timeout_s, 0);
  s.set_keep_alive_timeout(2);  // idle connections do not hold a shutdown up for long

  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (cfg_.api_key.empty() || req.path == "/health")
      return httplib::Server::HandlerResponse::Unhandled;
    if (req.get_header_value("Authorization") == "Bearer " + cfg_.api_key)
      return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, {401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                     "authentication_error"});
    return httplib::Server::HandlerResponse::Handled;
  });
  // Errors httplib produces itself (no route, body too large) get OpenAI's body too.
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string msg = reason_for(res.status);
    if (res.status == 404) msg = fmt::format("no route for {} {}", req.method, req.path);
    if (res.status == 413)
      msg = fmt::format("the request body exceeds {} bytes", cfg_.max_body_bytes);
    send_error(res,
               {res.status, msg, res.status == 404 ? "not_found_error" : "invalid_request_error"});
  });
  s.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        send_error(res, {500, what, "server_error"});
      });
  s.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics_.count_request(endpoint_label(req.path), res.status);
  });

  s.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(render_metrics(), "text/plain; version=0.0.4");
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    Engine& e = *pool_.slot(0).engine;
    const json model = {{"id", cfg_.model_id},
                        {"object", "model"},
                        {"created", unix_now()},
                        {"owned_by", "cke"},
                        {"meta",
                         {{"n_ctx", e.n_ctx()},
                          {"n_vocab", e.n_vocab()},
                          {"architecture", e.architecture()},
                          {"slots", pool_.size()}}}};
    res.set_content(dump_json(json{{"object", "list"}, {"data", json::array({model})}}),
                    "application/json");
  });

  // llama-server's shapes: {"content", "add_special"=false, "parse_special"=true} -> {"tokens"}.
  s.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    const json j = json::parse(req.body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("content") || !j["content"].is_string())
      return send_error(res, {400, "expected {\"content\": string}"});
    const json add = j.value("add_special", json(false)),
               parse = j.value("parse_special", json(true));
    if (!add.is_boolean() || !parse.is_boolean())
      return send_error(res, {400, "'add_special' and 'parse_special' must be true or false"});
    const std::vector<int32_t> ids = pool_.slot(0).engine->tokenizer().encode(
        j["content"].get<std::string>(), add.get<bool>(), parse.get<bool>());
    res.set_content(dump_json(json{{"tokens", ids}}), "application/json");
  });
  s.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    const json j = json::parse(req.body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("tokens") || !j["tokens"].is_array())
      return send_error(res, {400, "expected {\"tokens\": [ids]}"});
    const Tokenizer& tok = pool_.slot(0).engine->tokenizer();
    std::vector<int32_t> ids;
    for (const json& t : j["tokens"]) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.n_vocab())
        return send_error(
            res, {400, fmt::format("'tokens' must hold token ids in [0, {})", tok.n_vocab())});
      ids.push_back(t.get<int32_t>());
    }
    res.set_content(dump_json(json{{"content", tok.decode(ids)}}), "application/json");
  });

  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    complete(req, res, /*chat=*/true);
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    complete(req, res, /*chat=*/false);
  });
}

bool HttpServer::prompt_of(CompletionRequest& r, std::vector<int32_t>* prompt, HttpError* e) {
  const Engine& engine = *pool_.slot(0).engine;
  const Tokenizer& tok = engine.tokenizer();
  auto fail = [&](int status, std::string msg) {
    *e = {status, std::move(msg)};
    return false;
  };
  std::string err;
  if (r.chat) {
    if (!tmpl_)
      return fail(400,
                  "the model has no chat template; start cke-server with --chat-template NAME "
                  "or use /v1/completions");
    if (!chat_prompt_tokens(*tmpl_, tok, r.messages, prompt, &err)) return fail(400, err);
    r.params.stop.insert(r.params.stop.end(), tmpl_->stop.begin(), tmpl_->stop.end());
  } else if (!r.prompt_tokens.empty()) {
    for (int32_t id : r.prompt_tokens)
      if (id >= tok.n_vocab())
        return fail(400,
                    fmt::format("prompt token {} out of range (n_vocab {})", id, tok.n_vocab()));
    *prompt = r.prompt_tokens;
  } else {
    *prompt = tok.encode(r.prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  if (prompt->empty()) return fail(400, "the prompt has no tokens");
  if (int64_t(prompt->size()) >= engine.n_ctx())
    return fail(400, fmt::format("the prompt has {} tokens; the context holds {} (start "
                                 "cke-server with a larger -c)",
                                 prompt->size(), engine.n_ctx()));
  return true;
}

void HttpServer::complete(const httplib::Request& req, httplib::Response& res, bool chat) {
  HttpError e;
  std::optional<CompletionRequest> r = parse_completion_request(req.body, chat, cfg_.defaults, &e);
  if (!r) return send_error(res, e);
  if (!r->model.empty() && std::find(cfg_.model_names.begin(), cfg_.model_names.end(), r->model) ==
                               cfg_.model_names.end())
    return send_error(res, {404,
                            fmt::format("the model '{}' does not exist; this server serves '{}'",
                                        r->model, cfg_.model_id),
                            "invalid_request_error"});
  auto prompt = std::make_shared<std::vector<int32_t>>();
  if (!prompt_of(*r, prompt.get(), &e)) return send_error(res, e);

  std::unique_ptr<SlotPool::Lease> lease = pool_.acquire(*prompt);
  if (!lease) {
    res.set_header("Retry-After", "1");
    return send_error(
        res,
        {503, fmt::format("all {} slots are busy and the queue is full; retry later", pool_.size()),
         "unavailable_error"});
  }
  const ResponseHead head{chat, fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", next_id_++),
                          unix_now(), cfg_.model_id};
  if (!r->stream) {
    GenerateResult g;
    std::string err;
    const bool ok = lease->slot().session->generate(
        *prompt, r->params, [this](int32_t, std::string_view) { return !cancel_.load(); }, &g,
        &err);
    lease.reset();
    if (!ok) return send_error(res, {500, err, "server_error"});
    count(g);
    res.set_content(dump_json(completion_body(head, g)), "application/json");
    return;
  }

  // Streaming: the provider runs after this handler returns and holds the slot until it has
  // generated; a client that goes away cancels the generation at its next token.
  auto held = std::make_shared<std::unique_ptr<SlotPool::Lease>>(std::move(lease));
  auto params = std::make_shared<GenerateParams>(std::move(r->params));
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [this, held, params, prompt, head](size_t, httplib::DataSink& sink) {
        // httplib calls the provider outside the handler's exception handling: nothing may
        // escape it (that would end the process).
        try {
          return stream(*held, *prompt, *params, head, sink);
        } catch (...) {
          held->reset();
          return false;
        }
      });
}

bool HttpServer::stream(std::unique_ptr<SlotPool::Lease>& lease, const std::vector<int32_t>& prompt,
                        const GenerateParams& params, const ResponseHead& head,
                        httplib::DataSink& sink) {
  if (!lease) return false;  // called again after the stream ended
  bool alive = true;         // false once a write failed: the client is gone
  auto send = [&](const json& j) {
    const std::string s = "data: " + dump_json(j) + "\n\n";
    return alive = alive && sink.write(s.data(), s.size());
  };
  if (head.chat) send(role_chunk(head));
  GenerateResult g;
  std::string err;
  Utf8Holdback whole;  // chunks carry whole characters
  const bool ok = lease->slot().session->generate(
      prompt, params,
      [&](int32_t, std::string_view text) {
        if (cancel_) return false;
        if (!alive || !sink.is_writable()) return alive = false;
        const std::string out = whole.push(text);
        return out.empty() || send(text_chunk(head, out));
      },
      &g, &err);
  lease.reset();  // the slot is free from here on
  if (const std::string rest = whole.flush(); !rest.empty()) send(text_chunk(head, rest));
  count(g);
  if (!alive) return false;
  if (ok) {
    send(final_chunk(head, g));
  } else {
    send({{"error", {{"message", err}, {"type", "server_error"}, {"code", 500}}}});
  }
  const std::string done = "data: [DONE]\n\n";
  sink.write(done.data(), done.size());
  sink.done();
  return true;
}

void HttpServer::count(const GenerateResult& g) {
  metrics_.count_generation(g.prompt_tokens - g.cached_tokens, g.prompt_ms, g.completion_tokens,
                            g.generate_ms);
}

}  // namespace cke::server
