// The ATOM-compatible C API (<atomx/atom.h>): a thin layer over the typed
// C++ API.  Handles are the C++ API's handle pointers, cast.
#include <atomx/atom.h>
#include <atomx/atomx.hpp>

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <deque>
#include <string>

#include "instrument/Engine.h"
#include "support/Hex.h"

using namespace atomx;

namespace {

template <class C> C* out(const void* d) { return reinterpret_cast<C*>(const_cast<void*>(d)); }
atomx::Inst in(::Inst* i) { return atomx::Inst(reinterpret_cast<const detail::InstData*>(i)); }
atomx::Block in(::Block* b) { return atomx::Block(reinterpret_cast<const detail::BlockData*>(b)); }
atomx::Proc in(::Proc* p) { return atomx::Proc(reinterpret_cast<const detail::ProcData*>(p)); }
atomx::Edge in(::Edge* e) { return atomx::Edge(reinterpret_cast<const detail::EdgeData*>(e)); }

// C's variadic arguments carry no types: a tool that passes 42 where the
// prototype says char* gives atomx 0x2a to read.  Each pointer atomx reads
// through is first checked by the kernel (process_vm_readv on our own
// process fails with EFAULT where nothing is mapped readable), so such a
// mistake is a message, not a crash.
bool readable(const void* p, size_t n) {
  char buf[256];
  while (n > 0) {
    const size_t k = n < sizeof buf ? n : sizeof buf;
    iovec local{buf, k}, remote{const_cast<void*>(p), k};
    const ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    if (got < 0) return errno != EFAULT;  // EPERM, ENOSYS: cannot tell, so trust it
    if (got == 0) return false;
    n -= size_t(got), p = static_cast<const char*>(p) + got;
  }
  return true;
}

// Whether `s` points at a readable NUL-terminated string (of at most 1 MB):
// mappings are whole pages, so one byte checked per page is enough.
bool readableString(const char* s) {
  for (size_t i = 0; i < (size_t(1) << 20); ++i) {
    if ((i == 0 || (reinterpret_cast<uintptr_t>(s + i) & 4095) == 0) && !readable(s + i, 1)) return false;
    if (s[i] == '\0') return true;
  }
  return false;
}

std::string badPointer(const instrument::Prototype& proto, size_t index, const void* value, const std::string& what) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "%#lx", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(value)));
  return "AddCall of " + proto.name + ": argument " + std::to_string(index + 1) + " is '" +
         proto.params[index].text + "' in the prototype " + proto.text + ", but the value passed, " + hex +
         ", is not the address of " + what + " (an argument of another C type?)";
}

// Reads the variadic arguments of an AddCall according to the routine's
// prototype, as C's default argument promotions deliver them.
std::vector<Arg> readArgs(const instrument::Prototype& proto, va_list ap) {
  std::vector<Arg> args;
  for (size_t index = 0; index < proto.params.size(); ++index) {
    const instrument::Param& p = proto.params[index];
    switch (p.kind) {
      case instrument::Param::Kind::Integer:
        if (p.size == 8) args.emplace_back(va_arg(ap, long));
        else args.emplace_back(va_arg(ap, int));
        break;
      case instrument::Param::Kind::Pointer:
        if (p.isString) {
          const char* s = va_arg(ap, const char*);
          if (s && !readableString(s)) throw Error(badPointer(proto, index, s, "a readable string"));
          if (s) args.emplace_back(s);
          else args.emplace_back(0);
        } else {
          args.emplace_back(reinterpret_cast<intptr_t>(va_arg(ap, void*)));
        }
        break;
      case instrument::Param::Kind::Value: {
        const int code = va_arg(ap, int);
        switch (code) {
          case BrCondValue: args.push_back(branchCondition()); break;
          case EffAddrValue: args.push_back(effectiveAddress(0)); break;
          case EffAddr2Value: args.push_back(effectiveAddress(1)); break;
          case AccessSizeValue: args.push_back(accessSize(0)); break;
          case BrTargetValue: args.push_back(branchTarget()); break;
          case PCValue: args.push_back(pc()); break;
          case ReturnValue: args.push_back(returnValue()); break;
          case ThreadIdValue: args.push_back(threadId()); break;
          default:
            if (code >= ProcArgValue0 && code < ProcArgValue0 + 64) args.push_back(procArg(unsigned(code - ProcArgValue0)));
            else throw Error(proto.name + ": " + std::to_string(code) + " is not a VALUE code (BrCondValue, EffAddrValue ...)");
        }
        break;
      }
      case instrument::Param::Kind::RegV: args.push_back(Arg(Arg::Kind::Register, va_arg(ap, int))); break;
      case instrument::Param::Kind::Array: {
        const int count = p.arrayLength ? int(p.arrayLength) : va_arg(ap, int);
        const void* data = va_arg(ap, const void*);
        if (count <= 0) throw Error(proto.name + ": array argument '" + p.text + "' with " + std::to_string(count) + " elements");
        if (!readable(data, size_t(count) * p.size))
          throw Error(badPointer(proto, index, data, "an array of " + std::to_string(count) + " elements"));
        args.emplace_back(data, p.size, size_t(count));
        break;
      }
    }
  }
  return args;
}

