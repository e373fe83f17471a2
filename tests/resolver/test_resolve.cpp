// The resolver's stages, faults and bindings, on fixture maps and synthetic hosts.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "resolver/xray.h"
#include "resolver_test_util.h"

namespace cke {
namespace {

using test::find_candidate;
using test::linear_contract;
using test::linear_map;
using test::MapSpec;

const ResolveOptions kDecode{.allow_candidate = false, .phases = {Phase::Decode}};
const ResolveOptions kPrefill{.allow_candidate = false, .phases = {Phase::Prefill}};

// Paths and hashes differ between checkouts; the decisions must not.
nlohmann::json normalised(nlohmann::json j) {
  for (auto& p : j["provenance"]) {
    p["file"] = std::filesystem::path(p["file"].get<std::string>()).filename().string();
    p["sha256"] = "<sha256>";
  }
  return j;
}

struct Seed {
  Registry reg;
  Graph graph;
};

Seed load_seed() {
  std::vector<LoadError> errors;
  std::optional<Registry> reg =
      Registry::load({test::fixtures("seed/maps")}, test::fake_linear_symbols(), &errors);
  EXPECT_TRUE(reg) << format_errors(errors);
  std::optional<Circuit> c = load_circuit(test::fixtures("seed/circuits/seed.yaml"), &errors);
  EXPECT_TRUE(c) << format_errors(errors);
  MapModelFacts facts;
  facts.set_key("seed.k", int64_t{64});
  facts.set_key("seed.n", int64_t{32});
  facts.set_tensor("w.weight", {DType::Q4_0, {64, 32}});
  std::optional<Graph> g = instantiate(*c, facts, {256, 32}, &errors);
  EXPECT_TRUE(g) << format_errors(errors);
  return {std::move(*reg), std::move(*g)};
}

// The seed's evidence: priority 900 (candidate), 800 (prefill only), 700 (q8_0 weights)
// all lose to the compatible 100, because the filters run before priority is consulted.
TEST(Resolve, SeedEvidenceHighestPriorityLoses) {
  Seed s = load_seed();
  const HostCaps caps = HostCaps::synthetic({});
  Resolution r = resolve(s.graph, s.reg, caps, kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  ASSERT_EQ(r.decisions.size(), 1u);
  const Decision& d = r.decisions[0];
  EXPECT_EQ(d.contract, "linear.anyw.seed");
  EXPECT_EQ(d.winner, "seed_p100");
  ASSERT_EQ(d.candidates.size(), 4u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"seed_p900", "status_not_production:candidate"},
      {"seed_p800", "phase_unsupported"},
      {"seed_p700", "dtype_mismatch:w"},
      {"seed_p100", ""}};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(d.candidates[i].id, want[i].first);
    EXPECT_EQ(d.candidates[i].reason, want[i].second);
    EXPECT_EQ(d.candidates[i].eligible, want[i].second.empty());
  }
  EXPECT_TRUE(d.candidates[3].winner);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].provider->id, "seed_p100");

  // The trace, against the checked-in expectation.
  nlohmann::json trace = normalised(xray_trace(r, s.graph, s.reg, caps, kDecode));
  const std::string golden = test::fixtures("seed/expected_trace.json");
  if (std::getenv("CKE_UPDATE_GOLDEN")) std::ofstream(golden) << trace.dump(2) << "\n";
  std::ifstream in(golden);
  ASSERT_TRUE(in) << golden;
  nlohmann::json expected = nlohmann::json::parse(in);
  EXPECT_EQ(trace, expected) << trace.dump(2);
}

