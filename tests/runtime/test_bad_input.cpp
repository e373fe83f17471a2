// Bad input gets a clear error naming what is wrong and a non-zero exit — never a crash.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "runtime/core/engine.h"
#include "runtime/gguf/gguf.h"
#include "tests/common/shared.h"
#include "tests/runtime/cli_runner.h"

namespace cke {
namespace {

namespace fs = std::filesystem;

// A copy of `src` with metadata and tensors edited by the callbacks.
std::string rewrite(
    const std::string& src, const std::string& name,
    const std::function<bool(std::string_view key, gguf::Writer&, const gguf::Value&)>& kv,
    const std::function<bool(const gguf::TensorInfo&, gguf::Writer&)>& tensor) {
  gguf::GgufError err;
  auto f = gguf::File::open(src, &err);
  EXPECT_TRUE(f) << err.message;
  gguf::Writer w;
  for (const auto& [k, v] : f->metadata())
    if (!kv(k, w, v)) w.add_value(std::string(k), v);
  for (const auto& t : f->tensors())
    if (!tensor(t, w)) {
      std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
      w.add_tensor(std::string(t.name), t.type, ne, {t.data, t.n_bytes});
    }
  const std::string out = (fs::temp_directory_path() / ("cke_bad_" + name + ".gguf")).string();
  EXPECT_TRUE(w.write(out, &err)) << err.message;
  return out;
}

std::string load_error(const std::string& path) {
  EngineOptions o;
  o.model_path = path;
  o.n_threads = 1;
  std::string err;
  auto e = Engine::load(o, &err);
  EXPECT_FALSE(e) << "loaded " << path;
  return err;
}

auto keep_kv = [](std::string_view, gguf::Writer&, const gguf::Value&) { return false; };
auto keep_tensor = [](const gguf::TensorInfo&, gguf::Writer&) { return false; };

TEST(BadModel, UnknownArchitectureNamesTheAvailableCircuits) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  auto path = rewrite(
      src, "arch",
      [](std::string_view k, gguf::Writer& w, const gguf::Value&) {
        if (k != "general.architecture") return false;
        w.add_str("general.architecture", "mamba");
        return true;
      },
      keep_tensor);
  const std::string err = load_error(path);
  EXPECT_NE(err.find("no circuit for architecture 'mamba'"), std::string::npos) << err;
  EXPECT_NE(err.find("available: "), std::string::npos) << err;
  EXPECT_NE(err.find("llama"), std::string::npos) << err;
}

TEST(BadModel, MissingTensorIsNamed) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  auto path = rewrite(src, "missing", keep_kv, [](const gguf::TensorInfo& t, gguf::Writer&) {
    return t.name == "blk.2.attn_k.weight";  // dropped
  });
  const std::string err = load_error(path);
  EXPECT_NE(err.find("blk.2.attn_k.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("llama.yaml"), std::string::npos) << err;  // the circuit that needs it
}

// A file with tensors the circuit does not read is another model than the circuit says:
// here block_count = 3 while blk.3.* and blk.4.* are in the file.
TEST(BadModel, UnreadTensorIsNamed) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  auto path = rewrite(
      src, "unread",
      [](std::string_view k, gguf::Writer& w, const gguf::Value&) {
        if (k != "llama.block_count") return false;
        w.add_u32("llama.block_count", 3);
        return true;
      },
      keep_tensor);
  const std::string err = load_error(path);
  EXPECT_NE(err.find("tensor 'blk.3."), std::string::npos) << err;
  EXPECT_NE(err.find("is not read by circuit"), std::string::npos) << err;
}

// A context the memory cannot hold fails at load, naming the sizes; the same model with a
// limit that holds it loads.
TEST(BadModel, ContextLargerThanMemoryIsAnErrorUpFront) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  EngineOptions o;
  o.model_path = src;
  o.n_threads = 1;
  o.n_ctx = 8192;                  // KV cache: 5 layers x 2 x 32 floats x 8192 cells = 10 MiB
  o.memory_limit_bytes = 4 << 20;  // 4 MiB
  std::string err;
  EXPECT_FALSE(Engine::load(o, &err));
  EXPECT_NE(err.find("stories260K.gguf: needs"), std::string::npos) << err;
  EXPECT_NE(err.find("for a context of 8192 tokens"), std::string::npos) << err;
  EXPECT_NE(err.find("the memory limit is 0.00 GiB; use a smaller -c"), std::string::npos) << err;
  o.memory_limit_bytes = 64 << 20;
  err.clear();
  EXPECT_TRUE(Engine::load(o, &err)) << err;
}

