#include "runtime/gguf/inspect.h"

#include <fmt/format.h>

#include <map>

namespace cke::gguf {

namespace {

// Strings come from the file: escape control bytes so one value stays on one line.
std::string quote(std::string_view s, size_t max_chars) {
  std::string out = "\"";
  const size_t n = std::min(s.size(), max_chars);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '"' || c == '\\')
      out += fmt::format("\\{}", static_cast<char>(c));
    else if (c < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  out += "\"";
  if (s.size() > max_chars) out += fmt::format("... ({} bytes)", s.size());
  return out;
}

// F32 values print as floats (shortest round-trip form: 1e-05, not 9.99999974e-06).
std::string real(double d, ValueType t) {
  if (t == ValueType::F32) return fmt::format("{}", static_cast<float>(d));
  return fmt::format("{}", d);
}

std::string human_bytes(uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.2f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.2f} MiB", b / double(1ull << 20));
  if (b >= (1ull << 10)) return fmt::format("{:.2f} KiB", b / double(1ull << 10));
  return fmt::format("{} B", b);
}

std::string shape(const TensorInfo& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.n_dims; ++d) s += fmt::format("{}{}", d ? ", " : "", t.ne[d]);
  return s + "]";
}

}  // namespace

std::string format_value(const Value& v, const InfoOptions& opt) {
  if (v.type != ValueType::ARRAY) {
    if (auto* s = std::get_if<std::string_view>(&v.scalar)) return quote(*s, opt.max_string_chars);
    if (auto* u = std::get_if<uint64_t>(&v.scalar)) return fmt::format("{}", *u);
    if (auto* i = std::get_if<int64_t>(&v.scalar)) return fmt::format("{}", *i);
    if (auto* d = std::get_if<double>(&v.scalar)) return real(*d, v.type);
    return std::get<bool>(v.scalar) ? "true" : "false";
  }
  const uint64_t n = v.array_size();
  std::string out = fmt::format("[{} × {}]", value_type_name(v.elem_type), n);
  const size_t shown = std::min<uint64_t>(n, opt.max_array_items);
  for (size_t i = 0; i < shown; ++i) {
    out += i ? ", " : " ";
    if (!v.strings.empty())
      out += quote(v.strings[i], 32);
    else if (!v.reals.empty())
      out += real(v.reals[i], v.elem_type);
    else if (!v.ints.empty())
      out += fmt::format("{}", v.ints[i]);
    else if (v.elem_type == ValueType::BOOL)
      out += v.nums[i] ? "true" : "false";
    else
      out += fmt::format("{}", v.nums[i]);
  }
  if (n > shown) out += ", ...";
  return out;
}

void print_info(const File& f, std::FILE* out, const InfoOptions& opt) {
  uint64_t tensor_bytes = 0;
  for (const auto& t : f.tensors()) tensor_bytes += t.n_bytes;
  fmt::print(out, "file:         {}\n", f.path());
  fmt::print(out, "version:      {}\n", f.version());
  fmt::print(out, "alignment:    {}\n", f.alignment());
  fmt::print(out, "data offset:  {}\n", f.data_offset());
  fmt::print(out, "file size:    {} ({})\n", f.file_size(), human_bytes(f.file_size()));
  fmt::print(out, "tensor data:  {} ({})\n", tensor_bytes, human_bytes(tensor_bytes));
  fmt::print(out, "metadata:     {} keys\n", f.metadata().size());
  fmt::print(out, "tensors:      {}\n", f.tensors().size());

  fmt::print(out, "\nmetadata:\n");
  size_t key_w = 0;
  for (const auto& [k, v] : f.metadata()) key_w = std::max(key_w, k.size());
  for (const auto& [k, v] : f.metadata()) {
    const std::string type =
        v.type == ValueType::ARRAY ? "array" : std::string(value_type_name(v.type));
    fmt::print(out, "  {:<{}}  {:<6}  {}\n", k, key_w, type, format_value(v, opt));
  }

  if (!f.tensors().empty()) {
    size_t name_w = 4;
    for (const auto& t : f.tensors()) name_w = std::max(name_w, t.name.size());
    fmt::print(out, "\ntensors:\n  {:>5}  {:<{}}  {:<7}  {:<24}  {:>12}  {:>12}\n", "#", "name",
               name_w, "type", "shape", "offset", "bytes");
    size_t i = 0;
    for (const auto& t : f.tensors())
      fmt::print(out, "  {:>5}  {:<{}}  {:<7}  {:<24}  {:>12}  {:>12}\n", i++, t.name, name_w,
                 dtype_name(t.type), shape(t), t.offset, t.n_bytes);
  }

  // Totals per type, in type-id order.
  struct Sum {
    size_t count = 0;
    int64_t params = 0;
    uint64_t bytes = 0;
  };
  std::map<uint32_t, Sum> by_type;
  int64_t params = 0;
  for (const auto& t : f.tensors()) {
    Sum& s = by_type[static_cast<uint32_t>(t.type)];
    ++s.count;
    s.params += t.n_elements();
    s.bytes += t.n_bytes;
    params += t.n_elements();
  }
  fmt::print(out, "\ntotals:\n  parameters:  {}\n  bytes:       {} ({})\n", params, tensor_bytes,
             human_bytes(tensor_bytes));
  if (params > 0)
    fmt::print(out, "  bits/param:  {:.3f}\n", 8.0 * static_cast<double>(tensor_bytes) / params);
  for (const auto& [id, s] : by_type)
    fmt::print(out, "  {:<7}  {:>5} tensors  {:>14} params  {:>14} bytes\n",
               dtype_name(static_cast<DType>(id)), s.count, s.params, s.bytes);
}

}  // namespace cke::gguf
