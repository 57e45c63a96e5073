// Where atomx keeps things of its own: the per-user cache and temporary
// directories.  One owner, so that every cache (built tools, instrumented
// programs) follows the same rule and every temporary directory honours
// $TMPDIR.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "support/Error.h"

namespace atomx {

// $XDG_CACHE_HOME/atomx/SUB, else $HOME/.cache/atomx/SUB; "" when neither
// is set.
inline std::string userCacheDir(const std::string& sub) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/atomx/" + sub;
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/atomx/" + sub;
  return "";
}

// A new directory $TMPDIR/STEMxxxxxx (else /tmp/...), private to the
// user; throws atomx::Error saying `what` it was for.
inline std::string makeTempDir(const std::string& stem, const std::string& what) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + stem + "XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw Error("cannot create a temporary directory for " + what + " (" + pattern + "): " + std::strerror(errno));
  return pattern;
}

}  // namespace atomx
