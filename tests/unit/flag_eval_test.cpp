// An evaluated predicate's flags and condition (x86::FlagOp, emu::flags,
// emu::condition; docs/trace.md "Evaluated predicates") against the CPU:
// each flag setter form (cmp, sub, test, and, add, inc, dec at 8, 16, 32
// and 64 bits, register and immediate) runs natively on a table of values
// chosen at the edges (0, 1, -1, the sign bit, carries and overflows) and
// its RFLAGS is read with pushf; the same instruction's bytes are decoded,
// compiled by x86::compileFlags and evaluated on the same values.  The
// flags the op says it sets must equal the CPU's; and every condition code
// 0..15 must agree with the CPU's setcc on every combination of the
// status flags (loaded with popf).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "x86/Decoder.h"
#include "x86/Emulator.h"

namespace {

using namespace atomx::x86;

constexpr uint64_t kValues[] = {0,
                                1,
                                2,
                                0x7f,
                                0x80,
                                0xff,
                                0x7fff,
                                0x8000,
                                0xffff,
                                0x7fffffff,
                                0x80000000,
                                0xffffffff,
                                0x100000000,
                                0x7fffffffffffffff,
                                0x8000000000000000,
                                0xffffffffffffffff,
                                0x123456789abcdef0,
                                0xfedcba9876543210};

// One form: runs it on (a in %rdi, b in %rsi) and returns RFLAGS, and its
// bytes (between two labels in .rodata) to decode.
struct Form {
  const char* name;
  uint64_t (*run)(uint64_t a, uint64_t b);
  const char* bytes;
  const char* bytesEnd;
};

// Each form is a function of its own: the instruction (a in %rdi, b in
// %rsi, the SysV argument registers), then pushf into %rax.
#define FORM(NAME, INSN)                                                                         \
  extern "C" uint64_t form_##NAME(uint64_t a, uint64_t b);                                     \
  extern "C" const char form_##NAME##_end[];                                                   \
  asm(".text\n form_" #NAME ":\n " INSN "\n form_" #NAME "_end:\n pushfq\n pop %rax\n ret\n");
FORM(cmpq, "cmp %rsi, %rdi")
FORM(cmpl, "cmp %esi, %edi")
FORM(cmpw, "cmp %si, %di")
FORM(cmpb, "cmp %sil, %dil")
FORM(cmpqi, "cmp $-3, %rdi")
FORM(cmpli, "cmpl $0x7ffffff0, %edi")
FORM(cmpbi, "cmpb $0x80, %dil")
FORM(subq, "sub %rsi, %rdi")
FORM(subl, "sub %esi, %edi")
FORM(testq, "test %rsi, %rdi")
FORM(testl, "test %edi, %edi")
FORM(testb, "test %sil, %dil")
FORM(andwi, "and $0x8001, %di")
FORM(addq, "add %rsi, %rdi")
FORM(addl, "add %esi, %edi")
FORM(addw, "add %si, %di")
FORM(addqi, "add $1, %rdi")
FORM(incq, "inc %rdi")
FORM(incl, "inc %edi")
FORM(decq, "dec %rdi")
FORM(decl, "dec %edi")
FORM(decw, "dec %di")
FORM(decb, "dec %dil")

#define F(NAME) {#NAME, form_##NAME, reinterpret_cast<const char*>(&form_##NAME), form_##NAME##_end}
const Form kForms[] = {F(cmpq), F(cmpl),  F(cmpw),  F(cmpb), F(cmpqi), F(cmpli), F(cmpbi), F(subq),
                       F(subl), F(testq), F(testl), F(testb), F(andwi), F(addq), F(addl),  F(addw),
                       F(addqi), F(incq), F(incl),  F(decq), F(decl),  F(decw), F(decb)};

// RFLAGS (CF bit 0, PF 2, AF 4, ZF 6, SF 7, OF 11) as x86::flag numbers them.
uint8_t statusFlags(uint64_t r) {
  return uint8_t((r & 1) | (r >> 1 & 2) | (r >> 2 & 4) | (r >> 3 & 8) | (r >> 3 & 16) | (r >> 6 & 32));
}

TEST(FlagEval, SettersAgreeWithTheCpu) {
  Decoder d;
  for (const Form& form : kForms) {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    ASSERT_TRUE(d.decodeFull(reinterpret_cast<const uint8_t*>(form.bytes), size_t(form.bytesEnd - form.bytes), insn, ops))
        << form.name;
    const FlagOp op = compileFlags(insn, ops);
    ASSERT_NE(op.kind, FlagKind::None) << form.name;
    const uint8_t set = flagsSet(op);
    for (uint64_t a : kValues)
      for (uint64_t b : kValues) {
        RegisterFile f;
        f.gpr[7] = a;  // rdi
        f.gpr[6] = b;  // rsi
        const uint8_t cpu = statusFlags(form.run(a, b));
        const uint8_t emu = emu::flags(op, f);
        // The flags a condition can read (AF is never computed).
        EXPECT_EQ(emu & set, cpu & set) << form.name << " a=" << std::hex << a << " b=" << b;
      }
  }
}

TEST(FlagEval, OthersAreNotCompiled) {
  // cmp with a memory operand, adc, a high-byte register, a locked add.
  const uint8_t kBytes[][8] = {{0x48, 0x39, 0x07},        // cmp %rax,(%rdi)
                               {0x48, 0x11, 0xc7},        // adc %rax,%rdi
                               {0x38, 0xe0},              // cmp %ah,%al
                               {0xf0, 0x48, 0x01, 0x07}};  // lock add %rax,(%rdi)
  const size_t kLen[] = {3, 3, 2, 4};
  Decoder d;
  for (size_t k = 0; k < 4; ++k) {
    ZydisDecodedInstruction insn;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
    ASSERT_TRUE(d.decodeFull(kBytes[k], kLen[k], insn, ops)) << k;
    EXPECT_EQ(compileFlags(insn, ops).kind, FlagKind::None) << k;
  }
}

// setcc for condition cc after loading the status flags `fl` with popf.
#define SETCC(CC)                                                                        \
  [](uint64_t fl) {                                                                      \
    uint8_t r;                                                                           \
    asm volatile("push %1\n popfq\n set" CC " %0" : "=r"(r) : "r"(fl) : "cc", "memory"); \
    return r != 0;                                                                       \
  }

TEST(FlagEval, ConditionsAgreeWithTheCpu) {
  bool (*const setcc[16])(uint64_t) = {SETCC("o"), SETCC("no"), SETCC("b"), SETCC("ae"), SETCC("e"),  SETCC("ne"),
                                       SETCC("be"), SETCC("a"),  SETCC("s"), SETCC("ns"), SETCC("p"), SETCC("np"),
                                       SETCC("l"), SETCC("ge"), SETCC("le"), SETCC("g")};
  // Every combination of CF PF ZF SF OF (RFLAGS bits 0, 2, 6, 7, 11).
  for (unsigned combo = 0; combo < 32; ++combo) {
    const uint8_t fl = uint8_t((combo & 1) | (combo & 2) | (combo & 4) << 1 | (combo & 8) << 1 | (combo & 16) << 1);
    const uint64_t rflags = 0x202 | (fl & 1) | (fl & 2) << 1 | (fl & 8) << 3 | (fl & 16) << 3 | (fl & 32) << 6;
    for (uint8_t cc = 0; cc < 16; ++cc) {
      EXPECT_EQ(emu::condition(cc, fl), setcc[cc](rflags)) << "cc " << int(cc) << " flags " << int(fl);
      // The flags it reads decide it.
      EXPECT_EQ(emu::condition(cc, fl), emu::condition(cc, fl & emu::conditionFlags(cc))) << int(cc);
    }
  }
}

}  // namespace
