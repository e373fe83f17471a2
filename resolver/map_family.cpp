// Kernel map families (schema cke.kernel_map_family/1): one template, an instance table.
//
//   schema: cke.kernel_map_family/1
//   family: linear_generated            # the file name, as a map's id is
//   template: |                          # a kernel map without `schema`; ${name} placeholders
//     id: ${id}
//     ...
//   defaults: {decode_batch: 'false'}    # optional: placeholder values an instance may omit
//   instances:                           # one map each; every placeholder (or its default),
//     - {id: linear_q8_0_f32_4x4__avx512vnni, rows: 4, ...}   # no other key
//
// Each instance expands to a cke.kernel_map/1 document, parsed and checked like a map file;
// its `file` is "<path>:<line of the instance>", which errors and the X-Ray name.
#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <map>
#include <set>

#include "resolver/data_file.h"
#include "resolver/kernel_map.h"
#include "resolver/yaml_fields.h"

namespace cke {
namespace {

using detail::ErrorSink;
using detail::Fields;

// The ${name} placeholders of a template, in order of first use.
std::vector<std::string> placeholders(const std::string& t, ErrorSink* sink) {
  std::vector<std::string> out;
  for (size_t i = t.find("${"); i != std::string::npos; i = t.find("${", i + 2)) {
    const size_t e = t.find('}', i);
    const std::string name = e == std::string::npos ? "" : t.substr(i + 2, e - i - 2);
    if (!detail::is_identifier(name)) {
      sink->error("template", fmt::format("malformed placeholder at offset {}", i));
      return {};
    }
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

}  // namespace

std::vector<KernelMap> load_kernel_maps(const std::filesystem::path& path,
                                        std::vector<LoadError>* errors) {
  std::optional<std::string> text = read_data_file(path, errors);
  if (!text) return {};
  return parse_kernel_maps(*text, path, errors);
}

std::vector<KernelMap> parse_kernel_maps(const std::string& text, const std::filesystem::path& path,
                                         std::vector<LoadError>* errors) {
  if (text.find("cke.kernel_map_family/1") == std::string::npos) {
    std::optional<KernelMap> m = parse_kernel_map(text, path.string(), errors);
    return m ? std::vector<KernelMap>{std::move(*m)} : std::vector<KernelMap>{};
  }
  ErrorSink sink(path.string(), errors);
  std::optional<YAML::Node> doc = detail::parse_yaml(text, &sink);
  if (!doc) return {};
  Fields f(*doc, "", &sink);
  if (!f.ok()) return {};
  if (auto s = f.str("schema", true); s && *s != "cke.kernel_map_family/1")
    sink.error("schema", fmt::format("unsupported schema '{}'", *s));
  if (auto s = f.str("family", true); s && *s != path.stem().string())
    sink.error("family", fmt::format("family '{}' differs from the file name '{}'", *s,
                                     path.filename().string()));
  std::optional<std::string> tmpl = f.str("template", true);
  (void)f.str("notes", false);
  std::map<std::string, std::string> defaults;
  if (YAML::Node d = f.get("defaults", false); d.IsDefined()) {
    Fields df(d, "defaults", &sink);
    if (df.ok())
      for (const std::string& k : df.keys())
        if (auto v = df.str(k, true)) defaults[k] = *v;
    df.finish();
  }
  YAML::Node inst = f.get("instances", true);
  f.finish();
  if (!tmpl || sink.failed()) return {};
  if (tmpl->find("schema:") != std::string::npos)
    sink.error("template", "the template is a map without `schema` (the family sets it)");
  const std::vector<std::string> names = placeholders(*tmpl, &sink);
  for (const auto& [k, v] : defaults)
    if (std::find(names.begin(), names.end(), k) == names.end())
      sink.error("defaults." + k, fmt::format("no placeholder ${{{}}} in the template", k));
  if (!inst.IsSequence() || inst.size() == 0) {
    sink.error("instances", "expected a non-empty list of instances", inst);
    return {};
  }
  // A long value in many placeholders, and YAML aliases repeating an instance, multiply
  // the text to parse: a 12 KB file could expand to gigabytes. All the maps of a family
  // together stay within this bound (the largest real family expands to 26 KB).
  constexpr size_t kMaxExpandedBytes = size_t{1} << 20;
  size_t expanded = 0;
  std::vector<std::pair<std::string, std::string>> docs;  // (map text, file:line) per instance
  for (size_t i = 0; i < inst.size(); ++i) {
    const std::string ipath = fmt::format("instances[{}]", i);
    Fields vf(inst[i], ipath, &sink);
    if (!vf.ok()) continue;
    std::string doc_text = "schema: cke.kernel_map/1\n" + *tmpl;
    std::set<std::string> used;
    bool too_big = expanded + doc_text.size() > kMaxExpandedBytes;
    for (const std::string& n : names) {
      auto d = defaults.find(n);
      std::optional<std::string> v = vf.str(n, d == defaults.end());
      if (!v && d != defaults.end()) v = d->second;
      if (!v) continue;
      used.insert(n);
      for (size_t at = doc_text.find("${" + n + "}"); at != std::string::npos && !too_big;
           at = doc_text.find("${" + n + "}", at + v->size())) {
        too_big = expanded + doc_text.size() + v->size() > kMaxExpandedBytes;
        if (!too_big) doc_text.replace(at, n.size() + 3, *v);
      }
    }
    vf.finish();  // a key no placeholder uses is an error
    if (too_big) {
      sink.error(ipath,
                 fmt::format("the family's maps expand to more than {} bytes (a long value in "
                             "many placeholders, or YAML aliases repeating instances?)",
                             kMaxExpandedBytes),
                 inst[i]);
      break;
    }
    expanded += doc_text.size();
    if (used.size() != names.size()) continue;
    docs.emplace_back(std::move(doc_text),
                      fmt::format("{}:{}", path.string(), inst[i].Mark().line + 1));
  }
  if (sink.failed()) return {};
  // The maps parse independently (yaml-cpp is most of a compile's data loading): in
  // parallel, their results and errors gathered in instance order.
  std::vector<std::optional<KernelMap>> maps(docs.size());
  std::vector<std::vector<LoadError>> errs(docs.size());
  tbb::parallel_for(size_t(0), docs.size(), [&](size_t i) {
    maps[i] = parse_kernel_map(docs[i].first, docs[i].second, &errs[i]);
  });
  std::vector<KernelMap> out;
  for (size_t i = 0; i < docs.size(); ++i) {
    errors->insert(errors->end(), errs[i].begin(), errs[i].end());
    if (maps[i]) out.push_back(std::move(*maps[i]));
  }
  return out;
}

}  // namespace cke
