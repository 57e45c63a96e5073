// pipe tool, instrumentation side: the pipeline model of README.md, applied
// to every basic block here, at rewrite time; at run time each block only
// bumps its counter (pipe_anal.cpp), and the report weights the static
// costs by the counts.
#include <atomx/atomx.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace atomx;

namespace {
struct Model {
  long load = 4, mul = 3, div = 25, fp = 4, fpdiv = 15;
} model;

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Cycles from issue until the instruction's results can be used.
long latency(Inst i) {
  const std::string m = i.mnemonic(), c = i.category();
  long op = 1;
  if (m == "div" || m == "idiv") op = model.div;
  else if (m == "mul" || m == "imul" || m == "mulx") op = model.mul;
  else if (c == "SSE" || c.rfind("AVX", 0) == 0 || c == "X87_ALU" || c == "FMA4" || c == "VFMA" ||
           (c == "CONVERT" && has(m, "cvt")))
    op = has(m, "div") || has(m, "sqrt") ? model.fpdiv : model.fp;
  return i.isLoad() ? model.load + op - 1 : op;
}

// Registers the instruction waits for.  A zero idiom (xor %eax,%eax,
// pxor %xmm0,%xmm0 ...) depends on nothing.
uint64_t waitsFor(Inst i) {
  const std::string m = i.mnemonic(), t = i.text();
  static const char* const zeroing[] = {"xor", "sub", "pxor", "xorps", "xorpd", "vpxor", "vxorps", "vxorpd", "psubd", "psubq"};
  if (std::find(std::begin(zeroing), std::end(zeroing), m) != std::end(zeroing)) {
    const size_t sp = t.find(' '), comma = t.find(", ");
    if (sp != std::string::npos && comma != std::string::npos && t.find(", ", comma + 2) == std::string::npos &&
        t.substr(sp + 1, comma - sp - 1) == t.substr(comma + 2) && t[sp + 1] == '%')
      return 0;
  }
  return i.regsRead();
}

struct Cost {
  long insts = 0, stalls = 0, worstStall = 0;
  Inst worst;
};

// Single issue, in order: an instruction issues one cycle after the one
// before it, or later when a register (or the flags) it reads is not ready.
// Every register is ready when the block starts.
Cost schedule(Block b, bool explain) {
  long ready[64] = {};
  long t = -1;
  Cost c;
  for (Inst i : b.insts()) {
    const uint64_t reads = waitsFor(i), writes = i.regsWritten();
    long issue = t + 1;
    for (int r = 0; r < 64; ++r)
      if (reads >> r & 1) issue = std::max(issue, ready[r]);
    const long stall = issue - (t + 1), lat = latency(i);
    if (stall > c.worstStall) c.worstStall = stall, c.worst = i;
    c.stalls += stall, ++c.insts, t = issue;
    for (int r = 0; r < 64; ++r)
      if (writes >> r & 1) ready[r] = issue + lat;
    // The stack engine: push/pop/call/ret update %rsp for the next cycle.
    const std::string cat = i.category();
    if ((cat == "PUSH" || cat == "POP" || cat == "CALL" || cat == "RET") && (writes & regBit(Reg::rsp)))
      ready[int(Reg::rsp)] = issue + 1;
    if (explain)
      std::fprintf(stderr, "  %#10lx  cycle %3ld  stall %2ld  latency %2ld  %s\n", (unsigned long)i.pc(), issue, stall,
                   lat, i.text().c_str());
  }
  return c;
}
}  // namespace

extern "C" void Instrument(int argc, char** argv) {
  long top = 10;
  std::vector<std::string> explain;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    const char* v = k + 1 < argc ? argv[k + 1] : nullptr;
    long* lat = a == "--load" ? &model.load : a == "--mul" ? &model.mul : a == "--div" ? &model.div
              : a == "--fp" ? &model.fp : a == "--fpdiv" ? &model.fpdiv : nullptr;
    if (lat) *lat = optionNumber("pipe", a, v, 1, 1000), ++k;
    else if (a == "--top") top = optionNumber("pipe", a, v, 1, 1000), ++k;
    else if (a == "--explain" && v) explain.push_back(v), ++k;
    else
      throw Error("pipe: unknown option or missing value '" + a +
                  "' (options: --top N, --load N, --mul N, --div N, --fp N, --fpdiv N, --explain PROC)");
  }
  Routine init("PipeInit(long, long, int[], long[], int[], char*, long[])");
  Counters blockCount;  // per block: exact counts at program end (Counters::count)
  Routine report("PipeReport(long*)");

  // Per block, what the model says: stalls and the worst instruction; the
  // rest (addresses, procedures, instruction counts) the analysis side reads
  // from the facts atomx embeds (<atomx/facts.h>).
  embedFacts();
  std::vector<long> worstPc;
  std::vector<int> stalls, worstStall;
  std::string worstText;
  long n = 0;
  for (Proc p : program().procs()) {
    const bool ex = std::find(explain.begin(), explain.end(), p.name()) != explain.end();
    for (Block b : p.blocks()) {
      if (ex) std::fprintf(stderr, "pipe: %s block %#lx\n", std::string(p.name()).c_str(), (unsigned long)b.pc());
      const Cost c = schedule(b, ex);
      blockCount.count(b, b.id());
      ++n;
      stalls.push_back(int(c.stalls));
      worstStall.push_back(int(c.worstStall));
      worstPc.push_back(c.worst ? long(c.worst.pc()) : 0);
      worstText += (c.worst ? c.worst.text() : std::string()) + "\n";
    }
  }
  stalls.push_back(0), worstStall.push_back(0), worstPc.push_back(0);  // never empty arrays
  const std::vector<long> params = {model.load, model.mul, model.div, model.fp, model.fpdiv};
  // Both at the end, in this order: a process that reports nothing (killed
  // by SIGKILL) reads no facts, and with --defer-end none of it runs in the
  // program (docs/instrumenting.md, "Deferring the end").
  init.atProgramEnd(n, top, stalls, worstPc, worstStall, worstText, params);
  report.atProgramEnd(blockCount);
}