TEST(Resolve, TraceIsVersionedAndComplete) {
  Seed s = load_seed();
  const HostCaps caps = *HostCaps::for_level("avx2");
  Resolution r = resolve(s.graph, s.reg, caps);
  nlohmann::json t = xray_trace(r, s.graph, s.reg, caps, {});
  EXPECT_EQ(t["schema"], "cke.xray/1");
  ASSERT_EQ(t["decisions"].size(), 2u);  // prefill and decode
  EXPECT_EQ(t["decisions"][0]["query"]["phase"], "prefill");
  // In prefill the 800 (prefill-only, production) outranks the 100.
  EXPECT_EQ(t["decisions"][0]["winner"], "seed_p800");
  EXPECT_EQ(t["decisions"][1]["winner"], "seed_p100");
  EXPECT_EQ(t["decisions"][0]["query"]["ports"]["x"]["shape"], nlohmann::json({64, "T"}));
  EXPECT_EQ(t["decisions"][1]["query"]["ports"]["x"]["shape"], nlohmann::json({64, 1}));
  EXPECT_EQ(t["decisions"][0]["query"]["caps"], nlohmann::json({"avx2", "fma", "f16c"}));
  EXPECT_EQ(t["provenance"].size(), 6u);  // circuit + contract + 4 maps
  EXPECT_EQ(t["provenance"][0]["kind"], "circuit");
  EXPECT_EQ(t["provenance"][0]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(t["decisions"][1]["candidates"][3]["rank_key"], nlohmann::json({2, 100}));
}

// A one-node linear world: maps, contracts and circuit as text.
struct World {
  Registry reg;
  Graph graph;
};

World world(const std::vector<std::string>& maps, const std::vector<std::string>& contracts,
            int64_t K = 64, int64_t N = 32, DType w = DType::Q4_0, const std::string& profile = "t",
            bool in_place = false) {
  MapModelFacts facts = test::linear_facts(K, N, w);
  return {test::build_ok(maps, contracts),
          test::graph_ok(test::linear_circuit(profile, in_place), facts)};
}

const std::string kQ4 = linear_contract("linear.q4_0.t", "q4_0", "lin_a");

TEST(Resolve, EqualTopPriorityIsAFault) {
  World w = world({linear_map({}), linear_map({.id = "lin_b"})}, {kQ4});
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_FALSE(r.ok());
  const Decision& d = r.decisions[r.faults[0]];
  EXPECT_EQ(d.fault, "tie");
  EXPECT_TRUE(d.winner.empty());
  EXPECT_TRUE(r.steps.empty());
  EXPECT_NE(d.message.find("lin_a"), std::string::npos);
  EXPECT_NE(d.message.find("lin_b"), std::string::npos);
  EXPECT_NE(d.message.find("distinct priorities"), std::string::npos) << d.message;
  // A tie below the top is fine.
  World w2 = world({linear_map({.priority = 50}), linear_map({.id = "lin_b", .priority = 50}),
                    linear_map({.id = "lin_c", .priority = 60})},
                   {kQ4});
  Resolution r2 = resolve(w2.graph, w2.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_TRUE(r2.ok()) << r2.fault_report();
  EXPECT_EQ(r2.decisions[0].winner, "lin_c");
}

TEST(Resolve, DifferentContractsNeverCompete) {
  // A q8_0-contract provider at 900 and an exact-profile q4_0 provider at 800 are never in
  // the q4_0/t query's ranking, whatever their priority.
  World w = world(
      {linear_map({}),
       linear_map({.id = "lin_q8", .contract = "linear.q8_0.t", .priority = 900, .wdtype = "q8_0"}),
       linear_map({.id = "lin_exact", .contract = "linear.q4_0.exact", .priority = 800})},
      {kQ4, linear_contract("linear.q8_0.t", "q8_0", "lin_q8"),
       linear_contract("linear.q4_0.exact", "q4_0", "lin_exact", "exact")});
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  const Decision& d = r.decisions[0];
  EXPECT_EQ(d.contract, "linear.q4_0.t");
  EXPECT_EQ(d.winner, "lin_a");
  EXPECT_EQ(find_candidate(d, "lin_q8")->reason, "contract_mismatch");
  EXPECT_EQ(find_candidate(d, "lin_q8")->stage, Stage::Contract);
  EXPECT_EQ(find_candidate(d, "lin_exact")->reason, "contract_mismatch");
  // The circuit's profile picks the other contract.
  World e =
      world({linear_map({}),
             linear_map({.id = "lin_exact", .contract = "linear.q4_0.exact", .priority = 800})},
            {kQ4, linear_contract("linear.q4_0.exact", "q4_0", "lin_exact", "exact")}, 64, 32,
            DType::Q4_0, "exact");
  Resolution re = resolve(e.graph, e.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_TRUE(re.ok()) << re.fault_report();
  EXPECT_EQ(re.decisions[0].winner, "lin_exact");
}

TEST(Resolve, NoContractAndAmbiguousContract) {
  World w = world({linear_map({})}, {kQ4}, 64, 32, DType::Q8_0);
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_FALSE(r.ok());
  const Decision& d = r.decisions[0];
  EXPECT_EQ(d.fault, "no_contract");
  EXPECT_NE(d.message.find("linear.q4_0.t: port w: q4_0 (query q8_0)"), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("hint: add a contract"), std::string::npos);
  // Two contracts for the same (op, variant, profile, dtypes).
  World a = world({linear_map({}), linear_map({.id = "lin_any", .contract = "linear.any.t"})},
                  {kQ4, linear_contract("linear.any.t", "any", "lin_any")});
  Resolution ra = resolve(a.graph, a.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_FALSE(ra.ok());
  EXPECT_EQ(ra.decisions[0].fault, "ambiguous_contract");
  EXPECT_EQ(ra.decisions[0].contract_matches,
            (std::vector<std::string>{"linear.any.t", "linear.q4_0.t"}));
}

TEST(Resolve, ZeroCandidatesListsEveryRejection) {
  World w = world({linear_map({.status = "candidate", .priority = 300}),
                   linear_map({.id = "lin_b", .status = "diagnostic", .priority = 200}),
                   linear_map({.id = "lin_c", .phases = "[prefill]"}),
                   linear_map({.id = "lin_d", .priority = 50, .isa = "[avx512f]"})},
                  {kQ4});
  Resolution r = resolve(w.graph, w.reg, *HostCaps::for_level("avx2"), kDecode);
  ASSERT_FALSE(r.ok());
  const Decision& d = r.decisions[0];
  EXPECT_EQ(d.fault, "no_provider");
  for (const char* s :
       {"lin_a", "status_not_production:candidate", "lin_b", "status_not_production:diagnostic",
        "lin_c", "phase_unsupported", "lin_d", "isa_unsupported:avx512f"})
    EXPECT_NE(d.message.find(s), std::string::npos) << s << "\n" << d.message;
  // The closest got furthest through the stages: lin_d reached the isa stage.
  EXPECT_NE(d.message.find("closest: lin_d (rejected at the isa stage"), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("hint:"), std::string::npos);
  EXPECT_NE(d.message.find("node proj (op linear, phase decode)"), std::string::npos) << d.message;
}

TEST(Resolve, CandidatesOnlyOnOptIn) {
  World w = world({linear_map({.status = "candidate", .priority = 900}),
                   linear_map({.id = "lin_b", .priority = 100})},
                  {kQ4});
  ResolveOptions opt = kDecode;
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), opt);
  EXPECT_EQ(r.decisions[0].winner, "lin_b");
  opt.allow_candidate = true;
  // Still: production outranks a candidate of higher priority.
  r = resolve(w.graph, w.reg, HostCaps::synthetic({}), opt);
  EXPECT_EQ(r.decisions[0].winner, "lin_b");
  EXPECT_TRUE(find_candidate(r.decisions[0], "lin_a")->eligible);
  // A candidate alone wins only with the opt-in.
  World c = world({linear_map({.status = "candidate"})}, {kQ4});
  EXPECT_FALSE(resolve(c.graph, c.reg, HostCaps::synthetic({}), kDecode).ok());
  EXPECT_EQ(resolve(c.graph, c.reg, HostCaps::synthetic({}), opt).decisions[0].winner, "lin_a");
}

TEST(Resolve, AmxRejectedUnderAvx512CapSelectedWithout) {
  World w = world(
      {linear_map({.priority = 100}),
       linear_map({.id = "lin_amx", .priority = 500, .isa = "[avx512f, amx_int8, amx_tile]"})},
      {kQ4});
  const HostCaps amx_host = HostCaps::synthetic(FeatureSet::all());
  std::string err;
  const HostCaps capped = *amx_host.cap("avx512", &err);
  Resolution r = resolve(w.graph, w.reg, capped, kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.decisions[0].winner, "lin_a");
  const Candidate* amx = find_candidate(r.decisions[0], "lin_amx");
  EXPECT_EQ(amx->reason, "isa_unsupported:amx_int8");
  EXPECT_EQ(amx->stage, Stage::Isa);
  EXPECT_NE(amx->detail.find("amx_int8, amx_tile"), std::string::npos) << amx->detail;
  Resolution r2 = resolve(w.graph, w.reg, amx_host, kDecode);
  EXPECT_EQ(r2.decisions[0].winner, "lin_amx");
}

TEST(Resolve, ShapePredicateRejection) {
  World w = world({linear_map({}),
                   linear_map({.id = "lin_k64", .priority = 500, .shape = "[\"K % 64 == 0\"]"})},
                  {kQ4}, 96, 32);
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.decisions[0].winner, "lin_a");
  const Candidate* c = find_candidate(r.decisions[0], "lin_k64");
  EXPECT_EQ(c->reason, "shape_unsupported:K % 64 == 0");
  EXPECT_NE(c->detail.find("K = 96"), std::string::npos) << c->detail;
  // With K = 128 the predicate holds and the 500 wins.
  World w2 = world({linear_map({}),
                    linear_map({.id = "lin_k64", .priority = 500, .shape = "[\"K % 64 == 0\"]"})},
                   {kQ4}, 128, 32);
  EXPECT_EQ(resolve(w2.graph, w2.reg, HostCaps::synthetic({}), kDecode).decisions[0].winner,
            "lin_k64");
}

TEST(Resolve, DecodeOnlyShapes) {
  // A GEMV that takes exactly one token: its predicate on T holds in decode (T = 1) and
  // cannot be decided in prefill (T known at run time only), so prefill rejects it.
  World w = world(
      {linear_map({}), linear_map({.id = "lin_gemv", .priority = 500, .shape = "[\"T == 1\"]"})},
      {kQ4});
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}));
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.decisions[0].query.phase, Phase::Prefill);
  EXPECT_EQ(r.decisions[0].winner, "lin_a");
  const Candidate* c = find_candidate(r.decisions[0], "lin_gemv");
  EXPECT_EQ(c->reason, "shape_unsupported:T == 1");
  EXPECT_NE(c->detail.find("runtime token count"), std::string::npos) << c->detail;
  EXPECT_EQ(r.decisions[1].winner, "lin_gemv");
}

