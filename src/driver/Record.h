// `atomx trace`: record an abstract-execution trace (docs/trace.md) as a
// flat list of named phases:
//
//   instrument        PROG with the trace plan's stores and the recorder
//                     (runtime/trace/), kept in the program cache with
//                     its witness placement's digest
//   prepareDirectory  TRACE/ made; the streams, log and manifest of an
//                     earlier trace there removed
//   writeManifest     what ties the trace to PROG's bytes and placement
//                     (and the profile that weighed it)
//   run               PROG ARGS with ATOMX_TRACE_DIR=TRACE (its whole
//                     workload with -f or when PROG is not instrumentable:
//                     Workload.h), or, with
//                     --instrument OUT, the instrumented program handed
//                     over instead
//   report            one line: streams and bytes written
#pragma once

#include <string>
#include <vector>

namespace atomx::driver {

struct RecordRequest {
  std::string dir;           // TRACE
  std::string cacheDir;      // "" for the default place
  std::string instrumentTo;  // --instrument OUT: do not run, write OUT
  std::vector<std::string> profileFiles;
  bool quiet = false;
  // --data: record the values data addresses are computed from (the
  // regenerated trace then carries every data reference).
  bool data = false;
  // -f: trace every process the command starts (driver/Workload.h), also
  // when PROG is a program atomx instruments; a PROG atomx cannot instrument
  // (sh -c ..., make) always is.  Without, PROG alone runs, not followed:
  // the supervisor's ptrace makes each signal a stop (docs/trace.md).
  bool follow = false;
  // --no-schedule: no privileged schedule log even where it could be made
  // (its eBPF programs take some 70 ms to load).
  bool schedule = true;
  // --with INST ANAL... [--with-arg ARG]...: a tool of the user's runs in
  // the same run as the recorder (its calls beside the trace's stores).
  std::vector<std::string> withTool;
  std::vector<std::string> withArgs;
  std::vector<std::string> argv;  // PROG [ARGS], PROG as given
};

// PROG's exit status as a shell reports it (0 with instrumentTo).
int recordTrace(const RecordRequest& request);

}  // namespace atomx::driver
