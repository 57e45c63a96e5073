// atomx::demangle: a symbol as a person reads it ("mu::ParserBase::Eval()
// const"), or the symbol itself when it is no C++ name.  Shared by the
// instrumentation API (atomx.hpp) and the analysis side (report.hpp).
//
// Only names in the Itanium C++ ABI's mangling (they start with "_Z") are
// demangled: __cxa_demangle also reads a bare type, so a C function called
// `f` would become "float" and one called `i` "int".
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace atomx {

inline std::string demangle(std::string_view symbol) {
  std::string s(symbol);
  if (s.compare(0, 2, "_Z") != 0) return s;
  int status = 0;
  char* d = abi::__cxa_demangle(s.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return s;
  std::string r(d);
  std::free(d);
  return r;
}

}  // namespace atomx
