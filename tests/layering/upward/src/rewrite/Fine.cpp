// Downward includes only: allowed.
#include "analysis/ProgramModel.h"
#include "layout/CodeLayout.h"
