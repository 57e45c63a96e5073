// atomx::Error: every failure atomx reports to a user carries one line of
// text that names the problem (also the errors of the instrumentation API).
#pragma once

#include <stdexcept>

namespace atomx {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace atomx
