// `atomx cachesim TRACE --config FILE | --sweep FILE ...`: the cache
// simulator over a regenerated trace (src/analyze/Cachesim.h,
// docs/cachesim.md "The offline simulator and sweeps"); under mpirun
// (when atomx was built with MPI) the configurations are spread over the
// ranks and rank 0 writes the results.
#pragma once

namespace atomx::cli {

// argv[1] is "cachesim".  Returns the exit status; throws atomx::Error.
int runCachesim(int argc, char** argv);

}  // namespace atomx::cli
