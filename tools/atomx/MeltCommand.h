// `atomx melt TRACE ...`: frequent instruction sequences of a traced run
// (src/melt/Melt.h, docs/melting.md): the report as text, JSON and HTML.
#pragma once

namespace atomx::cli {

// argv[1] is "melt".  Returns the exit status; throws atomx::Error.
int runMelt(int argc, char** argv);

}  // namespace atomx::cli
