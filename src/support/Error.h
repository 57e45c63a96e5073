// Errors that atomx reports to the user.
//
// Every failure the user can cause (a bad input file, an unsupported feature)
// is an atomx::Error carrying one line of text that names the problem; the
// command-line front end prints it and exits with a non-zero status.  Code
// that finds a bug in atomx itself throws InternalError instead, so a crash
// report can be told apart from a bad input.
#pragma once

#include <atomx/error.hpp>
#include <string>

namespace atomx {

// Error itself is public (tools catch it): <atomx/error.hpp>.

// The input file is malformed or is not what atomx accepts.
class InputError : public Error {
 public:
  using Error::Error;
};

// The input is well formed but uses something atomx does not support yet.
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

// The command line asks for something that cannot be: the front end says
// so in one line and exits 2, as for any usage error.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A broken invariant inside atomx.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace atomx
