#include "CachesimCommand.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifdef ATOMX_HAVE_MPI
#include <mpi.h>
#endif

#include "analyze/Cachesim.h"
#include "driver/ProgressLine.h"
#include "support/Error.h"

namespace atomx::cli {

namespace {

constexpr const char* kUsage =
    "atomx cachesim TRACE (--config FILE | --sweep FILE) [--cachegrind-out FILE|PREFIX] [--json FILE]\n"
    "                     [--libc model|none] [--merged] [-o FILE] [-j N] [--program FILE] [-q]";

constexpr const char* kHelp = R"(
Simulate caches over a trace recorded with atomx trace (-o TRACE -- PROG ARGS),
with the simulator and configuration format of atomx run -T cachesim
(docs/cachesim.md): per executed block its instruction fetches (every
instruction in order, except one that lies in the line the previous one ended
in; one straddling two lines is a reference of both) at the run-time address,
then its data references in order (a trace recorded with --data; a
read-modify-write one read, a locked one two), then libc's modelled references
of a call (counted apart, the "libc" rows).  First levels, and any level
before the first shared one, are each thread's own; a shared level (the last,
unless the file says shared=no) sees the threads one after another, in stream
order (thread by thread), so with one thread, or private levels, the counts
equal the online tool's on the same run (but where a fault cuts a block: the
online tool counts and fetches it whole, docs/cachesim.md).

  --config FILE   the configurations of FILE (one or more, `config NAME`
        sections), all simulated over one regeneration of the trace
  --sweep FILE    the same format; each configuration (or group of them) over a
        regeneration of its own, (configuration x thread) work spread over the
        cores (-j) and, under mpirun, over the ranks: rank r simulates
        configurations r, r+K, ... of K and rank 0 writes every result
  --cachegrind-out FILE|PREFIX  a file in cachegrind's format per configuration
        (Ir, I1mr, ILmr, Dr, D1mr, ... per function and source line;
        cg_annotate FILE): with --config, FILE for the first configuration and
        STEM.NAME.cg for the others; with --sweep, PREFIX.NAME.cg for each
  --json FILE     every configuration's totals, procedures, libc rows and
        source lines as JSON (the layout of cachesim.json's configurations)
  --libc model|none  a trace with data: simulate libc's modelled references
        of its library calls (model, the default; docs/trace.md, "Library
        references") or not (none: as the online tool's --libc none)
  -o FILE         the text report (default: standard output)
  -j N            cores to use (default: all of them)
  --merged        every thread and process in one hierarchy fed in the trace's
        merged order (atomx regen --merge; docs/trace.md, "Ordering threads
        and processes"): the private levels one copy per CPU the schedule
        log says each part ran on, the shared levels one for all, and totals
        per CPU (without the log: one copy, as on one CPU)
  --program FILE  read FILE as the traced program (a saved copy)
  -q              no progress line (one is shown on a terminal)

The results are the same bytes for every -j and any number of MPI ranks.  A
trace without data (recorded without --data) simulates instruction fetches
only.  Exits 1 if a thread could not be regenerated to its
end, 2 on a usage error; a bad configuration file or trace is one line on
stderr and status 1.)";

[[noreturn]] void usage(const std::string& message) {
  throw UsageError(message + " (atomx cachesim TRACE --config FILE | --sweep FILE ...; atomx cachesim --help)");
}

#ifdef ATOMX_HAVE_MPI
// Under mpirun (Open MPI's launcher sets OMPI_COMM_WORLD_SIZE, a PMI/PMIx
// launcher PMI_SIZE or PMIX_RANK): initialise MPI; a plain run does not.
bool launchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

void sendString(const std::string& s, int to) {
  const unsigned long long n = s.size();
  MPI_Send(&n, 1, MPI_UNSIGNED_LONG_LONG, to, 0, MPI_COMM_WORLD);
  if (n) MPI_Send(s.data(), int(n), MPI_CHAR, to, 1, MPI_COMM_WORLD);
}
std::string receiveString(int from) {
  unsigned long long n = 0;
  MPI_Recv(&n, 1, MPI_UNSIGNED_LONG_LONG, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::string s(n, '\0');
  if (n) MPI_Recv(s.data(), int(n), MPI_CHAR, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return s;
}

// Rank 0 gets every configuration's outputs: its own, and rank r's for
// configurations r, r + size, ...
analyze::CachesimProcesses mpiProcesses() {
  analyze::CachesimProcesses p;
  MPI_Comm_rank(MPI_COMM_WORLD, &p.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p.size);
  const int rank = p.rank, size = p.size;
  p.gather = [rank, size](const std::vector<analyze::CachesimOutput>& mine, size_t total) {
    std::vector<analyze::CachesimOutput> all;
    if (rank != 0) {
      for (const analyze::CachesimOutput& o : mine) sendString(o.text, 0), sendString(o.json, 0), sendString(o.cg, 0);
      return all;
    }
    all.resize(total);
    // ATOMX_TEST_CACHESIM_ORDER=scheduled: rank 0's configurations first,
    // then rank 1's, ... (the must-fail twin of the MPI test).
    const char* order = std::getenv("ATOMX_TEST_CACHESIM_ORDER");
    const bool scheduled = order && std::strcmp(order, "scheduled") == 0;
    std::vector<size_t> position(total);
    for (size_t k = 0, at = 0; k < size_t(size); ++k)
      for (size_t c = k; c < total; c += size_t(size)) position[c] = scheduled ? at++ : c;
    for (size_t k = 0; k < total; ++k) {
      const int from = int(k % size_t(size));
      analyze::CachesimOutput& to = all[position[k]];
      if (from == 0) to = mine[k / size_t(size)];
      else to.text = receiveString(from), to.json = receiveString(from), to.cg = receiveString(from);
    }
    return all;
  };
  p.agree = [](bool v) {
    int in = v, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return out != 0;
  };
  return p;
}
#endif

}  // namespace

int runCachesim(int argc, char** argv) {
  std::string dir, program;
  analyze::CachesimRun run;
  analyze::CachesimFiles files;
  bool quiet = false, config = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("usage: %s\n%s\n", kUsage, kHelp);
#ifdef ATOMX_HAVE_MPI
      std::puts("\nMPI: built in (mpirun -np K atomx cachesim TRACE --sweep FILE: every rank must see TRACE and FILE)");
#else
      std::puts("\nMPI: not built in (no MPI found at build time: one process; docs/DEPENDENCIES.md)");
#endif
      return 0;
    }
    if (a == "--config" || a == "--sweep") {
      if (!run.configFile.empty()) usage("one of --config and --sweep, once");
      run.configFile = value();
      run.sweep = a == "--sweep", config = true;
    } else if (a == "--cachegrind-out") files.cgTo = value();
    else if (a == "--json") files.jsonTo = value();
    else if (a == "-o") files.textTo = value();
    else if (a == "--program") program = value();
    else if (a == "--libc") {
      const std::string v = value();
      if (v != "model" && v != "none") usage("--libc needs model or none, not '" + v + "'");
      run.libc = v == "model";
    }
    else if (a == "-q") quiet = true;
    else if (a == "--merged") run.merged = true;
    else if (a.rfind("-j", 0) == 0) {
      const std::string v = a == "-j" ? value() : a.substr(2);
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 256) usage("-j needs a number of jobs from 1 to 256, not '" + v + "'");
      run.jobs = unsigned(n);
    } else if (!a.empty() && a[0] == '-') usage("unknown option " + a);
    else if (dir.empty()) dir = a;
    else usage("more than one trace directory given");
  }
  if (dir.empty()) usage("cachesim needs a trace directory");
  if (!config) usage("cachesim needs --config FILE or --sweep FILE");
  if (files.cgTo == "-" || files.jsonTo == "-") usage("--cachegrind-out and --json need a file name");
  run.command = "atomx cachesim " + dir + (run.sweep ? " --sweep " : " --config ") + run.configFile;
  analyze::CachesimProcesses processes;
#ifdef ATOMX_HAVE_MPI
  struct Mpi {
    bool on = launchedByMpi();
    Mpi() {
      if (on) MPI_Init(nullptr, nullptr);
    }
    ~Mpi() {
      if (on) MPI_Finalize();
    }
  } mpi;
  if (mpi.on) processes = mpiProcesses();
#endif
  // A progress line on rank 0 only, and only there on a terminal.
  driver::ProgressLine line("cachesim", quiet || processes.rank != 0);
  try {
    return analyze::runCachesim(dir, program, run, files, processes, line.progress());
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
#ifdef ATOMX_HAVE_MPI
    // One rank failing alone would leave the others waiting for it.
    if (mpi.on && processes.size > 1) {
      std::fprintf(stderr, "atomx: %s\n", e.what());
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
#endif
    throw;
  }
}

}  // namespace atomx::cli
