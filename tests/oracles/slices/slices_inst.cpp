// The slices oracle, rewrite side (README.md): proves analysis::DataSlices
// exact on a real run.  It reads the analysis' result -- `atomx dump
// --slices --table PROG`, at the path in $ATOMX_SLICES_TABLE -- and adds
//   - at every RECORD-AT-ENTRY site (a block's start) a call that receives
//     the recorded registers' values (REGV) and, at a procedure's entry,
//     opens a shadow frame;
//   - after every instruction the analysis emulates, a call that repeats it
//     on the shadow registers with the op the analysis compiled (three
//     constants: x86/EmulatorCore.h, the emulator's own code);
//   - after every RECORD-AFTER site (a call: when it returns) a call that
//     receives the recorded registers, added after the emulation at the
//     same instruction (leave: %rsp emulated from the old %rbp, then %rbp
//     recorded);
//   - before every memory instruction a call that receives each operand's
//     real effective address and compares it with the one computed from
//     the shadow registers (slices_anal.cpp).
// Nothing here decides what is recorded or emulated: that is the table's.
// Not checked: _start, which runs before the analysis object is loaded.
//
// $ATOMX_SLICES_BREAK (the must-fail twins): "drop" removes %rsp from the
// record site at main's entry; "emu" makes the analysis side add one to
// the result of every emulated add; "slot" adds 8 to every register a
// stack slot's reload gives (DataSlices.h).
#include <atomx/atomx.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace atomx;

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error("slices oracle: " + msg); }

struct Table {
  std::map<uint64_t, long> entry;               // block start -> registers recorded
  std::map<uint64_t, long> after;               // instruction -> registers recorded after it
  std::map<uint64_t, std::vector<long>> emu;    // instruction -> the op's three words
  std::map<uint64_t, std::string> mem;          // instruction -> per operand S, C or R
  std::map<uint64_t, std::string> procs;        // procedure start -> name
};

Table readTable(const char* path) {
  if (!path || !*path) fail("set ATOMX_SLICES_TABLE to the output of `atomx dump --slices --table PROG`");
  std::ifstream in(path);
  if (!in) fail(std::string("cannot read ") + path);
  Table t;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::string kind, pcText;
    s >> kind >> pcText;
    const uint64_t pc = std::stoull(pcText, nullptr, 16);
    if (kind == "proc") {
      std::string name;
      s >> name;
      t.procs[pc] = name;
    } else if (kind == "entry") {
      s >> t.entry[pc];
    } else if (kind == "after") {
      s >> t.after[pc];
    } else if (kind == "emu") {
      std::vector<long> w(3);
      s >> w[0] >> w[1] >> w[2];
      t.emu[pc] = w;
    } else if (kind == "mem") {
      unsigned k = 0;
      char c = 0;
      s >> k >> c;
      std::string& m = t.mem[pc];
      if (m.size() != k) fail("table: operands of " + pcText + " out of order");
      m += c;
    } else {
      fail("table: unknown line '" + line + "'");
    }
  }
  return t;
}

// Records `mask`'s registers: 13 per call at most; the first call of an
// entry site says which kind (slices_anal.cpp: 1 the procedure's entry,
// which opens a shadow frame; 2 another block where the state is lost).
void record(const Routine& rec, Point point, Inst i, long proc, long mask, int entry) {
  std::vector<int> regs;
  for (int r = 0; r < 16; ++r)
    if (mask & (1L << r)) regs.push_back(r);
  size_t k = 0;
  do {
    long part = 0;
    std::vector<Arg> args;
    args.push_back(Arg(proc << 2 | long(entry)));
    args.push_back(Arg(0L));  // the mask, filled below
    args.push_back(reg(Reg::rsp));
    for (unsigned n = 0; n < 13; ++n) {
      if (k < regs.size()) {
        part |= 1L << regs[k];
        args.push_back(reg(Reg(regs[k++])));
      } else {
        args.push_back(reg(Reg::rax));
      }
    }
    args[1] = Arg(part);
    rec.add(point, i.handle(), args);
    entry = 0;
  } while (k < regs.size());
}

}  // namespace