TEST(Resolve, ContractWhenOnTokenCount) {
  // llama.cpp picks another float arithmetic for a batch of 2+ tokens than for one
  // (tinyBLAS vs vec_dot), so a contract may depend on T: decode sees T = 1, prefill both
  // ends of its range (T = 2 .. max_tokens), which must agree.
  const std::string batch = linear_contract("linear.q4_0.batch", "q4_0", "lin_b") +
                            "when: \"x_ne1 >= 2 && w_ne0 % 64 == 0\"\n";
  const std::string one = linear_contract("linear.q4_0.one", "q4_0", "lin_a") +
                          "when: \"x_ne1 == 1 || w_ne0 % 64 != 0\"\n";
  World w = world({linear_map({.contract = "linear.q4_0.one"}),
                   linear_map({.id = "lin_b", .contract = "linear.q4_0.batch"})},
                  {batch, one});
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}));
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.decisions[0].query.phase, Phase::Prefill);
  EXPECT_EQ(r.decisions[0].contract, "linear.q4_0.batch");
  EXPECT_EQ(r.decisions[0].winner, "lin_b");
  EXPECT_EQ(r.decisions[1].contract, "linear.q4_0.one");
  EXPECT_EQ(r.decisions[1].winner, "lin_a");
  // K = 96 breaks the batch contract's K rule: the single-token arithmetic everywhere.
  World k96 = world({linear_map({.contract = "linear.q4_0.one"}),
                     linear_map({.id = "lin_b", .contract = "linear.q4_0.batch"})},
                    {batch, one}, 96);
  Resolution r96 = resolve(k96.graph, k96.reg, HostCaps::synthetic({}));
  ASSERT_TRUE(r96.ok()) << r96.fault_report();
  EXPECT_EQ(r96.decisions[0].contract, "linear.q4_0.one");
  // A rule that changes inside the prefill range cannot be decided: no contract.
  const std::string split =
      linear_contract("linear.q4_0.split", "q4_0", "lin_a") + "when: \"x_ne1 >= 3\"\n";
  World ws = world({linear_map({.contract = "linear.q4_0.split"})}, {split});
  Resolution rs = resolve(ws.graph, ws.reg, HostCaps::synthetic({}), kPrefill);
  ASSERT_FALSE(rs.ok());
  EXPECT_EQ(rs.decisions[0].fault, "no_contract");
  const std::string why =
      contract_misfit(*ws.reg.find_contract("linear.q4_0.split"), rs.decisions[0].query);
  EXPECT_NE(why.find("depends on the token count (T = 2: false, T = 16: true)"), std::string::npos)
      << why;
}

