// Where atomx keeps files: the one owner of the per-user cache directory
// (built tools, instrumented programs of `atomx run`) and of the directories
// made for one run (a tool's build, a trace, deferred ends' dumps).
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/Error.h"

namespace atomx {

// $XDG_CACHE_HOME/atomx/SUB, else $HOME/.cache/atomx/SUB; "" when neither
// variable is set (or both are empty).
inline std::string userCacheDir(const std::string& sub) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/atomx/" + sub;
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/atomx/" + sub;
  return "";
}

// A new directory named `pattern` with its final XXXXXX made unique
// (mkdtemp), or "" (errno says why).
inline std::string makeUniqueDir(std::string pattern) { return mkdtemp(pattern.data()) ? pattern : ""; }

// A new directory $TMPDIR/PREFIXxxxxxx (/tmp without TMPDIR), for one run:
// its maker removes it.  Throws Error when it cannot be made.
inline std::string makeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = makeUniqueDir(std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX");
  if (dir.empty()) throw Error("cannot create a temporary directory: " + std::string(std::strerror(errno)));
  return dir;
}

}  // namespace atomx