extern "C" void Instrument(int, char**) {
  Table t = readTable(std::getenv("ATOMX_SLICES_TABLE"));
  const char* report = std::getenv("ATOMX_SLICES_REPORT");
  const std::string breakMode = std::getenv("ATOMX_SLICES_BREAK") ? std::getenv("ATOMX_SLICES_BREAK") : "";
  if (!breakMode.empty() && breakMode != "drop" && breakMode != "emu" && breakMode != "slot")
    fail("ATOMX_SLICES_BREAK: drop, emu or slot");

  Routine init("SlInit(char*, long[], char*, long, long, long)");
  Routine rec("SlRecord(long, long, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV, REGV)");
  Routine emu("SlEmulate(long, REGV, long, long, long)");
  Routine check("SlCheck(long, REGV, VALUE, VALUE, VALUE, VALUE)");
  Routine fini("SlReport()");

  // Per check site: pc, procedure, instruction text, operand count, then per
  // operand: class (0 static, 1 computed, 2 recorded), base, index, scale,
  // disp, segment (0 none, 1 fs, 2 gs), address width | rip-relative << 8,
  // the rip-relative operand's original address.
  std::vector<long> sites;
  std::vector<char> names, texts;  // procedure names; instruction texts (NUL after each)
  long nproc = 0, nsites = 0;
  bool dropped = false;
  for (Proc p : program().procs()) {
    auto name = t.procs.find(p.pc());
    if (name == t.procs.end()) fail("procedure " + std::string(p.name()) + " is not in the table");
    const long procIndex = nproc++;
    appendString(names, std::string(p.name()));
    // The process's entry runs before the analysis object is loaded: the
    // call at its entry site never arrives, so its frame cannot be checked
    // (the recorder's stores are inline code, which run there).
    if (p.name() == "_start") continue;
    for (Block b : p.blocks()) {
      for (Inst i : b.insts()) {
        const uint64_t pc = i.pc();
        if (i == b.first()) {
          if (auto e = t.entry.find(pc); e != t.entry.end()) {
            long mask = e->second;
            if (breakMode == "drop" && !dropped && p.name() == "main" && i == p.entry().first() && (mask & 16)) {
              mask &= ~16L;
              dropped = true;
            }
            // A .cold part is entered by a jump from its hot part, in the
            // hot part's frame: not a new frame.
            const bool cold = std::string(p.name()).find(".cold") != std::string::npos;
            record(rec, Point::InstBefore, i, procIndex, mask, b == p.entry() && !cold ? 1 : 2);
          }
        }
        const std::string& classes = t.mem[pc];
        if (classes.size() != i.memOperandCount())
          fail("the table and the API disagree on the memory operands of " + i.text() + " at " + std::to_string(pc));
        if (!classes.empty()) {
          sites.insert(sites.end(), {long(pc), procIndex, nsites, long(classes.size())});
          appendString(texts, i.text());
          std::vector<Arg> args = {Arg(nsites++), reg(Reg::rsp)};
          for (unsigned k = 0; k < 4; ++k) {
            if (k < classes.size()) {
              const MemoryOperand m = i.memOperand(k);
              const long cls = classes[k] == 'S' ? 0 : classes[k] == 'C' ? 1 : 2;
              const long seg = m.segment == MemoryOperand::Segment::FS ? 1 : m.segment == MemoryOperand::Segment::GS ? 2 : 0;
              sites.insert(sites.end(), {cls, long(m.base), long(m.index), long(m.scale), long(m.disp), seg,
                                         long(m.addressWidth) | long(m.ripRelative) << 8, long(m.target)});
              args.push_back(cls == 2 || m.vectorIndex >= 0 ? Arg(0L) : effectiveAddress(k));
            } else {
              sites.insert(sites.end(), {2, -1, -1, 0, 0, 0, 64, 0});
              args.push_back(Arg(0L));
            }
          }
          check.add(Point::InstBefore, i.handle(), args);
        }
        if (auto e = t.emu.find(pc); e != t.emu.end())
          emu.after(i, procIndex, reg(Reg::rsp), e->second[0], e->second[1], e->second[2]);
        if (auto a = t.after.find(pc); a != t.after.end()) record(rec, Point::InstAfter, i, procIndex, a->second, 0);
      }
    }
  }
  if (breakMode == "drop" && !dropped) fail("ATOMX_SLICES_BREAK=drop: main's entry records no %rsp");
  sites.push_back(0);  // never an empty array
  names.insert(names.end(), texts.begin(), texts.end());
  names.push_back('\0');
  init.atProgramStart(report ? report : "", sites, names, nproc, nsites, breakMode == "emu" ? 1L : breakMode == "slot" ? 2L : 0L);
  fini.atProgramEnd();
}