TEST(BadModel, WrongShapeIsNamed) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  auto path = rewrite(src, "shape", keep_kv, [](const gguf::TensorInfo& t, gguf::Writer& w) {
    if (t.name != "blk.1.ffn_up.weight") return false;
    // [64, 172] stored as [64, 170]: the bytes of 170 rows.
    w.add_tensor(std::string(t.name), t.type, {64, 170}, {t.data, size_t(64 * 170 * 4)});
    return true;
  });
  const std::string err = load_error(path);
  EXPECT_NE(err.find("blk.1.ffn_up.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("170"), std::string::npos) << err;
}

TEST(BadModel, WrongTypeHasNoProvider) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  // A norm weight stored as F16: no rmsnorm provider takes an f16 weight.
  auto path = rewrite(src, "type", keep_kv, [](const gguf::TensorInfo& t, gguf::Writer& w) {
    if (t.name != "blk.0.attn_norm.weight") return false;
    std::vector<uint16_t> h(64, 0x3c00);
    w.add_tensor(std::string(t.name), DType::F16, {64},
                 {reinterpret_cast<const uint8_t*>(h.data()), h.size() * 2});
    return true;
  });
  const std::string err = load_error(path);
  EXPECT_NE(err.find("attn_norm"), std::string::npos) << err;
  EXPECT_NE(err.find("f16"), std::string::npos) << err;
}

// Mixtures of experts: expert counts the file's tensors or llama.cpp's loader disagree with
// are load errors naming the key or the tensor (circuits/qwen3moe.yaml, llama.moe.yaml).
std::function<bool(std::string_view, gguf::Writer&, const gguf::Value&)> set_u32(std::string key,
                                                                                 uint32_t v) {
  return [key, v](std::string_view k, gguf::Writer& w, const gguf::Value&) {
    if (k != key) return false;
    w.add_u32(key, v);
    return true;
  };
}

// A key the circuit reads that holds an array or an integer past int64 is an error naming
// the key, never "absent, use the default" (which would run another model than the file's).
TEST(BadModel, UnreadableKeyIsNamed) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  struct Case {
    const char* name;
    std::function<void(gguf::Writer&)> write;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"array",
       [](gguf::Writer& w) {
         w.add_i32_array("llama.rope.dimension_count", {16, 16, 16});
       },
       "metadata key 'llama.rope.dimension_count' is an array of 3 values"},
      {"u64", [](gguf::Writer& w) { w.add_u64("llama.rope.dimension_count", ~uint64_t(0)); },
       "metadata key 'llama.rope.dimension_count' is 18446744073709551615 (past int64)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = rewrite(
        src, std::string("unreadable_") + c.name,
        [&](std::string_view k, gguf::Writer& w, const gguf::Value&) {
          if (k != "llama.rope.dimension_count") return false;
          c.write(w);
          return true;
        },
        keep_tensor);
    const std::string err = load_error(path);
    EXPECT_NE(err.find(c.want), std::string::npos) << err;
  }
}

TEST(BadModel, ExpertCountsNameTheKey) {
  CKE_REQUIRE_SHARED(qwen, "models/synthetic/synth-qwen3moe-Q8_0.gguf");
  CKE_REQUIRE_SHARED(llama, "models/synthetic/synth-llamamoe-Q8_0.gguf");
  struct Case {
    std::string src, key;
    uint32_t value;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      // more experts used than there are
      {qwen,
       "qwen3moe.expert_used_count",
       5,
       {"qwen3moe.expert_used_count", "n_used = 5", "n_expert = 4"}},
      {qwen, "qwen3moe.expert_used_count", 0, {"qwen3moe.expert_used_count", "n_used = 0"}},
      {llama, "llama.expert_used_count", 6, {"llama.expert_used_count", "llama.moe.yaml"}},
      {llama, "llama.expert_used_count", 0, {"llama.expert_used_count", "n_used = 0"}},
      // an expert count the expert tensors disagree with: the tensor is named
      {qwen, "qwen3moe.expert_count", 8, {"blk.0.ffn_gate_inp.weight", "[256, 4]", "[256, 8]"}},
      {llama, "llama.expert_count", 3, {"ffn_gate_exps.weight", "[256, 128, 4]", "[256, 128, 3]"}},
      // a count past llama.cpp's LLAMA_MAX_EXPERTS
      {qwen, "qwen3moe.expert_count", 600, {"qwen3moe.expert_count", "n_expert = 600"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key + " = " + std::to_string(c.value));
    const std::string path =
        rewrite(c.src, "moe_" + std::to_string(c.value), set_u32(c.key, c.value), keep_tensor);
    const std::string err = load_error(path);
    for (const std::string& w : c.want) EXPECT_NE(err.find(w), std::string::npos) << err;
  }
}

TEST(BadModel, ExpertTensorShapeIsNamed) {
  CKE_REQUIRE_SHARED(src, "models/synthetic/synth-qwen3moe-F32.gguf");
  // blk.1.ffn_up_exps with 3 experts where expert_count says 4.
  auto path = rewrite(src, "moe_shape", keep_kv, [](const gguf::TensorInfo& t, gguf::Writer& w) {
    if (t.name != "blk.1.ffn_up_exps.weight") return false;
    w.add_tensor(std::string(t.name), t.type, {256, 128, 3}, {t.data, size_t(256 * 128 * 3 * 4)});
    return true;
  });
  const std::string err = load_error(path);
  EXPECT_NE(err.find("blk.1.ffn_up_exps.weight"), std::string::npos) << err;
  EXPECT_NE(err.find("[256, 128, 3]"), std::string::npos) << err;
  EXPECT_NE(err.find("the circuit expects [256, 128, 4]"), std::string::npos) << err;
}

// A llama file is the dense circuit's or the experts' by llama.expert_count: a negative count
// is neither's, and the error names both circuits and the value they saw.
TEST(BadModel, NoCircuitOfTheArchitectureSelectsTheModel) {
  CKE_REQUIRE_SHARED(src, "models/synthetic/synth-llamamoe-Q8_0.gguf");
  auto path = rewrite(
      src, "moe_negative",
      [](std::string_view k, gguf::Writer& w, const gguf::Value&) {
        if (k != "llama.expert_count") return false;
        w.add_i32("llama.expert_count", -2);
        return true;
      },
      keep_tensor);
  const std::string err = load_error(path);
  EXPECT_NE(err.find("no circuits of architecture 'llama' describe this model"), std::string::npos)
      << err;
  EXPECT_NE(err.find("llama.yaml: select 'n_expert == 0' is false"), std::string::npos) << err;
  EXPECT_NE(err.find("llama.moe.yaml: select 'n_expert > 0' is false"), std::string::npos) << err;
  EXPECT_NE(err.find("n_expert = -2 (llama.expert_count)"), std::string::npos) << err;
}

TEST(BadModel, NotAFileOrTruncated) {
  EXPECT_NE(load_error("/nonexistent/model.gguf").find("/nonexistent/model.gguf"),
            std::string::npos);
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  const std::string cut = (fs::temp_directory_path() / "cke_bad_cut.gguf").string();
  fs::copy_file(src, cut, fs::copy_options::overwrite_existing);
  fs::resize_file(cut, 100000);
  const std::string err = load_error(cut);
  EXPECT_NE(err.find("cke_bad_cut.gguf"), std::string::npos) << err;
}

TEST(BadEval, PromptLongerThanContext) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  EngineOptions o;
  o.model_path = src;
  o.n_ctx = 8;
  o.n_threads = 1;
  std::string err;
  auto e = Engine::load(o, &err);
  ASSERT_TRUE(e) << err;
  std::vector<int32_t> ids(9, 300);
  std::vector<float> logits;
  EXPECT_FALSE(e->eval(ids, &logits, false, &err));
  EXPECT_NE(err.find("context"), std::string::npos) << err;
  EXPECT_EQ(e->pos(), 0);
  ids = {1, 600};
  EXPECT_FALSE(e->eval(ids, &logits, false, &err));
  EXPECT_NE(err.find("600"), std::string::npos) << err;
}

