#include "jit/code_module.h"

#include "jit/jit_runtime.h"

namespace cke::jit {

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

bool ModuleBuilder::finish(std::string* err) {
  if (errors_.first == kErrorOk) cc_.finalize();
  if (errors_.first != kErrorOk) {
    *err = name_ + ": asmjit: " + errors_.msg;
    return false;
  }
  Error e = runtime().add(&base_, &code_);
  if (e) {
    *err = name_ + ": asmjit: " + error_text(e);
    return false;
  }
  code_size_ = code_.codeSize();
  register_perf_symbol(base_, code_size_, name_);
  return true;
}

void* ModuleBuilder::address(const Label& label) const {
  return static_cast<uint8_t*>(base_) + code_.labelOffsetFromBase(label);
}

std::unique_ptr<KernelModule> ModuleBuilder::make_module(const Label& entry) {
  void* entry_addr = address(entry);
  void* base = base_;
  base_ = nullptr;  // the module owns it now
  return std::make_unique<KernelModule>(name_, base, code_size_, entry_addr);
}

}  // namespace cke::jit
