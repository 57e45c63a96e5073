#include "instrument/ToolBuild.h"

#include <atomx/demangle.hpp>
#include <dlfcn.h>
#include <elf.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <typeinfo>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "elf/ElfImage.h"
#include "instrument/ToolCache.h"
#include "support/Directories.h"
#include "support/Error.h"
#include "support/Fnv.h"
#include "support/SearchPath.h"

extern char** environ;

namespace atomx::instrument {

namespace {

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isCxx(const std::string& path) {
  return endsWith(path, ".cpp") || endsWith(path, ".cc") || endsWith(path, ".cxx") || endsWith(path, ".C");
}

std::string compilerFor(const std::string& path) {
  const char* env = std::getenv(isCxx(path) ? "CXX" : "CC");
  return env && *env ? env : (isCxx(path) ? "c++" : "cc");
}

// Where atomx's headers and libraries are: beside the executable, as
// installed (PREFIX/bin/atomx, PREFIX/include, PREFIX/lib/atomx) or built.
std::string installRoot() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw Error("cannot find atomx's own executable (/proc/self/exe)");
  buf[n] = 0;
  return std::filesystem::path(buf).parent_path().parent_path().string();
}

void run(const std::vector<std::string>& args, const std::string& what) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw Error("cannot run " + args[0] + " to build " + what + ": " + std::strerror(errno));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw Error("building " + what + " failed (the compiler's messages are above)");
}

}  // namespace

bool isSourceFile(const std::string& path) { return endsWith(path, ".c") || isCxx(path); }

bool isLinkInput(const std::string& arg) {
  if (arg.size() > 2 && (arg.rfind("-l", 0) == 0 || arg.rfind("-L", 0) == 0)) return true;
  const std::string name = std::filesystem::path(arg).filename().string();
  return endsWith(name, ".o") || endsWith(name, ".a") || endsWith(name, ".so") ||
         (name.find(".so.") != std::string::npos && name.find_first_not_of("0123456789.", name.find(".so.") + 4) == std::string::npos);
}

std::vector<std::string> splitFlags(const std::string& flags) {
  std::vector<std::string> words;
  std::string word;
  for (char c : flags + " ") {
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!word.empty()) words.push_back(word), word.clear();
    } else {
      word += c;
    }
  }
  return words;
}

std::vector<ShippedTool> shippedTools() {
  namespace fs = std::filesystem;
  std::vector<ShippedTool> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(installRoot()) / "share" / "atomx" / "tools", ec)) {
    if (!e.is_directory()) continue;
    ShippedTool t{e.path().filename().string(), ""};
    // README.md opens with "# NAME: what it measures".
    std::ifstream readme(e.path() / "README.md");
    std::string line;
    const std::string head = "# " + t.name + ":";
    if (std::getline(readme, line) && line.rfind(head, 0) == 0) {
      const size_t text = line.find_first_not_of(' ', head.size());
      if (text != std::string::npos) t.summary = line.substr(text);
    }
    out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [](const ShippedTool& a, const ShippedTool& b) { return a.name < b.name; });
  return out;
}

ToolSources shippedTool(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path tools = fs::path(installRoot()) / "share" / "atomx" / "tools";
  ToolSources t;
  std::error_code ec;
  if (name.find('/') == std::string::npos && !name.empty() && name[0] != '.')
    for (const fs::directory_entry& e : fs::directory_iterator(tools / name, ec)) {
      const std::string file = e.path().filename().string();
      if (!isSourceFile(file)) continue;
      if (file.rfind(name + "_inst.", 0) == 0) t.instrumentation = e.path().string();
      else if (file.rfind(name + "_anal", 0) == 0) t.analysis.push_back(e.path().string());
    }
  if (t.instrumentation.empty() || t.analysis.empty()) {
    std::string list;
    for (const ShippedTool& s : shippedTools()) list += (list.empty() ? "" : ", ") + s.name;
    throw Error("no tool named '" + name + "' (shipped tools: " + (list.empty() ? "none found in " + tools.string() : list) + ")");
  }
  std::sort(t.analysis.begin(), t.analysis.end());
  return t;
}

