// cke-tokenize -m MODEL.gguf (-p TEXT | -f FILE) [--no-bos] [--parse-special] [--pieces]
//
// Prints the token ids of the text on one line, separated by spaces. BOS (and EOS) are
// added as the vocab says unless --no-bos; --parse-special turns control-token texts such
// as "<|im_start|>" into their ids (llama-tokenize does that by default; we follow
// llama_tokenize's parse_special = false default). --file reads the text byte for byte.
// Exit status: 0 ok, 1 bad model or input file, 2 bad command line.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "runtime/gguf/gguf.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/vocab_gguf.h"

int main(int argc, char** argv) {
  CLI::App app{"Tokenize text with a GGUF model's tokenizer; prints the token ids."};
  std::string model_path, prompt, file_path;
  bool no_bos = false, parse_special = false, pieces = false;
  app.add_option("-m,--model", model_path, "GGUF model or vocab file")->required();
  auto* p = app.add_option("-p,--prompt", prompt, "text to tokenize");
  auto* f = app.add_option("-f,--file", file_path, "read the text from this file (raw bytes)");
  p->excludes(f);
  app.add_flag("--no-bos", no_bos, "do not add BOS/EOS even if the vocab asks for them");
  app.add_flag("--parse-special", parse_special, "match control tokens written in the text");
  app.add_flag("--pieces", pieces, "print one 'id<TAB>piece' line per token instead");
  try {
    app.parse(argc, argv);
    if (p->count() == 0 && f->count() == 0) {
      throw CLI::RequiredError("one of --prompt or --file");
    }
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  if (f->count() > 0) {
    std::ifstream in(file_path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cke-tokenize: cannot read '%s'\n", file_path.c_str());
      return 1;
    }
    prompt.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) {
      std::fprintf(stderr, "cke-tokenize: error reading '%s'\n", file_path.c_str());
      return 1;
    }
  }

  cke::gguf::GgufError gerr;
  const auto file = cke::gguf::File::open(model_path, &gerr);
  if (!file) {
    std::fprintf(stderr, "cke-tokenize: %s\n", gerr.message.c_str());
    return 1;
  }
  std::string err;
  auto vocab = cke::vocab_from_gguf(*file, &err);
  if (!vocab) {
    std::fprintf(stderr, "cke-tokenize: %s\n", err.c_str());
    return 1;
  }
  const auto tok = cke::Tokenizer::create(std::move(*vocab), &err);
  if (!tok) {
    std::fprintf(stderr, "cke-tokenize: %s: %s\n", model_path.c_str(), err.c_str());
    return 1;
  }

  const std::vector<int32_t> ids = tok->encode(prompt, !no_bos, parse_special);
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (pieces) {
      out += std::to_string(ids[i]) + "\t" + tok->token_to_piece(ids[i], true) + "\n";
    } else {
      if (i) out += ' ';
      out += std::to_string(ids[i]);
    }
  }
  if (!pieces) out += '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