TEST(Resolve, AliasSafety) {
  // The circuit binds x and y to one buffer h (in place).
  World w = world({linear_map({})}, {kQ4}, 32, 32, DType::Q4_0, "t", true);
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_FALSE(r.ok());
  const Candidate* c = find_candidate(r.decisions[0], "lin_a");
  EXPECT_EQ(c->reason, "alias_unsafe:y");
  EXPECT_EQ(c->stage, Stage::Alias);
  EXPECT_NE(r.decisions[0].message.find("declare may_alias"), std::string::npos)
      << r.decisions[0].message;
  // Declaring it makes the provider eligible.
  World ok =
      world({linear_map({.y_extra = ", may_alias: [x]"})}, {kQ4}, 32, 32, DType::Q4_0, "t", true);
  EXPECT_TRUE(resolve(ok.graph, ok.reg, HostCaps::synthetic({}), kDecode).ok());
  // alias_of requires the same buffer: with distinct buffers it is rejected.
  World req = world({linear_map({.y_extra = ", alias_of: x"})}, {kQ4}, 32, 32);
  Resolution rr = resolve(req.graph, req.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_FALSE(rr.ok());
  EXPECT_EQ(find_candidate(rr.decisions[0], "lin_a")->reason, "alias_required:y");
}

// Nodes asking the same question share one decision (resolve.cpp decision_key), and
// whether two ports name one buffer is part of the question: b (in place) is not a and c.
TEST(Resolve, InPlaceIsAnotherQuestion) {
  std::string circuit = test::linear_circuit();
  circuit = circuit.substr(0, circuit.find("header:\n")) +
            "header:\n"
            "  - {name: a, op: linear, profile: t, ports: {x: x, w: w, y: h}}\n"
            "  - {name: b, op: linear, profile: t, ports: {x: h, w: w, y: h}}\n"
            "  - {name: c, op: linear, profile: t, ports: {x: h, w: w, y: y}}\n";
  const Graph g = test::graph_ok(circuit, test::linear_facts(32, 32, DType::Q4_0));
  const Registry reg = test::build_ok({linear_map({})}, {kQ4});
  Resolution r = resolve(g, reg, HostCaps::synthetic({}), kDecode);
  ASSERT_EQ(r.decisions.size(), 3u);
  EXPECT_EQ(r.decisions[0].winner, "lin_a");
  EXPECT_EQ(r.decisions[1].fault, "no_provider");
  EXPECT_EQ(find_candidate(r.decisions[1], "lin_a")->reason, "alias_unsafe:y");
  EXPECT_EQ(r.decisions[2].winner, "lin_a");
  ASSERT_EQ(r.steps.size(), 2u);  // a and c, each on its own buffers
  EXPECT_EQ(r.steps[1].node, 2u);
  EXPECT_NE(r.steps[0].args[0].buffer, r.steps[1].args[0].buffer);
  EXPECT_EQ(r.steps[0].args[2].buffer, r.steps[1].args[0].buffer);  // a writes h, c reads it
}

TEST(Resolve, LayoutAndDtypeMismatch) {
  // Contract `any` on w: a q8_0 provider of it is rejected for a q4_0 weight.
  World w = world(
      {linear_map({.id = "lin_q8", .contract = "linear.any.t", .priority = 900, .wdtype = "q8_0"}),
       linear_map({.contract = "linear.any.t"})},
      {linear_contract("linear.any.t", "any", "lin_a")});
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  const Candidate* c = find_candidate(r.decisions[0], "lin_q8");
  EXPECT_EQ(c->reason, "dtype_mismatch:w");
  EXPECT_EQ(c->detail, "port w takes q8_0, the query has q4_0");
}

// A weight port may take a repacked layout of its dtype (kernels/formats/layouts.h): the
// file's row-major weight reaches it through the engine's load-time repack, which the step's
// argument and the decision name. Without repacks (cke-run --no-repack) such a provider is
// rejected at the layout stage and the next one wins.
TEST(Resolve, RepackedWeightLayout) {
  const std::string r16 = linear_map({.id = "lin_r16",
                                      .priority = 900,
                                      .w_extra = ", layout: q4_0_r16",
                                      .interface = "linear.r16_weight.v1"});
  World w = world({r16, linear_map({})}, {kQ4}, 64, 32);
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.decisions[0].winner, "lin_r16");
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].args[1].layout, "q4_0_r16");  // weight:w, read repacked
  EXPECT_EQ(r.steps[0].args[0].layout, "");
  EXPECT_EQ(r.decisions[0].repacks, (std::map<std::string, std::string>{{"w", "q4_0_r16"}}));
  const nlohmann::json t = xray_trace(r, w.graph, w.reg, HostCaps::synthetic({}), kDecode);
  EXPECT_EQ(t["decisions"][0]["repacks"]["w"], "q4_0_r16");

  ResolveOptions no_repack = kDecode;
  no_repack.allow_repack = false;
  r = resolve(w.graph, w.reg, HostCaps::synthetic({}), no_repack);
  ASSERT_TRUE(r.ok()) << r.fault_report();
  EXPECT_EQ(r.decisions[0].winner, "lin_a");
  EXPECT_TRUE(r.decisions[0].repacks.empty());
  const Candidate* c = find_candidate(r.decisions[0], "lin_r16");
  EXPECT_EQ(c->reason, "layout_mismatch:w");
  EXPECT_EQ(c->detail, "port w takes q4_0_r16, the query has row_major");
}