ToolSources traceRecorder() {
  const std::string runtime = installRoot() + "/share/atomx/runtime";
  const std::string recorder = runtime + "/trace/recorder.c";
  if (access(recorder.c_str(), R_OK) != 0) throw Error(recorder + ": atomx's trace recorder is missing");
  ToolSources t{"", {runtime + "/sys.h"}, {"-lzstd"}, {}};
  std::error_code ec;
  for (const std::filesystem::directory_entry& e : std::filesystem::directory_iterator(runtime + "/trace", ec))
    if (isSourceFile(e.path().string()) || e.path().extension() == ".h") t.analysis.push_back(e.path().string());
  std::sort(t.analysis.begin(), t.analysis.end());
  return t;
}

ToolBuild::ToolBuild(const ToolSources& sources) {
  if (!sources.instrumentation.empty() && access(sources.instrumentation.c_str(), R_OK) != 0)
    throw Error(sources.instrumentation + ": cannot read the instrumentation file");
  for (const std::string& f : sources.analysis)
    if (access(f.c_str(), R_OK) != 0) throw Error(f + ": cannot read the analysis file");
  for (const std::string& f : sources.libraries)
    if (f[0] != '-' && access(f.c_str(), R_OK) != 0) throw Error(f + ": cannot read this file for the analysis object's link");
  dir_ = makeTempDir("atomx-tool.");
  try {
    build(sources);
  } catch (...) {  // a constructor that throws runs no destructor: the directory goes here
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

void ToolBuild::build(const ToolSources& sources) {
  instName_ = sources.instrumentation;
  const std::string root = installRoot();
  const std::string support = root + "/lib/atomx/libatomx_analysis.a";
  if (access(support.c_str(), R_OK) != 0) throw Error(support + ": atomx's analysis support library is missing");
  if (!instName_.empty()) plugin_ = dir_ + "/instrument.so";
  analysis_ = dir_ + "/analysis.so";
  std::vector<std::string> outputs = {"analysis.so"};
  if (!instName_.empty()) outputs.push_back("instrument.so");

  const uint64_t key = cacheKey(sources, root, support);
  const ToolCache cache;
  if (cache.fetch(key, outputs, dir_)) {
    reused_ = true;
    return;
  }
  std::vector<std::string> depFiles, inputs;
  for (const Command& c : commands(sources, dir_, root, support)) {
    run(c.args, c.what);
    if (!c.depFile.empty()) depFiles.push_back(c.depFile);
    std::error_code ec;  // the compiler: its real file (cc -> gcc-12), which an upgrade replaces
    if (const std::string compiler = searchPath(c.args[0]); !compiler.empty())
      inputs.push_back(std::filesystem::canonical(compiler, ec).string());
  }
  cache.store(key, outputs, dir_, depFiles, inputs);
}

// The cache's key: every command with the build directory left out (its
// name is new each time) and the environment the compilers read.  Not atomx
// itself: what a tool sees of it is its headers and support library, which
// are among the files an entry was made from.
uint64_t ToolBuild::cacheKey(const ToolSources& sources, const std::string& root, const std::string& support) {
  Fnv64 key;
  key.add("atomx tool build 1");
  for (const Command& c : commands(sources, "@", root, support))
    for (const std::string& a : c.args) key.add(a);
  for (const char* var : {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX",
                          "COMPILER_PATH", "LD_RUN_PATH"}) {
    const char* v = std::getenv(var);
    key.add(std::string(var) + "=" + (v ? v : ""));
  }
  return key.h;
}

std::optional<uint64_t> ToolBuild::cachedInputs(const ToolSources& sources) {
  const std::string root = installRoot();
  return ToolCache().inputsDigest(cacheKey(sources, root, root + "/lib/atomx/libatomx_analysis.a"));
}

// The instrumentation plugin, compiled and linked in one command; C is
// built with -fexceptions so API errors (C++ exceptions) can pass through
// the tool's frames.  Then each analysis file compiled, and the analysis
// object linked with the support library whole (its finish routine must be
// there even if nothing calls it).  Each writes the files it read (-MD,
// --dependency-file) for the cache.
std::vector<ToolBuild::Command> ToolBuild::commands(const ToolSources& sources, const std::string& dir,
                                                    const std::string& root, const std::string& support) {
  const std::string include = "-I" + root + "/include";
  std::vector<Command> out;
  if (!sources.instrumentation.empty()) {
    const std::string& inst = sources.instrumentation;
    Command c{{compilerFor(inst), "-shared", "-fPIC", "-g", "-O1", include}, inst, dir + "/instrument.d"};
    c.args.push_back(isCxx(inst) ? "-std=c++20" : "-fexceptions");
    c.args.insert(c.args.end(), sources.cflags.begin(), sources.cflags.end());
    c.args.insert(c.args.end(), {"-MD", "-MF", c.depFile, inst, "-o", dir + "/instrument.so"});
    out.push_back(c);
  }
  std::vector<std::string> objects;
  bool anyCxx = false;
  for (size_t i = 0; i < sources.analysis.size(); ++i) {
    const std::string& f = sources.analysis[i];
    if (!isSourceFile(f)) continue;  // a header: read by the others (-MD)
    anyCxx |= isCxx(f);
    const std::string obj = dir + "/analysis" + std::to_string(i) + ".o";
    Command c{{compilerFor(f), "-c", "-fPIC", "-O2", "-g", include}, f, obj + ".d"};
    if (isCxx(f)) c.args.push_back("-std=c++20");
    c.args.insert(c.args.end(), sources.cflags.begin(), sources.cflags.end());  // after atomx's: a user's -O3 wins
    c.args.insert(c.args.end(), {"-MD", "-MF", c.depFile, f, "-o", obj});
    out.push_back(c);
    objects.push_back(obj);
  }
  const char* linkerEnv = std::getenv(anyCxx ? "CXX" : "CC");
  Command link{{linkerEnv && *linkerEnv ? linkerEnv : (anyCxx ? "c++" : "cc"), "-shared", "-o", dir + "/analysis.so"},
               "the analysis object", dir + "/analysis.d"};
  link.args.insert(link.args.end(), objects.begin(), objects.end());
  link.args.insert(link.args.end(), sources.libraries.begin(), sources.libraries.end());
  // As `cc` links a program: libm too (a C analysis file may call log()),
  // only if used -- and so the libraries the driver adds after these (c++
  // adds libm whatever the code calls: each one more library that every
  // process loads into the analysis namespace); and every symbol must
  // resolve now (-z defs), so a missing one stops the rewrite with the
  // linker's message instead of the instrumented program dying at start-up.
  link.args.insert(link.args.end(), {"-Wl,--whole-archive", support, "-Wl,--no-whole-archive", "-Wl,--as-needed", "-lm",
                                     "-Wl,-z,defs", "-Wl,--dependency-file=" + link.depFile});
  // Every instrumented process loads this object, so its start-up cost is
  // paid per process (a shell script's hundred short runs pay it a hundred
  // times).  C++'s runtime goes in it (its own copy still: the analysis
  // namespace never shares the program's), its symbols kept inside: loading
  // a second libstdc++.so and binding its ~3,000 symbols cost ~1.3 ms of
  // the ~1.8 ms dlmopen took.  And no debug information: the runtime copies
  // the object into a memfd at every start, where no debugger finds it, and
  // it was three quarters of the bytes.
  if (anyCxx)
    link.args.insert(link.args.end(), {"-static-libstdc++", "-static-libgcc",
                                       "-Wl,--exclude-libs,libstdc++.a:libgcc.a:libgcc_eh.a"});
  link.args.push_back("-Wl,--strip-debug");
  // Nor code nothing reaches from what it exports (the routines the
  // runtime looks up): of libstdc++ and the support library, what the tool
  // uses.  dyninst's object: 306 KB -> 194 KB copied at every start.
  link.args.push_back("-Wl,--gc-sections");
  out.push_back(link);
  return out;
}

ToolBuild::~ToolBuild() {
  // The plugin stays loaded (its code may be on the stack of an exception
  // being reported); only the files go.
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

namespace {

// While the tool's Instrument runs, a crash in it is the tool's fault, not
// atomx's: the handler notes the signal and where, and jumps back to
// runInstrument, which says so in one line, where (addr2line on the
// plugin, built with -g), and fails as for any error: atomx exits 1 and
// removes what it made (the output's temporary file, the tool's build
// directory).  The tool's frames are abandoned, not unwound.
struct CrashReport {
  int signo;
  uintptr_t pc, address;
};
CrashReport crashReport;
sigjmp_buf crashJump;

void onToolCrash(int sig, siginfo_t* info, void* context) {
  crashReport.signo = sig;
  crashReport.pc = uintptr_t(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
  crashReport.address = uintptr_t(info->si_addr);
  siglongjmp(crashJump, 1);
}

std::string hexText(uintptr_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

// The plugin whose Instrument runs now (toolSourceAt).
std::string runningPlugin;

// "TOOL: its Instrument crashed (SIGSEGV, address 0x0) at PC, in the tool:
// Instrument at tool.c:12".
std::string crashMessage(const std::string& tool) {
  const CrashReport& c = crashReport;
  std::string m = tool + ": its Instrument crashed (SIG" + (sigabbrev_np(c.signo) ? sigabbrev_np(c.signo) : "NAL");
  if (c.signo == SIGSEGV || c.signo == SIGBUS) m += ", address " + hexText(c.address);
  m += ") at " + hexText(c.pc);
  const std::string where = toolSourceAt(c.pc);
  return m + (where.empty() ? " (in code the tool called)" : ", in the tool: " + where);
}

// onToolCrash for the signals of a crash, and the previous handlers back
// when it goes.
class ToolCrashHandlers {
 public:
  ToolCrashHandlers() {
    struct sigaction crash {};
    crash.sa_sigaction = onToolCrash;
    crash.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&crash.sa_mask);
    for (size_t k = 0; k < std::size(kSignals); ++k) sigaction(kSignals[k], &crash, &saved_[k]);
  }
  ~ToolCrashHandlers() {
    for (size_t k = 0; k < std::size(kSignals); ++k) sigaction(kSignals[k], &saved_[k], nullptr);
  }
  ToolCrashHandlers(const ToolCrashHandlers&) = delete;
  ToolCrashHandlers& operator=(const ToolCrashHandlers&) = delete;

 private:
  static constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  struct sigaction saved_[std::size(kSignals)];
};

}  // namespace

std::string toolSourceAt(uintptr_t pc) {
  Dl_info where;
  if (runningPlugin.empty() || !dladdr(reinterpret_cast<void*>(pc), &where) || !where.dli_fname ||
      runningPlugin != where.dli_fname)
    return "";
  std::string at = hexText(pc);
  const std::string command = "addr2line -f -p -e '" + runningPlugin + "' " + hexText(pc - uintptr_t(where.dli_fbase));
  if (FILE* p = popen(command.c_str(), "r")) {
    char line[1024];
    if (std::fgets(line, sizeof line, p)) {
      std::string text = line;
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      if (!text.empty() && text.find("??") != 0) at = text;
    }
    pclose(p);
  }
  return at;
}

void ToolBuild::runInstrument(const std::vector<std::string>& toolArgs) {
  handle_ = dlopen(plugin_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw Error(instName_ + ": cannot load the instrumentation: " + dlerror());
  auto instrument = reinterpret_cast<void (*)(int, char**)>(dlsym(handle_, "Instrument"));
  if (!instrument)
    throw Error(instName_ + ": defines no Instrument(int, char**) (in C++, declare it extern \"C\")");
  std::vector<std::string> args = {instName_};
  args.insert(args.end(), toolArgs.begin(), toolArgs.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const ToolCrashHandlers handlers;  // until Instrument returns, throws or crashes
  struct Running {  // toolSourceAt's plugin, while Instrument runs
    explicit Running(const std::string& plugin) { runningPlugin = plugin; }
    ~Running() { runningPlugin.clear(); }
  } running(plugin_);
  if (sigsetjmp(crashJump, 1) != 0) throw Error(crashMessage(instName_));
  try {
    instrument(int(args.size()), argv.data());
  } catch (const Error&) {
    throw;  // atomx's own message (a wrong call, an internal error)
  } catch (const std::exception& e) {
    throw Error(instName_ + ": its Instrument threw " + demangleType(typeid(e).name()) + ": " + e.what());
  } catch (...) {
    throw Error(instName_ + ": its Instrument threw an exception that is not a std::exception");
  }
}

std::vector<uint8_t> ToolBuild::analysisObject() const {
  std::ifstream in(analysis_, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw Error("the analysis object is empty");
  return bytes;
}

std::set<std::string> ToolBuild::analysisFunctions() const {
  // Read .dynsym: loading the object here would run its constructors.
  const elf::ElfImage object = elf::ElfImage::fromBytes(analysisObject(), analysis_);
  std::set<std::string> out;
  for (const elf::Symbol& sym : object.dynamicSymbols())
    if (sym.shndx != SHN_UNDEF && sym.type == STT_FUNC) out.insert(sym.name);
  return out;
}

}  // namespace atomx::instrument
