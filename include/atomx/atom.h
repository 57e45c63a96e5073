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

#ifdef __cplusplus
}
#endif

#endif