void addCall(Point point, const void* where, const char* name, va_list ap) {
  if (!name) throw Error("AddCall with a null routine name");
  Routine r = Routine::named(name);
  const instrument::Prototype& proto = instrument::Engine::current().routine(instrument::Engine::current().routineId(name));
  r.add(point, where, readArgs(proto, ap));
}

}  // namespace

extern "C" {

::Proc* GetFirstProc(void) {
  auto procs = program().procs();
  return procs.empty() ? nullptr : out<::Proc>((*procs.begin()).handle());
}
::Proc* GetNextProc(::Proc* p) { return out<::Proc>(in(p).next().handle()); }
::Proc* GetLastProc(void) {
  auto procs = program().procs();
  return procs.empty() ? nullptr : out<::Proc>(procs[procs.size() - 1].handle());
}
const char* ProcName(::Proc* p) { return in(p).name().data(); }
long ProcPC(::Proc* p) { return long(in(p).pc()); }

::Block* GetFirstBlock(::Proc* p) { return out<::Block>(in(p).entry().handle()); }
::Block* GetNextBlock(::Block* b) { return out<::Block>(in(b).next().handle()); }
::Block* GetLastBlock(::Proc* p) {
  auto blocks = in(p).blocks();
  return out<::Block>(blocks[blocks.size() - 1].handle());
}
long BlockPC(::Block* b) { return long(in(b).pc()); }
::Proc* GetBlockProc(::Block* b) { return out<::Proc>(in(b).proc().handle()); }

::Inst* GetFirstInst(::Block* b) { return out<::Inst>(in(b).first().handle()); }
::Inst* GetLastInst(::Block* b) { return out<::Inst>(in(b).last().handle()); }
::Inst* GetNextInst(::Inst* i) { return out<::Inst>(in(i).next().handle()); }
::Inst* GetPrevInst(::Inst* i) { return out<::Inst>(in(i).prev().handle()); }
long InstPC(::Inst* i) { return long(in(i).pc()); }
int InstSize(::Inst* i) { return int(in(i).size()); }
::Block* GetInstBlock(::Inst* i) { return out<::Block>(in(i).block().handle()); }

namespace {
// Strings handed to C tools, kept until the rewrite ends (a deque never moves them).
const char* keep(std::string s) {
  static std::deque<std::string> pool;
  pool.push_back(std::move(s));
  return pool.back().c_str();
}
}  // namespace

const char* InstText(::Inst* i) { return keep(in(i).text()); }
const char* InstMnemonic(::Inst* i) { return keep(in(i).mnemonic()); }
const char* InstCategory(::Inst* i) { return keep(in(i).category()); }
int InstMemOperandCount(::Inst* i) { return int(in(i).memOperandCount()); }
int InstAccessSize(::Inst* i, int operand) {
  const atomx::Inst x = in(i);
  if (operand < 0 || unsigned(operand) >= x.memOperandCount())
    throw Error("InstAccessSize: operand " + std::to_string(operand) + " of an instruction with " +
                std::to_string(x.memOperandCount()) + " memory operand(s), at " + hex(x.pc()));
  return int(x.accessSize(unsigned(operand)));
}
long InstTarget(::Inst* i) { return in(i).hasTarget() ? long(in(i).target()) : 0; }
const char* InstCalleeName(::Inst* i) { return keep(in(i).calleeName()); }
unsigned long InstRegsRead(::Inst* i) { return in(i).regsRead(); }
unsigned long InstRegsWritten(::Inst* i) { return in(i).regsWritten(); }
const char* InstSourceFile(::Inst* i) { return keep(in(i).sourceLine().file); }
int InstSourceLine(::Inst* i) { return int(in(i).sourceLine().line); }

void AtomError(const char* format, ...) {
  char message[4096];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(message, sizeof message, format ? format : "(null)", ap);
  va_end(ap);
  throw Error(message);
}

int IsInstType(::Inst* inst, InstType type) {
  const atomx::Inst i = in(inst);
  switch (type) {
    case InstTypeLoad: return i.isLoad();
    case InstTypeStore: return i.isStore();
    case InstTypeCondBr: return i.kind() == InstClass::CondBranch;
    case InstTypeUncondBr: return i.kind() == InstClass::Jump;
    case InstTypeJump: return i.kind() == InstClass::IndirectJump;
    case InstTypeCall: return i.isCall();
    case InstTypeReturn: return i.isReturn();
    case InstTypeBranch: return i.isBranch();
  }
  throw Error("IsInstType: unknown InstType " + std::to_string(int(type)));
}

::Edge* GetFirstSucc(::Block* b) {
  auto succs = in(b).succs();
  return succs.empty() ? nullptr : out<::Edge>((*succs.begin()).handle());
}
::Edge* GetNextSucc(::Edge* e) {
  const detail::EdgeData* d = in(e).handle();
  return d + 1 == d->from->endEdge ? nullptr : out<::Edge>(d + 1);
}
::Block* EdgeFrom(::Edge* e) { return out<::Block>(in(e).from().handle()); }
::Block* EdgeTo(::Edge* e) { return out<::Block>(in(e).to().handle()); }

void AddCallProto(const char* prototype) {
  if (!prototype) throw Error("AddCallProto(NULL)");
  instrument::Engine::current().declare(prototype);
}

void AddCallProgram(ProgramPlace place, const char* name, ...) {
  va_list ap;
  va_start(ap, name);
  try {
    addCall(place == ProgramBefore ? Point::ProgramBefore : Point::ProgramAfter, nullptr, name, ap);
  } catch (...) {
    va_end(ap);
    throw;
  }
  va_end(ap);
}

#define ATOMX_ADD_CALL(Handle, place, beforePoint, afterPoint, before) \
  va_list ap;                                                          \
  va_start(ap, name);                                                  \
  try {                                                                \
    addCall(place == before ? beforePoint : afterPoint, Handle, name, ap); \
  } catch (...) {                                                      \
    va_end(ap);                                                        \
    throw;                                                             \
  }                                                                    \
  va_end(ap);

void AddCallProc(::Proc* p, ProcPlace place, const char* name, ...) {
  ATOMX_ADD_CALL(in(p).handle(), place, Point::ProcBefore, Point::ProcAfter, ProcBefore)
}
void AddCallBlock(::Block* b, BlockPlace place, const char* name, ...) {
  ATOMX_ADD_CALL(in(b).handle(), place, Point::BlockBefore, Point::BlockAfter, BlockBefore)
}
void AddCallInst(::Inst* i, InstPlace place, const char* name, ...) {
  ATOMX_ADD_CALL(in(i).handle(), place, Point::InstBefore, Point::InstAfter, InstBefore)
}
void AddCallEdge(::Edge* e, const char* name, ...) {
  ATOMX_ADD_CALL(in(e).handle(), 0, Point::Edge, Point::Edge, 0)
}

}  // extern "C"
