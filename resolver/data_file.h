// Reading data files and the id rules shared by maps, contracts and circuits.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "resolver/load_error.h"

namespace cke {

// The whole file, or nullopt and an error naming it.
std::optional<std::string> read_data_file(const std::filesystem::path& path,
                                          std::vector<LoadError>* errors);
// Every regular *.yaml file directly in `dir`, sorted by name (a missing dir is an error).
std::vector<std::filesystem::path> list_yaml_files(const std::filesystem::path& dir,
                                                   std::vector<LoadError>* errors);
// Ids of maps and contracts: [a-z0-9_.] plus upper-case letters inside dtype names (q4_K),
// starting with a letter.
bool is_data_id(std::string_view id);

}  // namespace cke
