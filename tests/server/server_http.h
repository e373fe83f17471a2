// What the cke-server tests read from a server over HTTP: the events of a Server-Sent Events
// body, numbers from /metrics, and a logit_bias that bans the model's EOS.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/core/engine.h"

namespace cke::test {

// Server-Sent Events: the JSON of each `data:` line, and whether [DONE] closed the stream.
struct Sse {
  std::vector<nlohmann::json> chunks;
  bool done = false;
  bool well_formed = true;
};

inline Sse parse_sse(const std::string& body) {
  Sse s;
  size_t at = 0;
  while (at < body.size()) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) {
      s.well_formed = false;
      break;
    }
    const std::string ev = body.substr(at, end - at);
    at = end + 2;
    if (ev.rfind("data: ", 0) != 0 || s.done) {
      s.well_formed = false;
      continue;
    }
    if (ev == "data: [DONE]") {
      s.done = true;
      continue;
    }
    s.chunks.push_back(nlohmann::json::parse(ev.substr(6), nullptr, false));
  }
  return s;
}

// A number from /metrics (the first line starting with `name`, labels included), -1 if
// absent.
inline double metric(httplib::Client& c, const std::string& name) {
  auto r = c.Get("/metrics");
  if (!r || r->status != 200) return -1;
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  return -1;
}

// The model's EOS id as a logit_bias key: banned, a greedy generation runs to max_tokens.
inline nlohmann::json ban_eos(const std::string& model_path) {
  EngineOptions o;
  o.model_path = model_path;
  std::string err;
  auto e = Engine::load(o, &err);
  EXPECT_TRUE(e) << err;
  return nlohmann::json{{std::to_string(e ? e->tokenizer().eos() : 2), -100}};
}

}  // namespace cke::test
