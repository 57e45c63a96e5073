// For the procedures named on the command line: every instruction with
// memory operands reports its PC, effective addresses and access sizes; the
// first instruction of each reports %rdi, %rsi, %rdx (REGV).  With the tool
// argument "rsp", also REGV RegRSP at the first instruction; with "done",
// MemDone() at program end (mem_light_anal.c writes its table then).
#include <atomx/atomx.hpp>
#include <string>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  Routine mem1("Mem1(VALUE, VALUE, VALUE)");
  Routine mem2("Mem2(VALUE, VALUE, VALUE, VALUE, VALUE)");
  Routine regs("Regs(VALUE, REGV, REGV, REGV)");
  Routine sp("Rsp(VALUE, REGV)");
  bool rsp = false, done = false;
  for (int k = 1; k < argc; ++k) rsp |= std::string(argv[k]) == "rsp", done |= std::string(argv[k]) == "done";
  if (done) Routine("MemDone()").atProgramEnd();
  for (Proc p = *program().procs().begin(); p; p = p.next()) {
    bool want = false;
    for (int k = 1; k < argc; ++k) want |= p.name() == argv[k];
    if (!want) continue;
    regs.before(p.entry().first(), pc(), reg(Reg::rdi), reg(Reg::rsi), reg(Reg::rdx));
    if (rsp) sp.before(p.entry().first(), pc(), reg(Reg::rsp));
    for (Block b = p.entry(); b; b = b.next())
      for (Inst i = b.first(); i; i = i.next()) {
        if (i.memOperandCount() == 1) mem1.before(i, pc(), effectiveAddress(0), accessSize(0));
        if (i.memOperandCount() >= 2)
          mem2.before(i, pc(), effectiveAddress(0), accessSize(0), effectiveAddress(1), accessSize(1));
      }
  }
}
