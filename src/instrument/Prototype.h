// Prototype: an analysis routine's declaration, parsed from C syntax
// ("CondBranch(int, VALUE)"), as ATOM's AddCallProto takes it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace atomx::instrument {

struct Param {
  enum class Kind : uint8_t {
    Integer,  // any integer type; passed in a general register
    Pointer,  // T*; `isString` for char pointers
    Value,    // ATOM's VALUE: a value computed at run time
    RegV,     // ATOM's REGV: the contents of a register
    Array,    // T[] or T[N]: a copied array, passed as a pointer
  };
  Kind kind = Kind::Integer;
  uint8_t size = 8;         // bytes of the integer (Integer), or of one element (Array)
  bool isString = false;    // char* / const char*
  uint32_t arrayLength = 0; // T[N]; 0 for T[]
  std::string text;         // as written, for messages
};

struct Prototype {
  std::string name;
  std::vector<Param> params;
  std::string text;  // normalised "Name(int, VALUE)"
};

// Throws atomx::Error with the reason for a malformed prototype.
Prototype parsePrototype(std::string_view text);

}  // namespace atomx::instrument
