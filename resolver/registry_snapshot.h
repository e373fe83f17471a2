// The registry snapshot: the parsed kernel maps and contracts of one set of data files,
// kept on disk so the next process skips YAML (yaml-cpp's parse is most of a compile's data
// loading: 45-70 ms of a 1.1B model's ~120 ms compile on a 2-vCPU host).
//
// It is a cache of a pure function, so it can never change what loads:
//   - the key is the SHA-256 of the snapshot format, this binary's GNU build id (a rebuilt
//     parser is another binary) and every input file's path and bytes, in order; a snapshot
//     is only read under its own key, which it also holds inside, with the SHA-256 of its
//     payload;
//   - it holds exactly the parsed values (expressions as their source text, which the
//     parser maps to the same tree again); the cross-file checks (Registry::build) run
//     after it as after a parse;
//   - only a load without errors writes one, so every error still comes from the parser;
//   - a snapshot that is missing, unreadable or fails any check is ignored (and rewritten).
// Where: $CKE_CACHE_DIR, else $XDG_CACHE_HOME/cke, else $HOME/.cache/cke; CKE_CACHE_DIR=off
// (or no build id) turns it off. A write keeps the kKeepSnapshots snapshots last written or
// read there and removes older ones.
//
// The built-in snapshot: the build parses its own kernel_maps/ (resolver/cli/
// cke_builtin_snapshot.cpp) and links the result into cke_runtime (runtime/core/
// builtin_snapshot.cpp), so even a binary's first load skips YAML. It is made by the parser
// of the same build (the build rule depends on it), so its key needs no build id: it is the
// SHA-256 of the format and every input file's name (not its directory) and bytes. A load
// whose files are byte for byte the build's, wherever they are (the source tree, an install,
// a copy), reads it and rebases its file paths to the loaded ones; any other load ignores it.
// Tested: tests/resolver/test_registry_snapshot.cpp.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "resolver/contract.h"
#include "resolver/kernel_map.h"

namespace cke::snapshot {

struct Parsed {
  std::vector<KernelMap> maps;
  std::vector<Contract> contracts;
  // The input files' paths, maps then contracts (the key's order): each map's and contract's
  // `file` is one of them (a family's instance: "<path>:<line>").
  std::vector<std::string> files;
};

// A data file as read: its path (as the parser names it) and bytes.
struct InputFile {
  std::string path;
  std::string bytes;
};

constexpr size_t kKeepSnapshots = 8;

// The directory snapshots live in; nullopt when they are off.
std::optional<std::filesystem::path> cache_dir();
// The key of these map and contract files (in load order); empty when snapshots are off.
std::string key(const std::vector<InputFile>& map_files,
                const std::vector<InputFile>& contract_files);
// The key of the built-in snapshot (above): names and bytes, no directories, no build id.
std::string builtin_key(const std::vector<InputFile>& map_files,
                        const std::vector<InputFile>& contract_files);
// Rewrites every `file` of `p` from p->files[i] to paths[i] and sets p->files = paths; false
// (p unusable) if the lists differ in length or a `file` names none of p->files in order.
bool rebase(Parsed* p, const std::vector<std::string>& paths);
// The snapshot of `key`, if one is stored and intact.
std::optional<Parsed> read(const std::string& key);
// Stores `p` under `key` (atomically: a reader sees the old snapshot, the new one or none).
// Returns false if it could not (not an error: the next load parses again).
bool write(const std::string& key, const Parsed& p);

// The encoding alone (tests): bytes that decode to the same values, and back.
std::string encode(const std::string& key, const Parsed& p);
std::optional<Parsed> decode(const std::string& key, const std::string& bytes);

}  // namespace cke::snapshot
