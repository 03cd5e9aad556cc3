// kiln: versions that key and gate artifacts.
#pragma once

#include <string>

#include <kiln/version.h>  // KILN_ABI_VERSION (abi/kiln/version.h)

namespace kiln {

inline constexpr const char *kVersion = "0.1.0";

// Bumped when the input/content key computation changes: every key changes with it.
// 2: command lines are hashed argument by argument (length-prefixed), not joined by spaces;
//    recipe paths are hashed as raw bytes too.
inline constexpr int kKeySchema = 2;
// Bumped when the layout of a store entry (meta.json, identity.json, files) changes.
inline constexpr int kArtifactSchema = 1;
// Bumped when manifest.json's format changes.
inline constexpr int kManifestSchema = 1;

// The plugin ABI this host speaks: majors must match; a plugin's minor may be lower.
inline constexpr unsigned kAbiVersion = KILN_ABI_VERSION;

// "1.1" from an ABI version ((major << 16) | minor), as kiln's messages and reports print it.
inline std::string abi_version_text(unsigned version) {
  return std::to_string(KILN_ABI_VERSION_MAJOR_OF(version)) + "." + std::to_string(KILN_ABI_VERSION_MINOR_OF(version));
}

}  // namespace kiln
