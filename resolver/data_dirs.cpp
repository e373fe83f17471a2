#include "resolver/data_dirs.h"

#include <cstdlib>
#include <string>

#ifndef CKE_DATA_DIR
#error "CKE_DATA_DIR must be defined by the build (resolver/CMakeLists.txt)"
#endif

namespace cke {

namespace {
std::vector<std::filesystem::path> split_paths(const char* s) {
  std::vector<std::filesystem::path> out;
  std::string v(s);
  size_t b = 0;
  while (b <= v.size()) {
    size_t e = v.find(':', b);
    if (e == std::string::npos) e = v.size();
    if (e > b) out.emplace_back(v.substr(b, e - b));
    b = e + 1;
  }
  return out;
}
}  // namespace

std::filesystem::path compiled_data_dir() {
  return CKE_DATA_DIR;
}

DataDirs data_dirs_at(const std::filesystem::path& root) {
  return {{root / "kernel_maps"}, {root / "circuits"}};
}

DataDirs default_data_dirs() {
  DataDirs d = data_dirs_at(compiled_data_dir());
  if (const char* e = std::getenv("CKE_KERNEL_MAPS"); e && *e) d.kernel_maps = split_paths(e);
  if (const char* e = std::getenv("CKE_CIRCUITS"); e && *e) d.circuits = split_paths(e);
  return d;
}

}  // namespace cke