// A repacked layout names the dtype it reorders and belongs on weight ports only.
TEST(Resolve, RepackedLayoutOnlyOnItsWeights) {
  std::vector<LoadError> errors;
  EXPECT_FALSE(parse_kernel_map(linear_map({.wdtype = "q8_0", .w_extra = ", layout: q4_0_r16"}),
                                "m", &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].reason.find("reorders q4_0 weights, the port takes q8_0"), std::string::npos)
      << format_errors(errors);
  errors.clear();
  EXPECT_FALSE(parse_kernel_map(linear_map({.y_extra = ", layout: q4_0_r16"}), "m", &errors));
  ASSERT_FALSE(errors.empty());
  EXPECT_NE(errors[0].reason.find("only a weight port may take it"), std::string::npos)
      << format_errors(errors);
  errors.clear();
  EXPECT_FALSE(parse_kernel_map(linear_map({.w_extra = ", layout: q4_0_r32"}), "m", &errors));
  EXPECT_FALSE(errors.empty());
}

TEST(Resolve, BindsArgumentsPerPhase) {
  World w = world({linear_map({})}, {kQ4}, 64, 32);
  Resolution r = resolve(w.graph, w.reg, HostCaps::synthetic({}));
  ASSERT_TRUE(r.ok()) << r.fault_report();
  ASSERT_EQ(r.steps.size(), 2u);
  const GraphNode& n = w.graph.nodes[0];
  for (const Step& s : r.steps) {
    ASSERT_EQ(s.args.size(), 8u);
    EXPECT_EQ(s.contract->id, "linear.q4_0.t");
    EXPECT_EQ(s.args[0].kind, BoundArg::Kind::Buffer);
    EXPECT_EQ(s.args[0].buffer, n.port("x")->buffer);
    EXPECT_EQ(s.args[1].buffer, n.port("w")->buffer);
    EXPECT_EQ(s.args[2].buffer, n.port("y")->buffer);
    EXPECT_EQ(s.args[3].kind, BoundArg::Kind::I64);
    EXPECT_EQ(s.args[3].i64, 64);
    EXPECT_EQ(s.args[4].i64, 32);
    EXPECT_EQ(s.args[6].kind, BoundArg::Kind::RangeBegin);
    EXPECT_EQ(s.args[7].kind, BoundArg::Kind::RangeEnd);
    EXPECT_TRUE(s.parallel.enabled);
    EXPECT_EQ(s.parallel.dim, "N");
    EXPECT_EQ(s.parallel.extent, Value::integer(32));
    EXPECT_EQ(s.parallel.min_chunk, 16);
  }
  const Step& pre = *r.steps_for(Phase::Prefill).at(0);
  EXPECT_EQ(pre.args[5].kind, BoundArg::Kind::Runtime);  // T in prefill
  EXPECT_EQ(pre.args[5].runtime, RuntimeValue::NTokens);
  EXPECT_EQ(pre.args[5].i64, 1);
  const Step& dec = *r.steps_for(Phase::Decode).at(0);
  EXPECT_EQ(dec.args[5].kind, BoundArg::Kind::I64);  // T = 1 in decode
  EXPECT_EQ(dec.args[5].i64, 1);
  EXPECT_EQ(dec.args[5].source, "dim:T");
}

}  // namespace
}  // namespace cke
