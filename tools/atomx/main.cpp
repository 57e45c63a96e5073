// atomx: the command-line front end.
//
//   atomx PROG [INST.c ANAL.c... | -T NAME] -o OUT [options] [-- TOOL ARGS]
//   atomx dump PROG [--proc NAME]
//
// Every error is one line on stderr and a non-zero exit status.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "elf/ElfImage.h"
#include "instrument/Engine.h"
#include "instrument/Instrumenter.h"
#include "instrument/ToolBuild.h"
#include "rewrite/Dump.h"
#include "rewrite/Report.h"
#include "rewrite/Rewriter.h"
#include "support/Error.h"

namespace {

constexpr const char* kUsage = R"(usage:
  atomx PROG INST.c ANAL.c [ANAL2.c ...] -o OUT [options] [-- TOOL ARGS...]
      Instrument PROG as ATOM did: compile INST (the instrumentation routines,
      .c or .cpp) into a plugin and run its Instrument(argc, argv), compile the
      ANAL files (the analysis routines) into a shared object, and write OUT:
      PROG with the requested calls, which loads the analysis routines by
      itself when it starts (nothing else is needed beside it).  TOOL ARGS
      (after --, or any further argument that is not a source file) reach
      Instrument as argv[1...].  Headers: <atomx/atom.h> (ATOM's C API) and
      <atomx/atomx.hpp> (typed C++), both documented in their comments;
      docs/instrumenting.md teaches writing a tool.
  atomx PROG -T NAME -o OUT [options] [-- TOOL ARGS...]
      The same with a tool shipped with atomx (share/atomx/tools/NAME):
        branch   each conditional branch: taken and not taken (btaken.out);
                 ATOM's Figures 2 and 3 in the typed API, thread-safe
  atomx PROG -o OUT [--poison-original] [--pad-instructions N] [--report FILE] [-q]
      Rewrite PROG, moving every procedure atomx can prove safe into new code,
      and write the result to OUT.  PROG must be an x86-64 ELF executable
      linked with -Wl,--emit-relocs.  With no tool, OUT behaves exactly like
      PROG (the "null tool").
      --poison-original  fill the old bytes of moved procedures with int3, so a
                         missed code reference crashes instead of running old code
      --pad-instructions N  insert N nops (0..64) before every moved instruction:
                         a check that branches, unwind tables and exception
                         call sites still work when code is inserted
      --report FILE      write a JSON report: counts, timings, and every
                         procedure left in place with the reason
      -q                 print nothing on success
  atomx dump PROG [--proc NAME]
      Print procedures, basic blocks, instructions (original addresses), CFG
      edges, jump tables, and what could not be analysed.
  atomx --help | --version
)";

[[noreturn]] void usageError(const std::string& message) {
  std::fprintf(stderr, "atomx: %s (see atomx --help)\n", message.c_str());
  std::exit(2);
}

void writeFile(const std::string& path, const std::vector<uint8_t>& bytes, bool executable) {
  // A regular file is replaced atomically through a temporary; anything else
  // that exists (/dev/null, a pipe) is written in place, never replaced.
  struct stat st;
  const bool inPlace = stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (inPlace && S_ISDIR(st.st_mode)) throw atomx::Error(path + ": output is a directory");
  const std::string tmp = inPlace ? path : path + ".atomx-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw atomx::Error(path + ": cannot create output file");
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      if (!inPlace) std::remove(tmp.c_str());
      throw atomx::Error(path + ": write failed");
    }
  }
  if (inPlace) return;
  if (executable) chmod(tmp.c_str(), 0755);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw atomx::Error(path + ": cannot replace output file");
  }
}

int runDump(int argc, char** argv) {
  std::string prog, only;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--proc" && i + 1 < argc) only = argv[++i];
    else if (a == "--proc") usageError("--proc needs a procedure name");
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a);
    else if (prog.empty()) prog = a;
    else usageError("more than one program given");
  }
  if (prog.empty()) usageError("dump needs a program");
  atomx::elf::ElfImage image = atomx::elf::ElfImage::load(prog);
  atomx::rewrite::Rewriter rewriter(image);
  rewriter.analyze();
  atomx::rewrite::dumpProgram(rewriter, std::cout, only);
  return 0;
}

