// cke-gguf: inspect, quantize and synthesize GGUF files.
//
//   cke-gguf info FILE
//   cke-gguf quantize IN OUT TYPE
//   cke-gguf synth --preset NAME [--arch ARCH] [--dims k=v,...] [--type T]
//                  [--vocab-from FILE] [--seed N] -o OUT
//
// synth writes a random-weight model of any architecture CKE has a circuit for (llama, with
// or without experts, qwen2, qwen3, gemma3, glm4, nemotron, qwen3moe) at a preset's shape:
// tiny (each family's shared/models/synthetic shape), tinyllama-1.1b, qwen2.5-0.5b,
// qwen3-0.6b, gemma3-1b, glm4-9b(-l4), nemotron-mini-4b(-l4), qwen3-30b-a3b, mixtral-8x7b.
// --arch replaces the preset's family; --dims overrides fields and is checked against the
// family (see runtime/gguf/synth.h, docs/gguf.md).
//
// Exit codes: 0 ok, 1 bad input (message on stderr), 2 bad usage.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "runtime/gguf/gguf.h"
#include "runtime/gguf/inspect.h"
#include "runtime/gguf/quantize.h"
#include "runtime/gguf/synth.h"
#include "runtime/gguf/synth_family.h"

namespace {

using namespace cke;
using namespace cke::gguf;

constexpr int kOk = 0, kBadInput = 1, kBadUsage = 2;

int usage_error(const std::string& msg) {
  fmt::print(stderr, "cke-gguf: {}\n", msg);
  return kBadUsage;
}
int input_error(const std::string& msg) {
  fmt::print(stderr, "cke-gguf: {}\n", msg);
  return kBadInput;
}

void note(const std::string& s) {
  fmt::print(stderr, "note: {}\n", s);
}

std::optional<DType> parse_type(const std::string& s, std::string* why) {
  auto t = dtype_from_name(s);
  if (!t || !is_quantize_target(*t)) {
    *why = "unsupported type '" + s +
           "' (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_K, q3_K, q4_K, q5_K, q6_K)";
    return std::nullopt;
  }
  return t;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run_info(const std::string& path, size_t items) {
  GgufError err;
  auto f = File::open(path, &err);
  if (!f) return input_error(err.message);
  InfoOptions opt;
  opt.max_array_items = items;
  print_info(*f, stdout, opt);
  return kOk;
}

int run_quantize(const std::string& in, const std::string& out, const std::string& type_name) {
  std::string why;
  auto type = parse_type(type_name, &why);
  if (!type) return usage_error(why);
  GgufError err;
  auto f = File::open(in, &err);
  if (!f) return input_error(err.message);
  const auto t0 = std::chrono::steady_clock::now();
  if (!quantize_file(*f, out, *type, &err, note)) return input_error(err.message);
  fmt::print(stderr, "wrote {} ({}, {} tensors) in {:.2f} s\n", out, dtype_name(*type),
             f->tensors().size(), seconds_since(t0));
  return kOk;
}

struct SynthArgs {
  std::string arch, preset, dims, type = "f32", vocab, out;
  uint64_t seed = 0;
};

int run_synth(const SynthArgs& a) {
  std::string why;
  auto c = synth_preset(a.preset, a.arch, &why);
  if (!c) return usage_error(why);
  c->seed = a.seed;
  auto type = parse_type(a.type, &why);
  if (!type) return usage_error(why);
  c->type = *type;
  if (!synth_apply_dims(&*c, a.dims, &why)) return input_error(why);
  GgufError err;
  std::unique_ptr<File> vocab;
  if (!a.vocab.empty()) {
    vocab = File::open(a.vocab, &err);
    if (!vocab) return input_error(err.message);
  } else {
    note("no --vocab-from: using the built-in 354-token byte-level vocabulary");
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (!synth_write(*c, vocab.get(), a.out, &err, note)) return input_error(err.message);
  fmt::print(stderr, "wrote {} ({}, {} preset, {}, seed {}) in {:.2f} s\n", a.out, c->arch,
             a.preset, dtype_name(c->type), a.seed, seconds_since(t0));
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cke-gguf: inspect, quantize and synthesize GGUF files"};
  app.require_subcommand(1);

  std::string info_file;
  size_t items = 8;
  auto* info = app.add_subcommand("info", "print header, metadata, tensor table and totals");
  info->add_option("FILE", info_file, "GGUF file")->required();
  info->add_option("--items", items, "array items to show (default 8)");

  std::string q_in, q_out, q_type;
  auto* quant = app.add_subcommand("quantize", "re-encode weight matrices as TYPE");
  quant->add_option("IN", q_in, "input GGUF")->required();
  quant->add_option("OUT", q_out, "output GGUF")->required();
  quant->add_option("TYPE", q_type, "target type (q4_0, q8_0, q4_K, f16, ...)")->required();

  SynthArgs s;
  auto* synth = app.add_subcommand("synth", "write a random-weight model with a real tokenizer");
  synth->add_option("--arch", s.arch,
                    "architecture: " + synth_arch_list() +
                        " (llama with --dims n_expert=.. has experts; default: the preset's)");
  synth->add_option("--preset", s.preset, synth_preset_list())->required();
  synth->add_option("--dims", s.dims,
                    "overrides: n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx, head_dim, n_rot, "
                    "n_expert, n_expert_used, n_ff_exp, n_swa, swa_pattern, tied (0|1), "
                    "norm_eps, rope_base, rope_base_swa as k=v,k=v");
  synth->add_option("--type", s.type, "matrix type (default f32)");
  synth->add_option("--vocab-from", s.vocab,
                    "GGUF whose tokenizer.* keys are copied (default: a built-in byte vocabulary)");
  synth->add_option("--seed", s.seed, "PRNG seed (default 0)");
  synth->add_option("-o,--output", s.out, "output GGUF")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error
    return code == 0 ? kOk : kBadUsage;
  }
  if (*info) return run_info(info_file, items);
  if (*quant) return run_quantize(q_in, q_out, q_type);
  if (*synth) return run_synth(s);
  return kBadUsage;
}
