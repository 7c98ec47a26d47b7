// SHA-256 (FIPS 180-4), to check the integrity of the cached default model. Sixty lines here
// spare a static OpenSSL in the binary.
#pragma once

#include <string>

namespace anvil {

/// Hex digest of the file at `path`; throws anvil::Error naming it when it cannot be read.
std::string sha256_file(const std::string& path);
/// Hex digest of `data`.
std::string sha256_hex(const std::string& data);

}  // namespace anvil
