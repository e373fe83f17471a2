// The emitted-C backend (--run-emitted): the plan's C compiled into a shared object with the
// flags that make it compute the JIT's bits, loaded, checked to be this very plan, and
// bound to this engine's weights, arena and state. Kernel symbols and cke_parallel_for
// resolve against the running executable (linked with exported symbols).
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "resolver/sha256.h"
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

// What the shared object is made from: the compile command and the emitted files' bytes.
std::string build_key(const std::string& dir, const std::string& cmd) {
  Sha256 h;
  h.update(cmd.data(), cmd.size());
  for (const char* name : {"cke_plan.h", "cke_plan.c", "cke_kernels.h", "cke_kernels.c"}) {
    std::ifstream in(dir + "/" + name, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = std::string(name) + ":" + ss.str();
    h.update(text.data(), text.size());
  }
  std::string hex;
  for (uint8_t b : h.finish()) hex += fmt::format("{:02x}", b);
  return hex;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::unique_ptr<Backend> load_emitted_c_backend(const std::string& dir, const EmittedC& emitted,
                                                const std::string& plan_sha256, const Graph& graph,
                                                const PlanMemory& memory, std::string* err) {
  const char* cc = std::getenv("CC");
  const std::string so = dir + "/cke_plan.so";
  const std::string cmd =
      fmt::format("{} -std=c11 -fPIC -shared {} -o '{}' '{}/cke_plan.c' '{}/cke_kernels.c'",
                  cc && *cc ? cc : "cc", emitted_c_flags(emitted), so, dir, dir);
  // A directory compiled before from the same sources with the same command keeps its
  // shared object (cke_plan.so.sha256 holds that build's key), as make would: running an
  // emitted plan again, at another thread count, costs no second compile.
  const std::string key = build_key(dir, cmd), key_file = so + ".sha256";
  std::ifstream so_exists(so);
  if (!so_exists || read_text(key_file) != key) {
    std::remove(key_file.c_str());
    if (std::system(cmd.c_str()) != 0) {
      *err = "--run-emitted: the C compiler failed: " + cmd;
      return nullptr;
    }
    std::ofstream(key_file, std::ios::binary) << key;
  }
  auto b = std::make_unique<EmittedBackend>();
  // The plan binds its weights and arena to globals of the shared object, so each engine
  // needs its own copy: if another engine has this file loaded, load a private copy of it.
  std::string path = so;
  if (void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
    dlclose(h);
    static std::atomic<int> copies{0};
    path = fmt::format("{}.{}.{}", so, int(getpid()), ++copies);
    std::ifstream src(so, std::ios::binary);
    std::ofstream(path, std::ios::binary) << src.rdbuf();
  }
  b->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (path != so) std::remove(path.c_str());  // mapped now: the name is not needed
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
