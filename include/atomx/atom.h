/* atomx: the ATOM-compatible instrumentation API (C and C++).
 *
 * The names and the model are those of ATOM (Srivastava & Eustace, PLDI 1994):
 * an instrumentation file defines
 *
 *     void Instrument(int iargc, char **iargv);
 *
 * walks Proc -> Block -> Inst with GetFirst.../GetNext..., declares analysis
 * routines with AddCallProto("Name(type, ...)") and adds calls with
 * AddCallProgram / AddCallProc / AddCallBlock / AddCallInst / AddCallEdge.
 * The variadic arguments of an AddCall follow the prototype: an integer
 * parameter takes an int or long constant (a `long` parameter takes a long),
 * `char*` a string (copied), `VALUE` one of the *Value codes below, `REGV` a
 * register number (RegRAX ...), and an array parameter `T[]` takes a count
 * (int) and a pointer to that many T (copied).
 *
 * This is a thin layer over the typed C++ API in <atomx/atomx.hpp>; every
 * call is checked the same way, and a mistake stops the rewrite with a
 * message naming the routine and the original address.
 */
#ifndef ATOMX_ATOM_H
#define ATOMX_ATOM_H

#include <stddef.h> /* NULL, which the paper's tools use */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct Proc Proc;
typedef struct Block Block;
typedef struct Inst Inst;
typedef struct Edge Edge;

typedef enum { ProgramBefore, ProgramAfter } ProgramPlace;
typedef enum { ProcBefore, ProcAfter } ProcPlace;
typedef enum { BlockBefore, BlockAfter } BlockPlace;
typedef enum { InstBefore, InstAfter } InstPlace;

typedef enum {
  InstTypeLoad,      /* reads memory */
  InstTypeStore,     /* writes memory */
  InstTypeCondBr,    /* conditional branch: jcc, loop*, jrcxz */
  InstTypeUncondBr,  /* direct unconditional jump */
  InstTypeJump,      /* indirect jump (jump tables included) */
  InstTypeCall,      /* direct or indirect call */
  InstTypeReturn,
  InstTypeBranch,    /* any control transfer */
} InstType;

/* Codes for VALUE parameters: values computed at run time. */
enum {
  BrCondValue = 1,     /* conditional branch: non-zero if it will be taken */
  EffAddrValue = 2,    /* address of the first memory operand */
  EffAddr2Value = 3,   /* address of the second memory operand (movs, push [mem] ...) */
  AccessSizeValue = 4, /* bytes accessed by the first memory operand */
  BrTargetValue = 5,   /* original address a branch goes to if taken (direct or indirect) */
  PCValue = 6,         /* original address of the point */
  ReturnValue = 7,     /* at ProcAfter: the return value (%rax) */
  ThreadIdValue = 8,   /* the kernel thread id */
  ProcArgValue0 = 16   /* ProcArgValue0 + n: at ProcBefore, integer argument n */
};
#define ProcArgValue(n) (ProcArgValue0 + (n))

/* Register numbers for REGV parameters (hardware numbering). */
enum {
  RegRAX, RegRCX, RegRDX, RegRBX, RegRSP, RegRBP, RegRSI, RegRDI,
  RegR8, RegR9, RegR10, RegR11, RegR12, RegR13, RegR14, RegR15
};

Proc *GetFirstProc(void);
Proc *GetNextProc(Proc *proc);
Proc *GetLastProc(void);
const char *ProcName(Proc *proc);
long ProcPC(Proc *proc);

Block *GetFirstBlock(Proc *proc);
Block *GetNextBlock(Block *block);
Block *GetLastBlock(Proc *proc);
long BlockPC(Block *block);
Proc *GetBlockProc(Block *block);

Inst *GetFirstInst(Block *block);
Inst *GetLastInst(Block *block);
Inst *GetNextInst(Inst *inst);
Inst *GetPrevInst(Inst *inst);
long InstPC(Inst *inst);
int InstSize(Inst *inst);
int IsInstType(Inst *inst, InstType type);
Block *GetInstBlock(Inst *inst);

/* What the C++ API's Inst says (<atomx/atomx.hpp>), for C tools.  Strings
 * stay valid until the rewrite ends. */
const char *InstText(Inst *inst);      /* AT&T syntax, absolute branch targets */
const char *InstMnemonic(Inst *inst);  /* "mov", "jnz" ... */
const char *InstCategory(Inst *inst);  /* Zydis' category: "BINARY", "COND_BR", "CALL", "SSE" ... */
/* Memory operands, explicit first, then implicit ones (the stack slot of
 * push, pop, call and ret; movs' two); lea accesses none. */