// cke-bench --decode-prefetch: "on" / "off" replace the host's probed choice (the trace
// records what the plan used), any other value is an error naming the flag.
TEST(BadOption, DecodePrefetchOverridesTheHostOrIsNamed) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  for (const char* v : {"on", "off"}) {
    EngineOptions o;
    o.model_path = src;
    o.n_threads = 1;
    o.decode_prefetch = v;
    std::string err;
    auto e = Engine::load(o, &err);
    ASSERT_TRUE(e) << err;
    EXPECT_EQ(e->trace()["host"]["decode_stream_prefetch"].get<bool>(), std::string(v) == "on")
        << v;
  }
  EngineOptions o;
  o.model_path = src;
  o.n_threads = 1;
  o.decode_prefetch = "sometimes";
  std::string err;
  EXPECT_FALSE(Engine::load(o, &err));
  EXPECT_NE(err.find("--decode-prefetch: 'sometimes'"), std::string::npos) << err;
}

TEST(BadCli, FlagValuesAreRejectedWithUsageErrors) {
  CKE_REQUIRE_SHARED(src, "models/stories260K.gguf");
  const std::string m = "-m " + src + " -p hi -n 1 ";
  for (const char* bad : {"-t -3", "--temp abc", "-c -1", "--top-p 2", "--prompt-tokens 1,x,3",
                          "--force-tokens -5", "--no-such-flag", "-n"}) {
    test::CliResult r = test::run_cli(m + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_FALSE(r.out.empty()) << bad;
  }
  // Float flags take finite numbers only (CLI11's range check alone lets "nan" through).
  for (const char* bad : {"--temp nan", "--top-p NaN", "--min-p nan", "--repeat-penalty inf",
                          "--frequency-penalty nan", "--temp 1e999", "--temp 0.5x"}) {
    test::CliResult r = test::run_cli(m + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_NE(r.out.find("is not a finite number"), std::string::npos) << bad << ": " << r.out;
  }
  test::CliResult r = test::run_cli(m + "--isa avx9");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("avx9"), std::string::npos) << r.out;
  r = test::run_cli("-m /nonexistent.gguf -p hi");
  EXPECT_EQ(r.code, 1) << r.out;
  r = test::run_cli("-m " + src + " -n 1 -c 4 -p \"Once upon a time there was\"");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("context"), std::string::npos) << r.out;
  r = test::run_cli(m + "--prompt-tokens 1,9999");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("9999"), std::string::npos) << r.out;
  // llama-cli's -ngl: named, not read as -n with the value "gl".
  r = test::run_cli(m + "-ngl 99");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cke-run: unknown flag -ngl:"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace cke
