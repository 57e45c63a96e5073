// atomx::demangle: a symbol as a person reads it ("mu::ParserBase::Eval()
// const"), or the symbol itself when it is no C++ name; the one demangler
// of atomx (the instrumentation API, atomx.hpp; the analysis side,
// report.hpp and cachegrind.hpp; atomx itself).
//
// Only names in the Itanium C++ ABI's mangling (they start with "_Z") are
// demangled, as Valgrind does: __cxa_demangle also reads a bare type, so a
// C function called `f` would become "float" and one called `i` "int".
// A type's name (typeid(T).name(), "St13runtime_error") is demangleType's.
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <string>
#include <string_view>

namespace atomx {

namespace detail {
// __cxa_demangle's reading of `name`, or `name` itself if it has none.
inline std::string cxaDemangle(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string r(d);
  std::free(d);
  return r;
}
}  // namespace detail

inline std::string demangle(std::string_view symbol) {
  std::string s(symbol);
  return s.compare(0, 2, "_Z") == 0 ? detail::cxaDemangle(s) : s;
}

// "St13runtime_error" -> "std::runtime_error".
inline std::string demangleType(const char* typeName) { return detail::cxaDemangle(typeName); }

}  // namespace atomx
