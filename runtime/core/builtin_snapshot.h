// The built-in registry snapshot: this build's kernel maps and contracts as its own parser
// read them (resolver/registry_snapshot.h), linked into the binary. Registry::load reads it
// when the maps it loads are byte for byte the build's, so a first run skips YAML.
#pragma once

#include <string_view>

namespace cke {

// The snapshot's bytes; empty if the build's maps did not parse (a load then parses them).
std::string_view builtin_registry_snapshot();

}  // namespace cke
