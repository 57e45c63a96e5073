// `atomx melt TRACE ...`: frequent instruction sequences of a traced run
// (src/melt/Melt.h, docs/melting.md): the report as text, JSON and HTML.
#pragma once

namespace atomx::cli {

// argv[1] is "melt".  Returns the exit status; throws atomx::Error.
int runMelt(int argc, char** argv);
// `atomx run -T melt [OPTIONS] -- PROG [ARGS]` (argv[1..3] are "run", "-T",
// "melt"): traces PROG into a temporary directory, mines it, reports on
// stderr; returns PROG's status (or melt's when PROG's is 0).
int runMeltOnRun(int argc, char** argv);

}  // namespace atomx::cli
