// The facts asked for from a constructor of the analysis object (early_facts.sh).
#include <atomx/atomx.hpp>
using namespace atomx;
extern "C" void Instrument(int, char**) {
  embedFacts();
  Routine("Start()").atProgramStart();
}
