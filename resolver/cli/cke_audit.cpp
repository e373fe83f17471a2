// cke-audit: validates the kernel maps, contracts and circuits of a tree, the parity-test
// convention and the ratchet (resolver/audit.h). Exit status 0 when the audit passes.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "kernels/registry.h"
#include "resolver/audit.h"
#include "resolver/data_dirs.h"

int main(int argc, char** argv) {
  CLI::App app{"cke-audit: check kernel maps, contracts, circuits, parity tests and the ratchet"};
  std::string root = cke::compiled_data_dir().string();
  bool json = false, update = false, no_symbols = false;
  std::string results;
  app.add_option("--root", root, "repository root (kernel_maps/, circuits/, tests/)");
  app.add_flag("--json", json, "print the report as JSON (schema cke.audit/1)");
  app.add_flag("--update-ratchet", update, "rewrite kernel_maps/ratchet.yaml to the current state");
  app.add_flag("--no-symbols", no_symbols, "do not check impl.function against this binary");
  app.add_option("--results", results,
                 "GoogleTest XML reports of the run (GTEST_OUTPUT=xml:DIR/): a parity test counts "
                 "only if it ran and did not fail");
  CLI11_PARSE(app, argc, argv);

  cke::AuditOptions opt;
  opt.root = root;
  opt.update_ratchet = update;
  opt.results = results;
  std::string symbol_note;
  if (!no_symbols) {
    if (cke::kernel_symbols().empty())
      symbol_note = "the kernel symbol table of this binary is empty: symbol checks skipped";
    else
      opt.symbols = cke::linked_symbols();
  }
  cke::AuditReport report = cke::run_audit(opt);
  if (!symbol_note.empty()) report.warnings.push_back(symbol_note);
  if (json)
    std::printf("%s\n", report.to_json().dump(2).c_str());
  else
    std::printf("%s", report.to_text().c_str());
  return report.ok() ? 0 : 1;
}
