// A call on a null handle (a default-constructed Inst): atomx must name the
// call and the tool's source line (itest.py error.nullhandle).
#include <atomx/atomx.hpp>

using namespace atomx;

extern "C" void Instrument(int, char**) {
  Inst none;
  if (none.pc() == 0) program();  // the call on the null handle: this line
}
