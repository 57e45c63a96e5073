// A public header including the program model: analysis objects see only
// include/atomx, so check_layers.py must reject this.
#include <atomx/trace.hpp>
#include "ir/Program.h"