int InstMemOperandCount(Inst *inst);
int InstAccessSize(Inst *inst, int operand); /* bytes accessed by memory operand `operand` (0: the first) */
long InstTarget(Inst *inst);           /* a direct branch's original target; 0 for others */
/* The procedure or imported function a direct call or jump goes to ("main",
 * "malloc" for malloc@plt, also through the GOT); "" for others. */
const char *InstCalleeName(Inst *inst);
/* Registers read and written, as bits: RegBit(RegRAX) ... (any width: eax
 * and al are rax), RegFlagsBit (the status flags), RegVectorBit(n) (xmm,
 * ymm or zmm n); for reads also memory operands' base and index. */
unsigned long InstRegsRead(Inst *inst);
unsigned long InstRegsWritten(Inst *inst);
#define RegBit(reg) (1UL << (reg))
#define RegFlagsBit (1UL << 16)
#define RegVectorBit(n) (1UL << (32 + (n)))
/* The source line from DWARF .debug_line: the file as the line table names
 * it ("" and 0 where the program has none). */
const char *InstSourceFile(Inst *inst);
int InstSourceLine(Inst *inst);

/* Stops the rewrite: atomx prints the message (printf format) and exits
 * with status 1, as it does for its own errors; no output is written. */
void AtomError(const char *format, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

/* Successor edges of a block (fall-through, taken, jump-table targets). */
Edge *GetFirstSucc(Block *block);
Edge *GetNextSucc(Edge *edge);
Block *EdgeFrom(Edge *edge);
Block *EdgeTo(Edge *edge);

void AddCallProto(const char *prototype);
void AddCallProgram(ProgramPlace place, const char *name, ...);
void AddCallProc(Proc *proc, ProcPlace place, const char *name, ...);
void AddCallBlock(Block *block, BlockPlace place, const char *name, ...);
void AddCallInst(Inst *inst, InstPlace place, const char *name, ...);
void AddCallEdge(Edge *edge, const char *name, ...);

/* --- How the variadic arguments reach atomx: each with its C type ---------
 *
 * C's `...` loses the types of the arguments: a `long` constant where the
 * prototype says `int`, a string or 3.5 for an `int`, one argument where
 * the prototype has two, would arrive as something else, silently.  So the
 * AddCall functions are also macros of the same name: they count the
 * arguments after the routine's name and pass each with its type
 * (AtomxTypedArg, below), and atomx checks every one against the prototype:
 * the number, the kind (integer, floating point, string, pointer), and
 * that an integer constant fits its parameter.  A message names the call,
 * the parameter and the value.  (Calling `(AddCallProc)(...)`, the function
 * itself, passes the arguments untyped, as ATOM did; atomx reads them as
 * the prototype says.)  At most 32 arguments after the name. */
typedef struct {
  int kind; /* AtomxArg... */
  int pad;
  union {
    long long i;
    unsigned long long u;
    double d;
    const void *p;
  } v;
} AtomxTypedArg;
enum { AtomxArgSigned = 1, AtomxArgUnsigned, AtomxArgFloat, AtomxArgString, AtomxArgPointer };
/* After the name, the typed form passes this, then the count (int). */
#define ATOMX_TYPED_ARGS 0x47524158544f5441LL

static inline AtomxTypedArg atomx_arg_signed(long long v) {
  AtomxTypedArg a;
  a.kind = AtomxArgSigned, a.pad = 0, a.v.i = v;
  return a;
}
static inline AtomxTypedArg atomx_arg_unsigned(unsigned long long v) {
  AtomxTypedArg a;
  a.kind = AtomxArgUnsigned, a.pad = 0, a.v.u = v;
  return a;
}
static inline AtomxTypedArg atomx_arg_float(long double v) {
  AtomxTypedArg a;
  a.kind = AtomxArgFloat, a.pad = 0, a.v.d = (double)v;
  return a;
}
static inline AtomxTypedArg atomx_arg_string(const char *v) {
  AtomxTypedArg a;
  a.kind = AtomxArgString, a.pad = 0, a.v.p = v;
  return a;
}
static inline AtomxTypedArg atomx_arg_pointer(const volatile void *v) {
  AtomxTypedArg a;
  a.kind = AtomxArgPointer, a.pad = 0, a.v.p = (const void *)v;
  return a;
}

#ifdef __cplusplus
}  /* extern "C" */
#include <type_traits>
template <class T>
inline AtomxTypedArg atomx_typed_arg(T v) {
  if constexpr (std::is_same_v<std::decay_t<T>, char*> || std::is_same_v<std::decay_t<T>, const char*>)
    return atomx_arg_string(v);
  else if constexpr (std::is_pointer_v<std::decay_t<T>> || std::is_null_pointer_v<T>)
    return atomx_arg_pointer(v);
  else if constexpr (std::is_floating_point_v<T>)
    return atomx_arg_float(v);
  else if constexpr (std::is_enum_v<T>)
    return atomx_arg_signed((long long)v);
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return atomx_arg_signed(v);
  else {
    static_assert(std::is_integral_v<T>, "an AddCall argument must be an integer, a floating-point value, a string or a pointer");
    return atomx_arg_unsigned(v);
  }
}
#define ATOMX_TYPED_ARG(x) atomx_typed_arg(x)
extern "C" {
#else
#define ATOMX_TYPED_ARG(x)                                                                                      \
  _Generic((x), char: atomx_arg_signed, signed char: atomx_arg_signed, short: atomx_arg_signed,                \
           int: atomx_arg_signed, long: atomx_arg_signed, long long: atomx_arg_signed, _Bool: atomx_arg_unsigned, \
           unsigned char: atomx_arg_unsigned, unsigned short: atomx_arg_unsigned, unsigned: atomx_arg_unsigned,   \
           unsigned long: atomx_arg_unsigned, unsigned long long: atomx_arg_unsigned, float: atomx_arg_float,     \
           double: atomx_arg_float, long double: atomx_arg_float, char *: atomx_arg_string,                      \
           const char *: atomx_arg_string, default: atomx_arg_pointer)(x)
#endif

#define ATOMX_ARG_COUNT(...) ATOMX_ARG_COUNT_(__VA_ARGS__, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define ATOMX_ARG_COUNT_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, _33, N, ...) N
#define ATOMX_CAT_(a, b) a##b
#define ATOMX_CAT(a, b) ATOMX_CAT_(a, b)
/* name, then the typed form of the rest */
#define ATOMX_TYPED(...) ATOMX_CAT(ATOMX_TYPED_, ATOMX_ARG_COUNT(__VA_ARGS__))(__VA_ARGS__)
#define ATOMX_TYPED_1(n) n, ATOMX_TYPED_ARGS, 0
#define ATOMX_TYPED_2(n, a1) n, ATOMX_TYPED_ARGS, 1, ATOMX_TYPED_ARG(a1)
#define ATOMX_TYPED_3(n, a1, a2) n, ATOMX_TYPED_ARGS, 2, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2)
#define ATOMX_TYPED_4(n, a1, a2, a3) n, ATOMX_TYPED_ARGS, 3, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3)
#define ATOMX_TYPED_5(n, a1, a2, a3, a4) n, ATOMX_TYPED_ARGS, 4, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4)
#define ATOMX_TYPED_6(n, a1, a2, a3, a4, a5) n, ATOMX_TYPED_ARGS, 5, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5)
#define ATOMX_TYPED_7(n, a1, a2, a3, a4, a5, a6) n, ATOMX_TYPED_ARGS, 6, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6)
#define ATOMX_TYPED_8(n, a1, a2, a3, a4, a5, a6, a7) n, ATOMX_TYPED_ARGS, 7, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7)
#define ATOMX_TYPED_9(n, a1, a2, a3, a4, a5, a6, a7, a8) n, ATOMX_TYPED_ARGS, 8, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8)
#define ATOMX_TYPED_10(n, a1, a2, a3, a4, a5, a6, a7, a8, a9) n, ATOMX_TYPED_ARGS, 9, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9)
#define ATOMX_TYPED_11(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) n, ATOMX_TYPED_ARGS, 10, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10)
#define ATOMX_TYPED_12(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) n, ATOMX_TYPED_ARGS, 11, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11)
#define ATOMX_TYPED_13(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) n, ATOMX_TYPED_ARGS, 12, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12)
#define ATOMX_TYPED_14(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) n, ATOMX_TYPED_ARGS, 13, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13)
#define ATOMX_TYPED_15(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) n, ATOMX_TYPED_ARGS, 14, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14)
#define ATOMX_TYPED_16(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) n, ATOMX_TYPED_ARGS, 15, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15)
#define ATOMX_TYPED_17(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16) n, ATOMX_TYPED_ARGS, 16, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16)
#define ATOMX_TYPED_18(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17) n, ATOMX_TYPED_ARGS, 17, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17)
#define ATOMX_TYPED_19(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18) n, ATOMX_TYPED_ARGS, 18, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18)
#define ATOMX_TYPED_20(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19) n, ATOMX_TYPED_ARGS, 19, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19)
#define ATOMX_TYPED_21(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20) n, ATOMX_TYPED_ARGS, 20, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20)
#define ATOMX_TYPED_22(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21) n, ATOMX_TYPED_ARGS, 21, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21)
#define ATOMX_TYPED_23(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22) n, ATOMX_TYPED_ARGS, 22, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22)
#define ATOMX_TYPED_24(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23) n, ATOMX_TYPED_ARGS, 23, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23)
#define ATOMX_TYPED_25(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24) n, ATOMX_TYPED_ARGS, 24, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24)
#define ATOMX_TYPED_26(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25) n, ATOMX_TYPED_ARGS, 25, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25)
#define ATOMX_TYPED_27(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26) n, ATOMX_TYPED_ARGS, 26, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25), ATOMX_TYPED_ARG(a26)
#define ATOMX_TYPED_28(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27) n, ATOMX_TYPED_ARGS, 27, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25), ATOMX_TYPED_ARG(a26), ATOMX_TYPED_ARG(a27)
#define ATOMX_TYPED_29(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28) n, ATOMX_TYPED_ARGS, 28, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25), ATOMX_TYPED_ARG(a26), ATOMX_TYPED_ARG(a27), ATOMX_TYPED_ARG(a28)
#define ATOMX_TYPED_30(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29) n, ATOMX_TYPED_ARGS, 29, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25), ATOMX_TYPED_ARG(a26), ATOMX_TYPED_ARG(a27), ATOMX_TYPED_ARG(a28), ATOMX_TYPED_ARG(a29)
#define ATOMX_TYPED_31(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30) n, ATOMX_TYPED_ARGS, 30, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25), ATOMX_TYPED_ARG(a26), ATOMX_TYPED_ARG(a27), ATOMX_TYPED_ARG(a28), ATOMX_TYPED_ARG(a29), ATOMX_TYPED_ARG(a30)
#define ATOMX_TYPED_32(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31) n, ATOMX_TYPED_ARGS, 31, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25), ATOMX_TYPED_ARG(a26), ATOMX_TYPED_ARG(a27), ATOMX_TYPED_ARG(a28), ATOMX_TYPED_ARG(a29), ATOMX_TYPED_ARG(a30), ATOMX_TYPED_ARG(a31)
#define ATOMX_TYPED_33(n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32) n, ATOMX_TYPED_ARGS, 32, ATOMX_TYPED_ARG(a1), ATOMX_TYPED_ARG(a2), ATOMX_TYPED_ARG(a3), ATOMX_TYPED_ARG(a4), ATOMX_TYPED_ARG(a5), ATOMX_TYPED_ARG(a6), ATOMX_TYPED_ARG(a7), ATOMX_TYPED_ARG(a8), ATOMX_TYPED_ARG(a9), ATOMX_TYPED_ARG(a10), ATOMX_TYPED_ARG(a11), ATOMX_TYPED_ARG(a12), ATOMX_TYPED_ARG(a13), ATOMX_TYPED_ARG(a14), ATOMX_TYPED_ARG(a15), ATOMX_TYPED_ARG(a16), ATOMX_TYPED_ARG(a17), ATOMX_TYPED_ARG(a18), ATOMX_TYPED_ARG(a19), ATOMX_TYPED_ARG(a20), ATOMX_TYPED_ARG(a21), ATOMX_TYPED_ARG(a22), ATOMX_TYPED_ARG(a23), ATOMX_TYPED_ARG(a24), ATOMX_TYPED_ARG(a25), ATOMX_TYPED_ARG(a26), ATOMX_TYPED_ARG(a27), ATOMX_TYPED_ARG(a28), ATOMX_TYPED_ARG(a29), ATOMX_TYPED_ARG(a30), ATOMX_TYPED_ARG(a31), ATOMX_TYPED_ARG(a32)
#define AddCallProgram(place, ...) AddCallProgram(place, ATOMX_TYPED(__VA_ARGS__))
#define AddCallProc(proc, place, ...) AddCallProc(proc, place, ATOMX_TYPED(__VA_ARGS__))
#define AddCallBlock(block, place, ...) AddCallBlock(block, place, ATOMX_TYPED(__VA_ARGS__))
#define AddCallInst(inst, place, ...) AddCallInst(inst, place, ATOMX_TYPED(__VA_ARGS__))
#define AddCallEdge(edge, ...) AddCallEdge(edge, ATOMX_TYPED(__VA_ARGS__))

#ifdef __cplusplus
}
#endif

#endif
