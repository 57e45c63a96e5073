// `atomx ease-report A.json B.json ... [-o DIR]`: the ease tool's reports
// (tools/ease) over several runs or programs, merged into one (as the seed's
// report program accumulated the data of several executions): DIR/ease.out,
// DIR/ease.json, DIR/ease.html.
#pragma once

namespace atomx::cli {

// argv[1] is "ease-report".  Returns the exit status; throws atomx::Error.
int runEaseReport(int argc, char** argv);

}  // namespace atomx::cli
