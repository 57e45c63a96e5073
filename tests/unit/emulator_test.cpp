// x86::Emulator against the CPU: each supported instruction form is
// assembled by the system assembler into this test (a label before and
// after it in .rodata), copied to an executable page, and run natively
// from a register file of chosen values (a trampoline loads all 16 general
// registers, %rsp included, jumps to the copy and stores them back); the
// same bytes are decoded, compiled to an EmuOp and emulated on the same
// register file.  The registers the op says it writes must equal the
// CPU's; the others must be the CPU's too where the instruction writes
// nothing else (a pop's destination, leave's %rbp are loads: not
// compared).  The values are chosen so that a 32-bit write that failed to
// zero-extend, or an 8/16-bit write that failed to merge, shows.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <string>
#include <vector>

#include "x86/Decoder.h"
#include "x86/Emulator.h"

extern "C" {
void emu_native_run(uint64_t* regs, const void* code);
void emu_native_back();
}

// The trampoline: rdi = the 16 registers (by hardware number), rsi = the
// code to run, which ends with a jump to emu_native_back.
asm(R"(
        .text
        .globl emu_native_run
        .type emu_native_run, @function
emu_native_run:
        push %rbx
        push %rbp
        push %r12
        push %r13
        push %r14
        push %r15
        mov %rsp, emu_saved_rsp(%rip)
        mov %rdi, emu_regs_ptr(%rip)
        mov %rsi, emu_code_ptr(%rip)
        mov 0(%rdi), %rax
        mov 8(%rdi), %rcx
        mov 16(%rdi), %rdx
        mov 24(%rdi), %rbx
        mov 32(%rdi), %rsp
        mov 40(%rdi), %rbp
        mov 48(%rdi), %rsi
        mov 64(%rdi), %r8
        mov 72(%rdi), %r9
        mov 80(%rdi), %r10
        mov 88(%rdi), %r11
        mov 96(%rdi), %r12
        mov 104(%rdi), %r13
        mov 112(%rdi), %r14
        mov 120(%rdi), %r15
        mov 56(%rdi), %rdi
        jmp *emu_code_ptr(%rip)
        .globl emu_native_back
emu_native_back:
        mov %rax, emu_scratch(%rip)
        mov emu_regs_ptr(%rip), %rax
        mov %rcx, 8(%rax)
        mov %rdx, 16(%rax)
        mov %rbx, 24(%rax)
        mov %rsp, 32(%rax)
        mov %rbp, 40(%rax)
        mov %rsi, 48(%rax)
        mov %rdi, 56(%rax)
        mov %r8, 64(%rax)
        mov %r9, 72(%rax)
        mov %r10, 80(%rax)
        mov %r11, 88(%rax)
        mov %r12, 96(%rax)
        mov %r13, 104(%rax)
        mov %r14, 112(%rax)
        mov %r15, 120(%rax)
        mov emu_scratch(%rip), %rcx
        mov %rcx, 0(%rax)
        mov emu_saved_rsp(%rip), %rsp
        pop %r15
        pop %r14
        pop %r13
        pop %r12
        pop %rbp
        pop %rbx
        ret
        .size emu_native_run, .-emu_native_run
        .bss
        .align 8
emu_saved_rsp: .quad 0
emu_regs_ptr: .quad 0
emu_code_ptr: .quad 0
emu_scratch: .quad 0
        .text
)");

