#include "kernels/formats/dtype.h"

#include <cctype>
#include <string>

namespace cke {
std::optional<DTypeInfo> dtype_info(uint32_t id) {
  for (const DTypeInfo& i : detail::kDTypeTable)
    if (static_cast<uint32_t>(i.type) == id) return i;
  return std::nullopt;
}

std::string_view dtype_name(DType t) {
  return dtype_info(t).name;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& i : detail::kDTypeTable) {
    if (i.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t k = 0; k < name.size() && eq; ++k)
      eq = std::tolower(static_cast<unsigned char>(name[k])) ==
           std::tolower(static_cast<unsigned char>(i.name[k]));
    if (eq) return i.type;
  }
  return std::nullopt;
}

}  // namespace cke
