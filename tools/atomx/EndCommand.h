// `atomx end [PATH...]`: the deferred ends of the processes of a program
// rewritten with --defer-end (src/driver/EndReplay.h).
#pragma once


namespace atomx::cli {

// argv[1] is "end".  Returns the exit status; throws atomx::Error.
int runEnd(int argc, char** argv);

}  // namespace atomx::cli
