// cke-builtin-snapshot MAPS_DIR OUT: the build step that parses the build's kernel maps and
// contracts once and writes them as the built-in registry snapshot (resolver/
// registry_snapshot.h), which cke_runtime links in (runtime/core/builtin_snapshot.cpp).
//
// A tree that does not parse is not this step's error to report: it writes an empty
// snapshot (a load then parses the YAML and reports every error, naming file and field) and
// says so, and the build goes on.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "resolver/load_error.h"
#include "resolver/registry.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: cke-builtin-snapshot MAPS_DIR OUT\n");
    return 2;
  }
  std::vector<cke::LoadError> errors;
  const std::optional<std::string> snap = cke::Registry::make_builtin_snapshot({argv[1]}, &errors);
  if (!snap)
    std::fprintf(stderr,
                 "cke-builtin-snapshot: %s does not parse; the build has no built-in snapshot "
                 "(a load parses the YAML and reports):\n%s\n",
                 argv[1], cke::format_errors(errors).c_str());
  const std::string tmp = std::string(argv[2]) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (snap) out << *snap;
    if (!out.flush()) {
      std::fprintf(stderr, "cke-builtin-snapshot: cannot write %s\n", tmp.c_str());
      return 1;
    }
  }
  if (std::rename(tmp.c_str(), argv[2]) != 0) {
    std::fprintf(stderr, "cke-builtin-snapshot: cannot rename %s to %s\n", tmp.c_str(), argv[2]);
    return 1;
  }
  return 0;
}
