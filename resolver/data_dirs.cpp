#include "resolver/data_dirs.h"

#include <dlfcn.h>

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

// The data root, decided once: an installed tool finds <prefix>/share/cke beside its
// <prefix>/bin, an installed libcke.so beside its <prefix>/<libdir>; a build uses its source
// tree (CKE_DATA_DIR); an application linking the installed static libraries (the source
// tree gone) uses the install's data dir (CKE_INSTALL_DATA_DIR).
std::filesystem::path compiled_data_dir() {
  static const std::filesystem::path root = [] {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
      const fs::path beside = exe.parent_path().parent_path() / "share" / "cke";
      if (fs::is_directory(beside / "kernel_maps", ec)) return beside;
    }
#ifdef CKE_INSTALL_LIB_TO_DATA
    // The file this code was loaded from: libcke.so when it is linked into one.
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&compiled_data_dir), &info) && info.dli_fname &&
        info.dli_fname[0] == '/') {
      const fs::path beside =
          (fs::path(info.dli_fname).parent_path() / CKE_INSTALL_LIB_TO_DATA).lexically_normal();
      if (fs::is_directory(beside / "kernel_maps", ec)) return beside;
    }
#endif
    const fs::path build = CKE_DATA_DIR;
#ifdef CKE_INSTALL_DATA_DIR
    if (!fs::is_directory(build / "kernel_maps", ec)) return fs::path(CKE_INSTALL_DATA_DIR);
#endif
    return build;
  }();
  return root;
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