int runRewrite(int argc, char** argv) {
  std::string prog, out, reportPath;
  atomx::instrument::ToolSources tool;
  std::vector<std::string> toolArgs;
  bool quiet = false, shipped = false;
  atomx::rewrite::RewriteOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc) out = argv[++i];
    else if (a == "--poison-original") options.poisonOriginal = true;
    else if (a == "--report" && i + 1 < argc) reportPath = argv[++i];
    else if (a == "--pad-instructions" && i + 1 < argc) {
      const std::string n = argv[++i];
      if (n.empty() || n.size() > 2 || n.find_first_not_of("0123456789") != std::string::npos || std::stoi(n) > 64)
        usageError("--pad-instructions needs a number from 0 to 64");
      options.padInstructions = uint32_t(std::stoi(n));
    }
    else if (a == "--pad-instructions") usageError("--pad-instructions needs a number from 0 to 64");
    else if (a == "-o" || a == "--report") usageError(a + " needs a file name");
    else if (a == "-q") quiet = true;
    else if (a == "-T" && i + 1 < argc) {
      if (!tool.instrumentation.empty()) usageError("-T and tool source files do not combine");
      tool = atomx::instrument::shippedTool(argv[++i]);
      shipped = true;
    }
    else if (a == "-T") usageError("-T needs a tool name");
    else if (a == "--") {
      toolArgs.insert(toolArgs.end(), argv + i + 1, argv + argc);
      break;
    }
    else if (!a.empty() && a[0] == '-') usageError("unknown option " + a);
    else if (atomx::instrument::isSourceFile(a) && toolArgs.empty()) {
      if (shipped) usageError("-T and tool source files do not combine");
      if (tool.instrumentation.empty()) tool.instrumentation = a;
      else tool.analysis.push_back(a);
    }
    else if (prog.empty()) prog = a;
    else if (!tool.instrumentation.empty()) toolArgs.push_back(a);
    else usageError("unexpected argument " + a);
  }
  if (prog.empty()) usageError("no program given");
  if (out.empty()) usageError("no output file given (-o OUT)");
  if (!tool.instrumentation.empty() && tool.analysis.empty())
    usageError("an instrumentation file needs analysis files too: atomx PROG INST.c ANAL.c -o OUT");
  if (!tool.instrumentation.empty() && options.padInstructions)
    usageError("--pad-instructions is a check mode of the plain rewrite; it does not combine with a tool");
  if (tool.instrumentation.empty() && !toolArgs.empty()) usageError("tool arguments given, but no tool");

  // The image and the rewriter live until the process exits: freeing a large
  // program's IR one block at a time costs more than the rest of the
  // rewrite's bookkeeping (compilers skip it for the same reason).
  auto& image = *new atomx::elf::ElfImage(atomx::elf::ElfImage::load(prog));
  auto& rewriter = *new atomx::rewrite::Rewriter(image, options);
  const atomx::instrument::Engine* engine = nullptr;
  atomx::instrument::Instrumenter* instrumenter = nullptr;
  if (!tool.instrumentation.empty()) {
    // Build the tool first: a compile error should not wait for the analysis.
    atomx::instrument::ToolBuild build(tool);
    rewriter.analyze();
    auto* e = new atomx::instrument::Engine(rewriter.program(), rewriter.decoder(), prog);
    atomx::instrument::Engine::setCurrent(e);
    build.runInstrument(toolArgs);
    atomx::instrument::Engine::setCurrent(nullptr);
    const std::set<std::string> defined = build.analysisFunctions();
    for (const atomx::instrument::Prototype& p : e->routines())
      if (!defined.count(p.name))
        throw atomx::Error(p.name + " is declared by " + tool.instrumentation + " but no analysis file defines it" +
                           " (in C++, declare it extern \"C\")");
    engine = e;
    instrumenter = new atomx::instrument::Instrumenter(*e, build.analysisObject(), out);
    rewriter.setInstrumenter(instrumenter);
  }  // the temporary build directory goes here; the plugin stays loaded
  std::vector<uint8_t> bytes = rewriter.rewrite();
  writeFile(out, bytes, true);
  if (!quiet && instrumenter)
    std::fprintf(stderr, "atomx: %s: %zu analysis routine(s), %zu call(s) at %zu site(s)\n", out.c_str(),
                 engine->routines().size(), engine->calls().size(), instrumenter->siteCount());
  if (!reportPath.empty()) {
    std::ofstream r(reportPath);
    if (!r) throw atomx::Error(reportPath + ": cannot create report file");
    atomx::rewrite::writeJsonReport(rewriter, prog, out, r);
  }
  if (!quiet) atomx::rewrite::printSummary(rewriter, prog, std::cerr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string first = argv[1];
  if (first == "--help" || first == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (first == "--version") {
    std::puts("atomx 0.1");
    return 0;
  }
  try {
    if (first == "dump") return runDump(argc, argv);
    return runRewrite(argc, argv);
  } catch (const atomx::InternalError& e) {
    std::fprintf(stderr, "atomx: internal error: %s\n", e.what());
    return 3;
  } catch (const atomx::Error& e) {
    std::fprintf(stderr, "atomx: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "atomx: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    // Not an atomx::Error: a bug in atomx, but still one line, not an abort.
    std::fprintf(stderr, "atomx: internal error: %s\n", e.what());
    return 3;
  }
}
