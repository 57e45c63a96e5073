// The ATOM-compatible C API (<atomx/atom.h>): a thin layer over the typed
// C++ API.  Handles are the C++ API's handle pointers, cast.
#include <atomx/atom.h>
#include <atomx/atomx.hpp>

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
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

// The variadic arguments of an AddCall, read one at a time as the
// prototype asks for them.  The AddCall macros of <atomx/atom.h> pass each
// with its C type (AtomxTypedArg, after ATOMX_TYPED_ARGS and their count):
// then every argument is checked against its parameter, and a missing or
// extra one is an error.  Called as the functions themselves, the
// arguments come untyped, and are read as C's default argument promotions
// deliver what the prototype says.
class ArgSource {
 public:
  // `site`: the call as messages name it ("Probe at InstBefore 0x1139 (loop_sum)").
  ArgSource(const instrument::Prototype& proto, std::string site, va_list ap) : proto_(proto), site_(std::move(site)) {
    va_copy(ap_, ap);
    va_list probe;
    va_copy(probe, ap);
    if (va_arg(probe, long long) == ATOMX_TYPED_ARGS) {
      const int count = va_arg(probe, int);
      for (int k = 0; k < count && k < 1024; ++k) typed_.push_back(va_arg(probe, AtomxTypedArg));
      isTyped_ = true;
      size_t wanted = 0;
      for (const instrument::Param& p : proto.params) wanted += p.kind == instrument::Param::Kind::Array && !p.arrayLength ? 2 : 1;
      if (size_t(count) != wanted)
        throw Error(site_ + ": the prototype " + proto.text + " takes " + std::to_string(wanted) +
                    " argument(s) after the name" +
                    (wanted != proto.params.size() ? " (an array without a length takes its count and its address)" : "") +
                    ", the call passes " + std::to_string(count));
    }
    va_end(probe);
  }
  ~ArgSource() { va_end(ap_); }
  ArgSource(const ArgSource&) = delete;
  ArgSource& operator=(const ArgSource&) = delete;

  // An integer for parameter `index` (`bytes` wide: int or long untyped).
  long long integer(size_t index, size_t bytes) {
    if (!isTyped_) return bytes == 8 ? va_arg(ap_, long) : va_arg(ap_, int);
    const AtomxTypedArg& a = next();
    if (a.kind == AtomxArgSigned) return a.v.i;
    if (a.kind == AtomxArgUnsigned) return (long long)a.v.u;
    throw wrong(index, a, "an integer");
  }
  // An address (a string, an array, any pointer) for parameter `index`;
  // the integer 0 is a null pointer, another integer is kept to be
  // checked as an address (`badPointer`).
  const void* pointer(size_t index) {
    if (!isTyped_) return va_arg(ap_, const void*);
    const AtomxTypedArg& a = next();
    if (a.kind == AtomxArgString || a.kind == AtomxArgPointer) return a.v.p;
    if (a.kind == AtomxArgSigned || a.kind == AtomxArgUnsigned) return reinterpret_cast<const void*>(uintptr_t(a.v.u));
    throw wrong(index, a, "an address");
  }

 private:
  const AtomxTypedArg& next() { return typed_.at(taken_++); }
  // "Probe at ...: argument 1 ('int' in the prototype Probe(int)) is 3.5, a floating-point value: an integer is needed"
  Error wrong(size_t index, const AtomxTypedArg& a, const std::string& needed) const {
    std::string value;
    if (a.kind == AtomxArgFloat) {
      char b[64];
      std::snprintf(b, sizeof b, "%g", a.v.d);
      value = std::string(b) + ", a floating-point value";
    } else if (a.kind == AtomxArgString) {
      const char* text = static_cast<const char*>(a.v.p);
      value = text && readableString(text) && std::strlen(text) <= 40 ? "a string, \"" + std::string(text) + "\"" : "a string";
    } else {
      value = "a pointer (" + hex(uint64_t(uintptr_t(a.v.p))) + ")";
    }
    return Error(site_ + ": argument " + std::to_string(index + 1) + " ('" +
                 proto_.params[index].text + "' in the prototype " + proto_.text + ") is " + value + ": " + needed +
                 " is needed");
  }

  const instrument::Prototype& proto_;
  const std::string site_;
  va_list ap_;
  bool isTyped_ = false;
  std::vector<AtomxTypedArg> typed_;
  size_t taken_ = 0;
};

// Reads the variadic arguments of an AddCall according to the routine's
// prototype.
std::vector<Arg> readArgs(const instrument::Prototype& proto, ArgSource& in) {
  std::vector<Arg> args;
  for (size_t index = 0; index < proto.params.size(); ++index) {
    const instrument::Param& p = proto.params[index];
    switch (p.kind) {
      case instrument::Param::Kind::Integer:
        args.emplace_back(long(in.integer(index, p.size == 8 ? 8 : 4)));
        break;
      case instrument::Param::Kind::Pointer:
        if (p.isString) {
          const char* s = static_cast<const char*>(in.pointer(index));
          if (s && !readableString(s)) throw Error(badPointer(proto, index, s, "a readable string"));
          if (s) args.emplace_back(s);
          else args.emplace_back(0);
        } else {
          args.emplace_back(reinterpret_cast<intptr_t>(in.pointer(index)));
        }
        break;
      case instrument::Param::Kind::Value: {
        const long long code = in.integer(index, 4);
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
      case instrument::Param::Kind::RegV: args.push_back(Arg(Arg::Kind::Register, int(in.integer(index, 4)))); break;
      case instrument::Param::Kind::Array: {
        const long long count = p.arrayLength ? (long long)p.arrayLength : in.integer(index, 4);
        const void* data = in.pointer(index);
        if (count <= 0 || count > INT32_MAX)
          throw Error(proto.name + ": array argument '" + p.text + "' with " + std::to_string(count) + " elements");
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
  ArgSource in(proto, proto.name + " at " + instrument::Engine::current().describe(point, where), ap);
  r.add(point, where, readArgs(proto, in));
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

void (AddCallProgram)(ProgramPlace place, const char* name, ...) {
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

void (AddCallProc)(::Proc* p, ProcPlace place, const char* name, ...) {
  ATOMX_ADD_CALL(in(p).handle(), place, Point::ProcBefore, Point::ProcAfter, ProcBefore)
}
void (AddCallBlock)(::Block* b, BlockPlace place, const char* name, ...) {
  ATOMX_ADD_CALL(in(b).handle(), place, Point::BlockBefore, Point::BlockAfter, BlockBefore)
}
void (AddCallInst)(::Inst* i, InstPlace place, const char* name, ...) {
  ATOMX_ADD_CALL(in(i).handle(), place, Point::InstBefore, Point::InstAfter, InstBefore)
}
void (AddCallEdge)(::Edge* e, const char* name, ...) {
  ATOMX_ADD_CALL(in(e).handle(), 0, Point::Edge, Point::Edge, 0)
}

}  // extern "C"
