#include "resolver/data_file.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <system_error>

namespace cke {

std::optional<std::string> read_data_file(const std::filesystem::path& path,
                                          std::vector<LoadError>* errors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errors) errors->push_back({path.string(), "", "cannot open file", 0});
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::filesystem::path> list_yaml_files(const std::filesystem::path& dir,
                                                   std::vector<LoadError>* errors) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    if (errors) errors->push_back({dir.string(), "", "not a directory", 0});
    return out;
  }
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_data_id(std::string_view id) {
  if (id.empty() || !std::islower(static_cast<unsigned char>(id[0]))) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  });
}

}  // namespace cke
