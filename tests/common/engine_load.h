// Engine::load for tests: an EXPECT failure with the error when the model does not load.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "runtime/core/engine.h"

namespace cke::test {

inline std::unique_ptr<Engine> load_engine(const EngineOptions& o) {
  std::string err;
  auto e = Engine::load(o, &err);
  EXPECT_TRUE(e) << o.model_path << ": " << err;
  return e;
}

// The model at `path` with a context of n_ctx and one thread (tests compare bits, not speed).
inline std::unique_ptr<Engine> load_engine(const std::string& path, int32_t n_ctx,
                                           int32_t n_threads = 1) {
  EngineOptions o;
  o.model_path = path;
  o.n_ctx = n_ctx;
  o.n_threads = n_threads;
  return load_engine(o);
}

}  // namespace cke::test
