// The clobber tool: calls an analysis routine that clobbers everything a C
// function may clobber before every instruction, and after every instruction
// where control comes back (not after ret, indirect jmp, ud2/hlt/int3).
// Tool argument: N = do the expensive clobbers (64 KiB memcpy, stdio) on
// every Nth call only (default: $ATOMX_CLOBBER_PERIOD, else 1: every call).
// $ATOMX_CLOBBER_STRIDE=K (default 1) instruments only every Kth procedure
// (all of its instructions), starting at $ATOMX_CLOBBER_OFFSET (default 0):
// for big programs, whose every instruction would be too slow.
#include <atomx/atomx.hpp>
#include <cstdlib>

using namespace atomx;

extern "C" void Instrument(int argc, char** argv) {
  const char* env = std::getenv("ATOMX_CLOBBER_PERIOD");
  const long period = argc > 1 ? std::atol(argv[1]) : env ? std::atol(env) : 1;
  const char* strideEnv = std::getenv("ATOMX_CLOBBER_STRIDE");
  const char* offsetEnv = std::getenv("ATOMX_CLOBBER_OFFSET");
  const long stride = strideEnv ? std::atol(strideEnv) : 1;
  long index = offsetEnv ? -std::atol(offsetEnv) : 0;
  Routine clobber("Clobber(long, VALUE, REGV)");
  Routine done("ClobberDone(long)");
  for (Proc p : program().procs()) {
    const long k = index++;
    if (k < 0 || k % stride != 0) continue;
    for (Block b : p.blocks())
      for (Inst i : b.insts()) {
        clobber.before(i, period, pc(), reg(Reg::rbp));
        const InstClass c = i.kind();
        if (c != InstClass::Return && c != InstClass::IndirectJump && c != InstClass::Stop)
          clobber.after(i, period, pc(), reg(Reg::rbp));
      }
  }
  done.atProgramEnd(period);
}
