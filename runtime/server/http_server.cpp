#include "runtime/server/http_server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "runtime/chat/chat_prompt.h"
#include "runtime/server/openai_request.h"
#include "runtime/server/utf8_holdback.h"

namespace cke::server {

using nlohmann::json;

namespace {

// Generated text may hold invalid UTF-8 (a token cut inside a character at max_tokens, or
// bytes the model made up); JSON gets U+FFFD for those bytes instead of an exception.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void send_error(httplib::Response& res, const HttpError& e) {
  res.status = e.status;
  res.set_content(error_body(e), "application/json");
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// OpenAI knows "stop" and "length"; a cancelled generation (shutdown) says so.
const char* openai_finish(FinishReason r) {
  switch (r) {
    case FinishReason::kStop:
    case FinishReason::kEos:
      return "stop";
    case FinishReason::kLength:
    case FinishReason::kContext:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "stop";
}

json usage_json(const GenerateResult& g) {
  return {{"prompt_tokens", g.prompt_tokens},
          {"completion_tokens", g.completion_tokens},
          {"total_tokens", g.prompt_tokens + g.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", g.cached_tokens}}}};
}

// llama-server's "timings" object.
json timings_json(const GenerateResult& g) {
  const int32_t evaluated = g.prompt_tokens - g.cached_tokens;
  return {{"cache_n", g.cached_tokens},
          {"prompt_n", evaluated},
          {"prompt_ms", g.prompt_ms},
          {"prompt_per_second", g.prompt_ms > 0 ? evaluated * 1e3 / g.prompt_ms : 0.0},
          {"predicted_n", g.completion_tokens},
          {"predicted_ms", g.generate_ms},
          {"predicted_per_second",
           g.generate_ms > 0 ? g.completion_tokens * 1e3 / g.generate_ms : 0.0}};
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

HttpServer::HttpServer(ServerConfig config, SlotPool& pool, std::optional<ChatTemplate> tmpl)
    : cfg_(std::move(config)),
      pool_(pool),
      tmpl_(std::move(tmpl)),
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
  return metrics_.render(pool_.busy(), pool_.size(), pool_.queued());
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
    res.set_content(dump(json{{"object", "list"}, {"data", json::array({model})}}),
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
    res.set_content(dump(json{{"tokens", ids}}), "application/json");
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
    res.set_content(dump(json{{"content", tok.decode(ids)}}), "application/json");
  });

  auto completion = [this](bool chat) {
    return [this, chat](const httplib::Request& req, httplib::Response& res) {
      HttpError e;
      std::optional<CompletionRequest> r =
          parse_completion_request(req.body, chat, cfg_.defaults, &e);
      if (!r) return send_error(res, e);
      if (!r->model.empty() && std::find(cfg_.model_names.begin(), cfg_.model_names.end(),
                                         r->model) == cfg_.model_names.end())
        return send_error(
            res, {404,
                  fmt::format("the model '{}' does not exist; this server serves '{}'", r->model,
                              cfg_.model_id),
                  "invalid_request_error"});
      Engine& engine0 = *pool_.slot(0).engine;
      const Tokenizer& tok = engine0.tokenizer();
      auto prompt = std::make_shared<std::vector<int32_t>>();
      std::string err;
      if (chat) {
        if (!tmpl_)
          return send_error(res, {400,
                                  "the model has no chat template; start cke-server with "
                                  "--chat-template NAME or use /v1/completions"});
        if (!chat_prompt_tokens(*tmpl_, tok, r->messages, prompt.get(), &err))
          return send_error(res, {400, err});
        r->params.stop.insert(r->params.stop.end(), tmpl_->stop.begin(), tmpl_->stop.end());
      } else if (!r->prompt_tokens.empty()) {
        for (int32_t id : r->prompt_tokens)
          if (id >= tok.n_vocab())
            return send_error(res, {400, fmt::format("prompt token {} out of range (n_vocab {})",
                                                     id, tok.n_vocab())});
        *prompt = r->prompt_tokens;
      } else {
        *prompt = tok.encode(r->prompt, /*add_special=*/true, /*parse_special=*/true);
      }
      if (prompt->empty()) return send_error(res, {400, "the prompt has no tokens"});
      if (int64_t(prompt->size()) >= engine0.n_ctx())
        return send_error(res, {400, fmt::format("the prompt has {} tokens; the context holds {} "
                                                 "(start cke-server with a larger -c)",
                                                 prompt->size(), engine0.n_ctx())});

      std::unique_ptr<SlotPool::Lease> lease = pool_.acquire(*prompt);
      if (!lease) {
        res.set_header("Retry-After", "1");
        return send_error(res, {503,
                                fmt::format("all {} slots are busy and the queue is full; retry "
                                            "later",
                                            pool_.size()),
                                "unavailable_error"});
      }
      const std::string id =
          fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", next_id_.fetch_add(1));
      const int64_t created = unix_now();
      const char* object = chat ? "chat.completion" : "text_completion";
      auto choice = [chat](const std::string& text, const json& finish, bool delta) {
        json c = {{"index", 0}, {"finish_reason", finish}};
        if (!chat) {
          c["text"] = text;
          c["logprobs"] = nullptr;
        } else if (delta) {
          c["delta"] = text.empty() ? json::object() : json{{"content", text}};
        } else {
          c["message"] = {{"role", "assistant"}, {"content", text}};
        }
        return c;
      };

      if (!r->stream) {
        GenerateResult g;
        const bool ok = lease->slot().session->generate(
            *prompt, r->params, [this](int32_t, std::string_view) { return !cancel_.load(); }, &g,
            &err);
        lease.reset();
        if (!ok) return send_error(res, {500, err, "server_error"});
        metrics_.count_generation(g.prompt_tokens - g.cached_tokens, g.prompt_ms,
                                  g.completion_tokens, g.generate_ms);
        const json body = {
            {"id", id},
            {"object", object},
            {"created", created},
            {"model", cfg_.model_id},
            {"choices", json::array({choice(g.text, openai_finish(g.finish), false)})},
            {"usage", usage_json(g)},
            {"timings", timings_json(g)}};
        res.set_content(dump(body), "application/json");
        return;
      }

      // Streaming: the slot is held until the provider has run; a client that goes away
      // cancels the generation at its next token and frees the slot.
      auto held = std::make_shared<std::unique_ptr<SlotPool::Lease>>(std::move(lease));
      auto rq = std::make_shared<CompletionRequest>(std::move(*r));
      res.set_header("Cache-Control", "no-cache");
      auto provide = [this, held, rq, prompt, id, created, chat, choice](size_t,
                                                                         httplib::DataSink& sink) {
        if (!*held) return false;
        const std::string chunk_object = chat ? "chat.completion.chunk" : "text_completion";
        bool alive = true;
        auto send = [&](const json& j) {
          const std::string s = "data: " + dump(j) + "\n\n";
          return alive = alive && sink.write(s.data(), s.size());
        };
        auto chunk = [&](const json& c) {
          return json{{"id", id},
                      {"object", chunk_object},
                      {"created", created},
                      {"model", cfg_.model_id},
                      {"choices", json::array({c})}};
        };
        if (chat) {
          json first = choice("", nullptr, true);
          first["delta"] = {{"role", "assistant"}, {"content", ""}};
          send(chunk(first));
        }
        GenerateResult g;
        std::string err;
        Utf8Holdback whole;  // chunks carry whole characters
        const bool ok = (*held)->slot().session->generate(
            *prompt, rq->params,
            [&](int32_t, std::string_view text) {
              if (cancel_ || !alive || !sink.is_writable()) return alive = false;
              const std::string out = whole.push(text);
              return out.empty() || send(chunk(choice(out, nullptr, true)));
            },
            &g, &err);
        if (const std::string rest = whole.flush(); !rest.empty() && alive)
          send(chunk(choice(rest, nullptr, true)));
        held->reset();  // the slot is free from here on
        metrics_.count_generation(g.prompt_tokens - g.cached_tokens, g.prompt_ms,
                                  g.completion_tokens, g.generate_ms);
        if (!alive && !cancel_) return false;  // the client is gone
        if (!ok) {
          send({{"error", {{"message", err}, {"type", "server_error"}, {"code", 500}}}});
        } else {
          json last = chunk(choice("", openai_finish(g.finish), true));
          last["usage"] = usage_json(g);
          last["timings"] = timings_json(g);
          send(last);
        }
        const std::string done = "data: [DONE]\n\n";
        sink.write(done.data(), done.size());
        sink.done();
        return true;
      };
      // httplib runs the provider outside the handler's exception handling: nothing may
      // escape it (that would end the process).
      res.set_chunked_content_provider("text/event-stream",
                                       [provide, held](size_t offset, httplib::DataSink& sink) {
                                         try {
                                           return provide(offset, sink);
                                         } catch (...) {
                                           held->reset();
                                           return false;
                                         }
                                       });
    };
  };
  s.Post("/v1/chat/completions", completion(true));
  s.Post("/v1/completions", completion(false));
}

}  // namespace cke::server
