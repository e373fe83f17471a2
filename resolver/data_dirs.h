// Where kernel maps, contracts and circuits are read from.
//
// Default: the build's CKE_DATA_DIR (the source tree; an install uses <prefix>/share/cke),
// i.e. <data>/kernel_maps (contracts in <data>/kernel_maps/contracts) and <data>/circuits.
// The environment overrides each: CKE_KERNEL_MAPS and CKE_CIRCUITS, colon-separated lists
// of directories. Explicit directories given by a caller override both.
#pragma once

#include <filesystem>
#include <vector>

namespace cke {

struct DataDirs {
  std::vector<std::filesystem::path> kernel_maps;
  std::vector<std::filesystem::path> circuits;
};

// The compiled-in data root.
std::filesystem::path compiled_data_dir();
// The directories to use: environment first, else the compiled-in root.
DataDirs default_data_dirs();
// The directories of a tree rooted at `root` (root/kernel_maps, root/circuits).
DataDirs data_dirs_at(const std::filesystem::path& root);

}  // namespace cke
