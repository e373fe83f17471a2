// The counters GET /metrics shows, in Prometheus' text format (version 0.0.4).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "runtime/server/batch_scheduler.h"

namespace cke::server {

class Metrics {
 public:
  void count_request(const std::string& endpoint, int status);
  void count_generation(int64_t prompt_tokens, double prompt_ms, int64_t generated_tokens,
                        double generate_ms);
  // The text of /metrics; the gauges are read by the caller at that moment.
  std::string render(size_t slots_busy, size_t slots_total, size_t queued) const;
  // The scheduler's counters (decode steps and their tokens: tokens / steps > 1 is batching).
  static std::string render_scheduler(const BatchScheduler::Stats& s);

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  int64_t prompt_tokens_ = 0, generated_tokens_ = 0;
  double prompt_seconds_ = 0, generate_seconds_ = 0;
};

}  // namespace cke::server
