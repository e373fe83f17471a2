#include "jit/gen_common.h"

#include "jit/jit_runtime.h"

namespace cke::jit::gen {

using namespace asmjit;

void ErrorCollector::handleError(Error err, const char* message, BaseEmitter*) {
  if (first == kErrorOk) {
    first = err;
    msg = message;
  }
}

// CodeHolder must be initialised before the Compiler attaches to it.
ModuleBuilder::ModuleBuilder(std::string name) : name_(std::move(name)), code_(), cc_(nullptr) {
  code_.init(runtime().environment());
  code_.setErrorHandler(&errors_);
  code_.attach(&cc_);
}

ModuleBuilder::~ModuleBuilder() {
  if (base_) runtime().release(base_);
}

FuncNode* ModuleBuilder::begin_func(const FuncSignature& sig, bool avx512) {
  FuncNode* f = cc_.addFunc(sig);
  if (!f) return nullptr;
  f->frame().setAvxEnabled();
  f->frame().setAvxCleanup();
  if (avx512) f->frame().setAvx512Enabled();
  return f;
}

Label ModuleBuilder::emit_linear_entry(const void* state, const void* driver) {
  FuncNode* f = begin_func(FuncSignatureT<void, const float*, const void*, float*, int64_t, int64_t,
                                          int64_t, int64_t, int64_t>(),
                           false);
  x86::Gp args[8];
  for (int i = 0; i < 8; ++i) {
    args[i] = cc_.newInt64("arg");
    f->setArg(uint32_t(i), args[i]);
  }
  x86::Gp st = cc_.newIntPtr("state");
  cc_.mov(st, uint64_t(uintptr_t(state)));
  // Through a register: an absolute call target would be placed as data after the code
  // (an address table), and the module's code is meant to be instructions only.
  x86::Gp target = cc_.newIntPtr("driver");
  cc_.mov(target, uint64_t(uintptr_t(driver)));
  InvokeNode* call = nullptr;
  cc_.invoke(&call, target,
             FuncSignatureT<void, const void*, const float*, const void*, float*, int64_t, int64_t,
                            int64_t, int64_t, int64_t>());
  if (call) {
    call->setArg(0, st);
    for (uint32_t i = 0; i < 8; ++i) call->setArg(i + 1, args[i]);
  }
  cc_.endFunc();
  return f->label();
}

bool ModuleBuilder::finish(std::string* err) {
  if (errors_.first == kErrorOk) cc_.finalize();
  if (errors_.first != kErrorOk) {
    *err = "generator '" + name_ + "': asmjit: " + errors_.msg;
    return false;
  }
  Error e = runtime().add(&base_, &code_);
  if (e) {
    *err = "generator '" + name_ + "': asmjit: " + error_text(e);
    return false;
  }
  code_size_ = code_.codeSize();
  register_perf_symbol(base_, code_size_, name_);
  return true;
}

void* ModuleBuilder::address(const Label& label) const {
  return static_cast<uint8_t*>(base_) + code_.labelOffsetFromBase(label);
}

std::unique_ptr<KernelModule> ModuleBuilder::make_module(const Label& entry,
                                                         std::shared_ptr<const void> state) {
  void* entry_addr = address(entry);
  void* base = base_;
  base_ = nullptr;  // the module owns it now
  return std::make_unique<KernelModule>(name_, base, code_size_, entry_addr, std::move(state));
}

bool reject_params(const GeneratorParams& params, std::string_view generator, std::string* err) {
  if (params.empty()) return true;
  *err = "generator '" + std::string(generator) + "': unknown parameter '" + params.begin()->first +
         "' (it takes none)";
  return false;
}

}  // namespace cke::jit::gen
