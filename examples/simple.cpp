// simple.cpp — embed CKE through its C++ API: an Engine (load, compile) and a Session
// (greedy generation, the text streamed as it comes). Prints what simple.c prints.
//
//   cke-example-simple-cpp MODEL.gguf "Once upon a time" 32
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/chat/generate_session.h"
#include "runtime/core/engine.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf PROMPT [N]\n", argv[0]);
    return 2;
  }
  cke::EngineOptions options;
  options.model_path = argv[1];
  options.n_threads = 1;
  std::string err;
  std::unique_ptr<cke::Engine> engine = cke::Engine::load(options, &err);
  if (!engine) {
    std::fprintf(stderr, "error: %s\n", err.c_str());
    return 1;
  }
  cke::Session session(*engine);
  cke::GenerateParams params;
  params.sampling.temp = 0;  // greedy
  params.max_tokens = argc > 3 ? std::atoi(argv[3]) : 32;
  cke::GenerateResult result;
  std::printf("%s", argv[2]);
  const bool ok = session.generate_text(
      argv[2], params,
      [](int32_t, std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        return true;
      },
      &result, &err);
  std::printf("\n");
  if (!ok) {
    std::fprintf(stderr, "error: %s\n", err.c_str());
    return 1;
  }
  std::fprintf(stderr, "%d prompt tokens, %d generated, finish: %s\n", result.prompt_tokens,
               result.completion_tokens, cke::finish_reason_name(result.finish));
  return 0;
}
