// An earlier run's block counts for `--profile JSON` (analysis::BlockProfile):
// the "blocks" of the dyninst or prof tool's JSON files, summed.
#pragma once

#include <string>
#include <vector>

#include "analysis/BlockProfile.h"

namespace atomx::driver {

// None without files; throws atomx::Error for a file that is not such a
// JSON, or when the files count no executed block.
analysis::BlockProfile readBlockProfile(const std::vector<std::string>& files);

}  // namespace atomx::driver
