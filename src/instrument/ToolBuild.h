// ToolBuild: turns a tool's source files into what atomx needs, as ATOM's
// `atom prog inst.c anal.c -o prog.atom` did: the instrumentation file
// becomes a plugin that atomx loads and runs (Instrument(argc, argv)), the
// analysis files become a shared object that is embedded in the output.
// The system compiler (cc for .c, c++ for .cpp; $CC and $CXX override) builds
// both against atomx's installed headers; its messages go straight to the
// user's terminal.  A build is kept for the next run (ToolCache.h).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace atomx::instrument {

// Where code address `pc` is in the tool whose Instrument runs now: its
// function and source line ("Instrument at tool.cpp:12", addr2line on the
// plugin, built with -g), its address when addr2line cannot say; "" when
// pc is not in the tool (or no Instrument runs).  For messages about the
// tool's calls: a crash, a call on a null handle.
std::string toolSourceAt(uintptr_t pc);

struct ToolSources {
  std::string instrumentation;         // inst.c / inst.cpp (none for the trace recorder)
  std::vector<std::string> analysis;   // anal.c ... (a header among them is not compiled)
  // More for the analysis object's link, in order, after its own objects:
  // object files, archives, shared objects, -l/-L and --ldflags (-lzstd for
  // the recorder).
  std::vector<std::string> libraries;
  std::vector<std::string> cflags;     // --cflags: for compiling the tool's files
};

bool isSourceFile(const std::string& path);
// An argument the analysis object's link takes as it is: NAME.o, NAME.a,
// NAME.so (NAME.so.N), -lNAME, -LDIR.
bool isLinkInput(const std::string& arg);
// "-O3 -DX=1": the words of a --cflags or --ldflags value.
std::vector<std::string> splitFlags(const std::string& flags);

// A tool shipped with atomx (`atomx -T NAME`): PREFIX/share/atomx/tools/NAME/
// holds NAME_inst.c[pp] and one or more NAME_anal*.c[pp].  An unknown name
// is an Error that lists the shipped tools.
ToolSources shippedTool(const std::string& name);

// The shipped tools, by name, each with the one-line summary its README.md
// opens with ("# NAME: summary").
struct ShippedTool {
  std::string name;
  std::string summary;
};
std::vector<ShippedTool> shippedTools();

// The analysis sources of an abstract-execution trace (`atomx trace`):
// every file of PREFIX/share/atomx/runtime/trace/ (runtime/trace: the
// recorder's .c files and its headers) and PREFIX/share/atomx/runtime/sys.h,
// and no instrumentation file.  The headers are listed for whoever keys a
// cache on the sources (atomx trace's rewritten program); the build
// compiles only the .c files.
ToolSources traceRecorder();

class ToolBuild {
 public:
  // Builds in a fresh temporary directory, removed by the destructor.
  explicit ToolBuild(const ToolSources& sources);
  ~ToolBuild();
  ToolBuild(const ToolBuild&) = delete;
  ToolBuild& operator=(const ToolBuild&) = delete;

  // Loads the plugin and calls its Instrument(argc, argv); argv[0] is the
  // instrumentation file's name.  API errors propagate as atomx::Error.
  void runInstrument(const std::vector<std::string>& toolArgs);
  // The analysis shared object's bytes.
  std::vector<uint8_t> analysisObject() const;
  // Functions the analysis object defines (dynamic symbols), to check that
  // every declared routine exists.
  std::set<std::string> analysisFunctions() const;
  // Whether the build came from the cache (ToolCache.h) instead of the
  // compilers.
  bool reused() const { return reused_; }
  // A digest of the files the cached build of `sources` was made from, with
  // their sizes and times, when the cache holds one that is still valid:
  // what `atomx run` adds to its own key, so that editing a header of the
  // tool instruments the program again.
  static std::optional<uint64_t> cachedInputs(const ToolSources& sources);

 private:
  struct Command {
    std::vector<std::string> args;
    std::string what;     // for messages: the file it compiles
    std::string depFile;  // the files it read, make-style
  };
  // The commands that build `sources` in `dir`.
  static std::vector<Command> commands(const ToolSources& sources, const std::string& dir, const std::string& root,
                                       const std::string& support);
  // The constructor's work after its directory exists (the constructor removes it on a throw).
  void build(const ToolSources& sources);
  static uint64_t cacheKey(const ToolSources& sources, const std::string& root, const std::string& support);
  std::string dir_;
  std::string plugin_, analysis_, instName_;
  bool reused_ = false;
  void* handle_ = nullptr;
};

}  // namespace atomx::instrument
