// cke-server's HTTP side: OpenAI-compatible routes over a SlotPool (cpp-httplib).
//
//   POST /v1/chat/completions, POST /v1/completions   (stream: true → Server-Sent Events)
//   GET /v1/models, GET /health, GET /metrics, POST /tokenize, POST /detokenize
//
// Errors are OpenAI's JSON {"error": {"message", "type", "code"}} with 400 (bad request),
// 401 (API key), 404 (route or model), 413 (body too large), 503 (queue full), 500.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/chat/chat_template.h"
#include "runtime/chat/generate_session.h"
#include "runtime/server/metrics.h"
#include "runtime/server/openai_request.h"
#include "runtime/server/openai_response.h"
#include "runtime/server/slot_pool.h"

namespace httplib {
class Server;
struct Request;
struct Response;
class DataSink;
}  // namespace httplib

namespace cke::server {

struct ServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;                   // "": no authentication
  size_t max_body_bytes = 1 << 20;       // larger bodies: 413
  int timeout_s = 600;                   // socket read/write timeout
  std::string model_id;                  // what /v1/models lists
  std::vector<std::string> model_names;  // what a request's "model" may say
  GenerateParams defaults;               // sampling defaults (llama.cpp's)
  size_t http_threads = 8;               // connections served at once
};

class HttpServer {
 public:
  // `scheduler` (optional): whose counters /metrics shows.
  HttpServer(ServerConfig config, SlotPool& pool, std::optional<ChatTemplate> tmpl,
             const BatchScheduler* scheduler = nullptr);
  ~HttpServer();

  // Binds the socket (false and *err when it cannot), then serves until stop().
  bool bind(std::string* err);
  bool serve();
  int port() const { return port_; }
  // Stops accepting; requests in flight run to their end.
  void stop();
  // Makes every generation end at its next token (after the grace time of a shutdown).
  void cancel_all() { cancel_ = true; }

 private:
  void routes();
  std::string render_metrics() const;
  // POST /v1/completions (chat false) and /v1/chat/completions.
  void complete(const httplib::Request& req, httplib::Response& res, bool chat);
  // The request's prompt ids (chat: rendered; its template's stop strings join params.stop).
  bool prompt_of(CompletionRequest& r, std::vector<int32_t>* prompt, HttpError* e);
  // Writes one generation as Server-Sent Events, releasing the slot when it has generated;
  // false when the client went away.
  bool stream(std::unique_ptr<SlotPool::Lease>& lease, const std::vector<int32_t>& prompt,
              const GenerateParams& params, const ResponseHead& head, httplib::DataSink& sink);
  void count(const GenerateResult& g);

  ServerConfig cfg_;
  SlotPool& pool_;
  std::optional<ChatTemplate> tmpl_;
  const BatchScheduler* scheduler_;
  Metrics metrics_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> next_id_{1};
  int port_ = 0;
};

}  // namespace cke::server
