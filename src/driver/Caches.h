// `atomx cache`: what atomx keeps between runs, listed and cleaned: the
// instrumented programs of `atomx run` and `atomx trace` (ProgramCache.h)
// and the built tools (instrument/ToolCache.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace atomx::driver {

// Lists the program cache's entries (least recently used first: size, last
// use, file) and both caches' places and sizes, on stdout.
void listCaches(const std::string& cacheDir);

// Removes every entry of both caches (clean), or the program cache's least
// recently used entries until it takes at most `trimTo` bytes; says what
// went on stderr unless quiet.
void cleanCaches(const std::string& cacheDir, std::optional<uint64_t> trimTo, bool quiet);

}  // namespace atomx::driver