// One instruction form: its bytes between two labels.
#define EMU_CASE(id, text)                                                                                        \
  asm(".pushsection .rodata\n.globl emucase_" #id "\nemucase_" #id ":\n" text "\n.globl emucase_" #id            \
      "_end\nemucase_" #id "_end:\n.popsection");                                                                 \
  extern "C" const uint8_t emucase_##id[], emucase_##id##_end[];

EMU_CASE(mov64, "mov %rcx, %rax")
EMU_CASE(mov32, "mov %ecx, %eax")
EMU_CASE(mov16, "mov %cx, %ax")
EMU_CASE(mov8, "mov %cl, %al")
EMU_CASE(mov8r, "mov %sil, %r9b")
EMU_CASE(movimm64, "movabs $0x123456789abcdef0, %r10")
EMU_CASE(movimm32s, "mov $-5, %r11")
EMU_CASE(movimm32, "mov $0x89abcdef, %ebx")
EMU_CASE(movimm16, "mov $0x1234, %dx")
EMU_CASE(movimm8, "mov $0x7f, %dil")
EMU_CASE(movrsprbp, "mov %rsp, %rbp")
EMU_CASE(movrbprsp, "mov %rbp, %rsp")
EMU_CASE(lea64, "lea 0x10(%rcx,%rdx,8), %rax")
EMU_CASE(lea64neg, "lea -0x80(%rsi,%rdi,2), %r8")
EMU_CASE(leanobase, "lea 0x7(,%rdx,4), %rax")
EMU_CASE(lea32dst, "lea 0x10(%rcx,%rdx,8), %eax")
EMU_CASE(lea32addr, "lea 0x10(%ecx,%edx,8), %eax")
EMU_CASE(lea32addr64dst, ".byte 0x67\n lea 0x10(%rcx,%rdx,8), %rax")
EMU_CASE(lea16dst, "lea 0x10(%rcx,%rdx,8), %ax")
EMU_CASE(leabase, "lea 0x8(%rbp), %rsp")
EMU_CASE(add64, "add %rcx, %rax")
EMU_CASE(add32, "add %ecx, %eax")
EMU_CASE(add16, "add %cx, %ax")
EMU_CASE(add8, "add %cl, %al")
EMU_CASE(addimm8, "add $-3, %r12")
EMU_CASE(addimm32, "add $0x7fffffff, %r13d")
EMU_CASE(addrsp, "add $0x18, %rsp")
EMU_CASE(sub64, "sub %rdx, %rbx")
EMU_CASE(sub32imm, "sub $0x100, %esi")
EMU_CASE(subrsp, "sub $0x28, %rsp")
EMU_CASE(subzero, "sub %r8, %r8")
EMU_CASE(subzero32, "sub %r8d, %r8d")
EMU_CASE(inc64, "inc %r14")
EMU_CASE(inc32, "inc %r14d")
EMU_CASE(inc8, "inc %r14b")
EMU_CASE(dec16, "dec %r15w")
EMU_CASE(neg64, "neg %rcx")
EMU_CASE(neg32, "neg %ecx")
EMU_CASE(not64, "not %rdx")
EMU_CASE(not8, "not %dl")
EMU_CASE(and64, "and %rcx, %rax")
EMU_CASE(andimm, "and $0xff0, %eax")
EMU_CASE(andrsp, "and $-16, %rsp")
EMU_CASE(andrsp32, "and $-32, %rsp")
EMU_CASE(or32, "or %ecx, %eax")
EMU_CASE(orimm8, "or $0x80, %al")
EMU_CASE(xor64, "xor %rcx, %rax")
EMU_CASE(xorzero, "xor %eax, %eax")
EMU_CASE(xorzero8, "xor %cl, %cl")
EMU_CASE(xorimm, "xor $-1, %r9")
EMU_CASE(shl64, "shl $3, %rax")
EMU_CASE(shl32, "shl $31, %eax")
EMU_CASE(shl1, "shl %rdx")
EMU_CASE(shl8, "shl $9, %cl")
EMU_CASE(shr64, "shr $60, %rax")
EMU_CASE(shr32, "shr $4, %eax")
EMU_CASE(sar64, "sar $63, %rbx")
EMU_CASE(sar32, "sar $7, %ebx")
EMU_CASE(sar16, "sar $20, %bx")
EMU_CASE(rol64, "rol $13, %rsi")
EMU_CASE(rol32, "rol $5, %esi")
EMU_CASE(ror16, "ror $19, %si")
EMU_CASE(ror8, "ror $3, %sil")
EMU_CASE(shlcl64, "shl %cl, %rax")
EMU_CASE(shrcl32, "shr %cl, %edx")
EMU_CASE(sarcl8, "sar %cl, %bl")
EMU_CASE(rolcl16, "rol %cl, %si")
EMU_CASE(rorcl64, "ror %cl, %r9")
EMU_CASE(shlcl8, "shl %cl, %dil")
EMU_CASE(imul3, "imul $24, %rcx, %rax")
EMU_CASE(imul3n, "imul $-7, %ecx, %eax")
EMU_CASE(imul2, "imul %rdx, %rax")
EMU_CASE(imul2w, "imul %dx, %ax")
EMU_CASE(movsx8, "movsbq %cl, %rax")
EMU_CASE(movsx16, "movswl %cx, %eax")
EMU_CASE(movsxd, "movslq %ecx, %rax")
EMU_CASE(movzx8, "movzbl %cl, %eax")
EMU_CASE(movzx16, "movzwq %cx, %rax")
EMU_CASE(movzx8w, "movzbw %cl, %ax")
EMU_CASE(cdqe, "cltq")
EMU_CASE(cwde, "cwtl")
EMU_CASE(cbw, "cbtw")
EMU_CASE(cqo, "cqto")
EMU_CASE(cdq, "cltd")
EMU_CASE(xchg64, "xchg %rcx, %rax")
EMU_CASE(xchg32, "xchg %ecx, %edx")
EMU_CASE(xchg8, "xchg %cl, %dl")
EMU_CASE(push, "push %rbx")
EMU_CASE(pushimm, "push $5")
EMU_CASE(pop, "pop %rbx")
EMU_CASE(leave, "leave")

namespace atomx::x86 {
namespace {

struct Form {
  const char* name;
  const uint8_t* begin;
  const uint8_t* end;
  bool loadsSomething;  // writes a register the emulator does not compute (pop's, leave's)
};

#define FORM(id) Form{#id, emucase_##id, emucase_##id##_end, false}
#define LOADING_FORM(id) Form{#id, emucase_##id, emucase_##id##_end, true}

// The register file both run from: distinct bytes everywhere, negative
// halves, %rsp and %rbp into a stack buffer.
RegisterFile inputs(uint64_t* stack) {
  RegisterFile f;
  for (unsigned r = 0; r < 16; ++r) f.gpr[r] = 0x8877665544332211ull * (r + 3) ^ (uint64_t(0xf0 + r) << 56);
  f.gpr[1] = 0xfedcba98c0a08010ull;  // rcx: its low byte and word sign bits set
  f.gpr[4] = uint64_t(stack + 32);
  f.gpr[5] = uint64_t(stack + 40);
  return f;
}

RegisterFile runNative(const Form& form, RegisterFile f) {
  const size_t len = size_t(form.end - form.begin);
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(page, MAP_FAILED);
  uint8_t* p = static_cast<uint8_t*>(page);
  std::memcpy(p, form.begin, len);
  const uint8_t jmp[6] = {0xff, 0x25, 0, 0, 0, 0};  // jmp *0(%rip)
  std::memcpy(p + len, jmp, 6);
  const uint64_t back = uint64_t(&emu_native_back);
  std::memcpy(p + len + 6, &back, 8);
  emu_native_run(f.gpr, p);
  munmap(page, 4096);
  return f;
}

EmuOp compile(const Form& form, const uint8_t* at, const Decoder& d) {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  EXPECT_TRUE(d.decodeFull(form.begin, size_t(form.end - form.begin), insn, ops)) << form.name;
  EXPECT_EQ(insn.length, size_t(form.end - form.begin)) << form.name;
  return compileEmu(insn, ops, uint64_t(at));
}

const char* kNames[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                          "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

void check(const Form& form) {
  Decoder d;
  alignas(16) uint64_t stack[64];
  for (unsigned k = 0; k < 64; ++k) stack[k] = 0x1111111111111111ull * (k % 15 + 1);
  const RegisterFile in = inputs(stack);
  const EmuOp op = compile(form, form.begin, d);
  ASSERT_NE(op.kind, EmuKind::None) << form.name << ": not emulable";
  const RegisterFile native = runNative(form, in);
  RegisterFile emulated = in;
  emulate(op, emulated);
  for (unsigned r = 0; r < 16; ++r) {
    const bool computed = op.outputs() & (1u << r);
    if (!computed && form.loadsSomething && native.gpr[r] != in.gpr[r]) continue;  // a load: not the emulator's
    EXPECT_EQ(emulated.gpr[r], native.gpr[r]) << form.name << ": %" << kNames[r] << (computed ? " (computed)" : "");
  }
  // Its inputs are all it reads: changing any other register changes no output.
  RegisterFile other = in;
  for (unsigned r = 0; r < 16; ++r)
    if (!(op.inputs() & (1u << r))) other.gpr[r] ^= 0x5a5a5a5a5a5a5a5aull;
  emulate(op, other);
  for (unsigned r = 0; r < 16; ++r)
    if (op.outputs() & (1u << r)) {
      EXPECT_EQ(other.gpr[r], emulated.gpr[r]) << form.name << ": %" << kNames[r] << " read a non-input";
    }
  // And the op survives the three words an analysis call receives.
  int64_t w[3];
  op.encode(w);
  RegisterFile again = in;
  emulate(EmuOp::decode(w), again);
  for (unsigned r = 0; r < 16; ++r) EXPECT_EQ(again.gpr[r], emulated.gpr[r]) << form.name << " encoded";
}

TEST(Emulator, MovesAllWidths) {
  for (const Form& f : {FORM(mov64), FORM(mov32), FORM(mov16), FORM(mov8), FORM(mov8r), FORM(movimm64),
                        FORM(movimm32s), FORM(movimm32), FORM(movimm16), FORM(movimm8), FORM(movrsprbp),
                        FORM(movrbprsp)})
    check(f);
}

TEST(Emulator, Lea) {
  for (const Form& f : {FORM(lea64), FORM(lea64neg), FORM(leanobase), FORM(lea32dst), FORM(lea32addr),
                        FORM(lea32addr64dst), FORM(lea16dst), FORM(leabase)})
    check(f);
}

TEST(Emulator, Arithmetic) {
  for (const Form& f : {FORM(add64), FORM(add32), FORM(add16), FORM(add8), FORM(addimm8), FORM(addimm32),
                        FORM(addrsp), FORM(sub64), FORM(sub32imm), FORM(subrsp), FORM(subzero), FORM(subzero32),
                        FORM(inc64), FORM(inc32), FORM(inc8), FORM(dec16), FORM(neg64), FORM(neg32), FORM(not64),
                        FORM(not8)})
    check(f);
}

TEST(Emulator, Logic) {
  for (const Form& f : {FORM(and64), FORM(andimm), FORM(andrsp), FORM(andrsp32), FORM(or32), FORM(orimm8),
                        FORM(xor64), FORM(xorzero), FORM(xorzero8), FORM(xorimm)})
    check(f);
}

TEST(Emulator, ShiftsAndRotates) {
  for (const Form& f : {FORM(shl64), FORM(shl32), FORM(shl1), FORM(shl8), FORM(shr64), FORM(shr32), FORM(sar64),
                        FORM(sar32), FORM(sar16), FORM(rol64), FORM(rol32), FORM(ror16), FORM(ror8),
                        FORM(shlcl64), FORM(shrcl32), FORM(sarcl8), FORM(rolcl16), FORM(rorcl64), FORM(shlcl8)})
    check(f);
}

TEST(Emulator, MultiplyAndExtend) {
  for (const Form& f : {FORM(imul3), FORM(imul3n), FORM(imul2), FORM(imul2w), FORM(movsx8), FORM(movsx16),
                        FORM(movsxd), FORM(movzx8), FORM(movzx16), FORM(movzx8w), FORM(cdqe), FORM(cwde), FORM(cbw),
                        FORM(cqo), FORM(cdq), FORM(xchg64), FORM(xchg32), FORM(xchg8)})
    check(f);
}

TEST(Emulator, Stack) {
  for (const Form& f : {FORM(push), FORM(pushimm), LOADING_FORM(pop), LOADING_FORM(leave)}) check(f);
}

// The 32-bit and 8/16-bit rules, spelled out (Intel SDM vol. 1, 3.4.1.1).
TEST(Emulator, WidthRules) {
  Decoder d;
  uint64_t stack[64] = {};
  RegisterFile in = inputs(stack);
  RegisterFile f = in;
  emulate(compile(FORM(mov32), emucase_mov32, d), f);
  EXPECT_EQ(f.gpr[0], uint64_t(uint32_t(in.gpr[1])));  // zero-extended
  f = in;
  emulate(compile(FORM(mov8), emucase_mov8, d), f);
  EXPECT_EQ(f.gpr[0], (in.gpr[0] & ~0xffull) | (in.gpr[1] & 0xff));  // merged
  f = in;
  emulate(compile(FORM(mov16), emucase_mov16, d), f);
  EXPECT_EQ(f.gpr[0], (in.gpr[0] & ~0xffffull) | (in.gpr[1] & 0xffff));
}

// What the CPU cannot show from here: call and ret, and what is refused.
TEST(Emulator, CallRetAndRefusals) {
  Decoder d;
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
  auto op = [&](std::vector<uint8_t> bytes) {
    EXPECT_TRUE(d.decodeFull(bytes.data(), bytes.size(), insn, ops));
    return compileEmu(insn, ops, 0x1000);
  };
  // call rel32: the caller sees %rsp unchanged once it returns.
  EmuOp call = op({0xe8, 0, 0, 0, 0});
  EXPECT_EQ(call.kind, EmuKind::StackAdd);
  EXPECT_EQ(call.imm, 0);
  EXPECT_EQ(op({0xc3}).imm, 8);                // ret
  EXPECT_EQ(op({0xc2, 0x10, 0x00}).imm, 24);   // ret $16
  // A rip-relative lea: the original address, plus the load bias.
  EmuOp lea = op({0x48, 0x8d, 0x05, 0x10, 0, 0, 0});  // lea 0x10(%rip),%rax
  EXPECT_EQ(lea.kind, EmuKind::MovAddress);
  EXPECT_EQ(lea.imm, 0x1000 + 7 + 0x10);
  RegisterFile f;
  f.loadBias = 0x555500000000;
  emulate(lea, f);
  EXPECT_EQ(f.gpr[0], 0x555500000000ull + 0x1017);
  EXPECT_EQ(op({0x48, 0x8b, 0x07}).kind, EmuKind::None);        // mov (%rdi),%rax: a load
  EXPECT_EQ(op({0x48, 0xd3, 0xe0}).inputs(), 0x3);              // shl %cl,%rax: rax and rcx
  EXPECT_EQ(op({0x88, 0xc4}).kind, EmuKind::None);              // mov %al,%ah
  EXPECT_EQ(op({0x48, 0x0f, 0x44, 0xc1}).kind, EmuKind::None);  // cmove %rcx,%rax
  EXPECT_EQ(op({0x48, 0x11, 0xc8}).kind, EmuKind::None);        // adc %rcx,%rax
  EXPECT_EQ(op({0x0f, 0xa2}).kind, EmuKind::None);              // cpuid
  EXPECT_EQ(op({0x0f, 0x31}).kind, EmuKind::None);              // rdtsc
  EXPECT_EQ(op({0x5c}).kind, EmuKind::None);                    // pop %rsp
  // pop %rbx computes %rsp only: emulable for %rsp, not for %rbx.
  std::vector<uint8_t> pop = {0x5b};
  ASSERT_TRUE(d.decodeFull(pop.data(), 1, insn, ops));
  const Semantics s = describe(insn, ops, 0x1000);
  EXPECT_TRUE(emulable(insn, ops, s, 0x1000, RegSet::gpr(4)));
  EXPECT_FALSE(emulable(insn, ops, s, 0x1000, RegSet::gpr(3)));
  EXPECT_TRUE(emulable(insn, ops, s, 0x1000, RegSet::gpr(0)));  // not written: nothing to compute
}

}  // namespace
}  // namespace atomx::x86
