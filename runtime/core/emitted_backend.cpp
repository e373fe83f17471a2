// The emitted-C backend (--run-emitted): the plan's C compiled into a shared object with the
// flags that make it compute the JIT's bits, loaded, checked to be this very plan, and
// bound to this engine's weights, arena and state. Kernel symbols and cke_parallel_for
// resolve against the running executable (linked with exported symbols).
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

#include "runtime/core/backend.h"

namespace cke {
namespace {

class EmittedBackend : public Backend {
 public:
  ~EmittedBackend() override {
    if (handle_) dlclose(handle_);
  }
  void* handle_ = nullptr;
  jit::GlueFn prefill_ = nullptr, decode_ = nullptr, batch_ = nullptr;
  jit::GlueFn prefill() const override { return prefill_; }
  jit::GlueFn decode() const override { return decode_; }
  jit::GlueFn batch() const override { return batch_; }
};

}  // namespace

std::unique_ptr<Backend> load_emitted_c_backend(const std::string& dir, const EmittedC& emitted,
                                                const std::string& plan_sha256, const Graph& graph,
                                                const PlanMemory& memory, std::string* err) {
  const char* cc = std::getenv("CC");
  const std::string so = dir + "/cke_plan.so";
  const std::string cmd =
      fmt::format("{} -std=c11 -fPIC -shared {} -o '{}' '{}/cke_plan.c' '{}/cke_kernels.c'",
                  cc && *cc ? cc : "cc", emitted_c_flags(emitted), so, dir, dir);
  if (std::system(cmd.c_str()) != 0) {
    *err = "--run-emitted: the C compiler failed: " + cmd;
    return nullptr;
  }
  auto b = std::make_unique<EmittedBackend>();
  b->handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!b->handle_) {
    *err = std::string("--run-emitted: ") + dlerror();
    return nullptr;
  }
  auto sha = static_cast<const char*>(dlsym(b->handle_, "cke_plan_sha256"));
  auto bind = reinterpret_cast<void (*)(const uint8_t*, uint8_t*, uint8_t* const*, const uint8_t*)>(
      dlsym(b->handle_, "cke_plan_bind"));
  b->prefill_ = reinterpret_cast<jit::GlueFn>(dlsym(b->handle_, "cke_plan_prefill"));
  b->decode_ = reinterpret_cast<jit::GlueFn>(dlsym(b->handle_, "cke_plan_decode"));
  if (emitted.has_batch)
    b->batch_ = reinterpret_cast<jit::GlueFn>(dlsym(b->handle_, "cke_plan_batch"));
  if (!sha || !bind || !b->prefill_ || !b->decode_ || (emitted.has_batch && !b->batch_)) {
    *err = "--run-emitted: " + so + " lacks the cke_plan_* entry points";
    return nullptr;
  }
  if (plan_sha256 != sha) {
    *err = fmt::format("--run-emitted: {} holds plan {} but this model/host/flags give plan {}",
                       dir, sha, plan_sha256);
    return nullptr;
  }
  std::vector<uint8_t*> slots;
  for (size_t i = 0; i < graph.buffers.size(); ++i)
    if (graph.buffers[i].kind == BufferKind::State) slots.push_back(memory.state[i]);
  bind(memory.weights, memory.arena, slots.data(), memory.repacked);
  return b;
}

}  // namespace cke
