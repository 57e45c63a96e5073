// An Instrument that throws a C++ exception of its own: atomx must say that
// the tool threw it, with its type and message (not "internal error").
#include <atomx/atom.h>

#include <stdexcept>

extern "C" void Instrument(int, char**) { throw std::out_of_range("block 7 of 3"); }
