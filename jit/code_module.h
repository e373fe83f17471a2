// Our one way to make machine code: a module under construction (one asmjit Compiler, the
// first asmjit error kept, the finished code placed in the JIT runtime and registered for
// perf) and the module that owns the placed code. Used by the KIR sink (kernels) and the
// glue (one function per phase) alike.
#pragma once

#include <asmjit/x86.h>

#include <memory>
#include <string>

#include "jit/generators.h"

namespace cke::jit {

// Collects the first error asmjit reports while emitting.
struct ErrorCollector : asmjit::ErrorHandler {
  asmjit::Error first = asmjit::kErrorOk;
  std::string msg;
  void handleError(asmjit::Error err, const char* message, asmjit::BaseEmitter*) override;
};

// A module under construction: add functions through cc(), then finish().
class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string name);
  ~ModuleBuilder();  // releases placed code no module took over
  ModuleBuilder(const ModuleBuilder&) = delete;
  ModuleBuilder& operator=(const ModuleBuilder&) = delete;
  asmjit::x86::Compiler& cc() { return cc_; }

  // Finalizes and places the code. On failure returns false and *err.
  bool finish(std::string* err);
  // After finish(): the address of a function's label.
  void* address(const asmjit::Label& label) const;
  size_t code_size() const { return code_size_; }

  // After finish(): a module owning the code; `entry` names its entry function.
  std::unique_ptr<KernelModule> make_module(const asmjit::Label& entry);

 private:
  std::string name_;
  asmjit::CodeHolder code_;
  ErrorCollector errors_;
  asmjit::x86::Compiler cc_;
  void* base_ = nullptr;
  size_t code_size_ = 0;
};

}  // namespace cke::jit
