#include "runtime/server/metrics.h"

#include <fmt/format.h>

namespace cke::server {

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::count_generation(int64_t prompt_tokens, double prompt_ms, int64_t generated_tokens,
                               double generate_ms) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += prompt_tokens;
  generated_tokens_ += generated_tokens;
  prompt_seconds_ += prompt_ms / 1e3;
  generate_seconds_ += generate_ms / 1e3;
}

std::string Metrics::render(size_t slots_busy, size_t slots_total, size_t queued) const {
  std::lock_guard lock(mu_);
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  metric("cke_requests_total", "counter", "HTTP requests by endpoint and status.");
  for (const auto& [key, n] : requests_)
    out += fmt::format("cke_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n", key.first,
                       key.second, n);
  metric("cke_prompt_tokens_total", "counter", "Prompt tokens evaluated.");
  out += fmt::format("cke_prompt_tokens_total {}\n", prompt_tokens_);
  metric("cke_generated_tokens_total", "counter", "Tokens generated.");
  out += fmt::format("cke_generated_tokens_total {}\n", generated_tokens_);
  metric("cke_prompt_seconds_total", "counter", "Time spent evaluating prompts.");
  out += fmt::format("cke_prompt_seconds_total {:.6f}\n", prompt_seconds_);
  metric("cke_generation_seconds_total", "counter", "Time spent generating.");
  out += fmt::format("cke_generation_seconds_total {:.6f}\n", generate_seconds_);
  metric("cke_prompt_tokens_per_second", "gauge", "Prompt tokens per second, over all requests.");
  out += fmt::format("cke_prompt_tokens_per_second {:.3f}\n",
                     prompt_seconds_ > 0 ? double(prompt_tokens_) / prompt_seconds_ : 0.0);
  metric("cke_generation_tokens_per_second", "gauge",
         "Generated tokens per second of one slot, over all requests.");
  out += fmt::format("cke_generation_tokens_per_second {:.3f}\n",
                     generate_seconds_ > 0 ? double(generated_tokens_) / generate_seconds_ : 0.0);
  metric("cke_queue_length", "gauge", "Requests waiting for a slot.");
  out += fmt::format("cke_queue_length {}\n", queued);
  metric("cke_slots_busy", "gauge", "Slots generating.");
  out += fmt::format("cke_slots_busy {}\n", slots_busy);
  metric("cke_slots_total", "gauge", "Slots (--parallel).");
  out += fmt::format("cke_slots_total {}\n", slots_total);
  return out;
}

std::string Metrics::render_scheduler(const BatchScheduler::Stats& s) {
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, int64_t v) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, v);
  };
  metric("cke_decode_steps_total", "counter", "Decode steps (plan calls of the slots' tokens).",
         s.decode_calls);
  metric("cke_decode_step_tokens_total", "counter", "Tokens those steps evaluated.",
         s.decode_tokens);
  metric("cke_decode_batched_steps_total", "counter",
         "Decode steps of two or more slots' tokens (one batched plan call).", s.batched_calls);
  metric("cke_decode_batch_max", "gauge", "The most tokens of one decode step.", s.max_batch);
  metric("cke_prefill_chunks_total", "counter", "Prompt chunks evaluated between decode steps.",
         s.prefill_chunks);
  return out;
}

}  // namespace cke::server
