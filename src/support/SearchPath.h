// Where a command name runs from, as a shell (and posix_spawnp, execvp)
// finds it: a name with a '/' is itself; otherwise the first regular,
// executable file of that name in the directories of $PATH (an empty entry
// is the working directory; no $PATH: /usr/local/bin:/usr/bin:/bin).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace atomx {

// "" when there is none.
inline std::string searchPath(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  const std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = (end == start ? std::string(".") : dirs.substr(start, end - start)) + "/" + name;
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace atomx
