// analysis::DataSlices on hand-written code (assembled and linked at test
// time, analysed as any input): each memory operand's address source, the
// registers recorded at block entry and after instructions, what is
// emulated; and the invariant -- every register an address or an emulated
// instruction reads is known, with nothing recorded on an intra-procedural
// edge -- checked by checkSlices on every procedure of this program and of
// the pitfall programs, and shown to fail when a record site loses a
// register.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "analysis/DataSlices.h"
#include "analysis/ProgramModel.h"
#include "analysis/TracePlan.h"
#include "assembled_program.h"
#include "elf/ElfImage.h"

namespace atomx {
namespace {

using analysis::AddressSource;
enum : uint16_t {
  RAX = 1 << 0, RCX = 1 << 1, RDX = 1 << 2, RBX = 1 << 3, RSP = 1 << 4, RBP = 1 << 5, RSI = 1 << 6, RDI = 1 << 7,
  R8 = 1 << 8, R12 = 1 << 12
};

class DataSlicesTest : public testing::AssembledProgramTest<DataSlicesTest> {
 public:
  static const char* source() {
    return R"(
        .section .note.GNU-stack, "", @progbits
        .text
        .globl main
        .type main, @function
main:   xor %eax, %eax
        ret
        .size main, .-main

        .type chase, @function       # a pointer loaded into an address register: recorded after the load
chase:  mov (%rdi), %rax
m_chase_load:
        mov 8(%rax), %rdx
m_chase_use:
        ret
        .size chase, .-chase

        .type arith, @function       # lea, shifts, movsxd: emulated from what is recorded at entry
arith:  movslq %esi, %rsi
        lea (%rdi,%rsi,8), %rax
        shl $2, %rsi
        add %rsi, %rax
m_arith_use:
        mov (%rax), %eax
        ret
        .size arith, .-arith

        .type callee, @function
callee: ret
        .size callee, .-callee

        .type across, @function      # a call: rdi (caller-saved) recorded after it, rbx kept by the ABI
across: push %rbx
        mov %rdi, %rbx
m_across_call:
        call callee
        mov (%rbx), %rax
        mov (%rdi), %rax
        pop %rbx
        ret
        .size across, .-across

        .type spill, @function       # stack slots as registers: a spill and its reload, across a call
spill:  push %rbx                    #   to a procedure that leaves its caller's frame alone
        sub $32, %rsp
        mov %rdi, 16(%rsp)           # a pointer the regenerator knows (recorded at entry)
        mov %rsi, 8(%rbx)            # (a store through another register: not into the frame)
        call callee
m_spill_reload:
        mov 16(%rsp), %rax           # reloaded: known again, nothing recorded
        mov (%rax), %rdx
        add $32, %rsp
        pop %rbx
        ret
        .size spill, .-spill

        .type framed, @function      # the same through %rbp, a copy of %rsp
framed: push %rbp
        mov %rsp, %rbp
        sub $16, %rsp
        movq $0x1000, -8(%rbp)       # an immediate stored: known too
        mov %rdi, -16(%rbp)
m_framed_reload:
        mov -16(%rbp), %rax
        mov -8(%rbp), %rcx
        mov (%rax,%rcx), %rdx
        leave
        ret
        .size framed, .-framed

        .type escaped, @function     # the frame's address escapes (lea of a slot): no slots at all
escaped:
        sub $24, %rsp
        mov %rdi, 8(%rsp)
        lea 8(%rsp), %rdi
        call callee
m_escaped_reload:
        mov 8(%rsp), %rax
        mov (%rax), %rdx
        add $24, %rsp
        ret
        .size escaped, .-escaped

        .type writer, @function      # writes its stack argument: its caller's frame
writer: movq $0, 8(%rsp)
        ret
        .size writer, .-writer

        .type argcall, @function     # a call that may have stack arguments (its %rsp is written) to a
argcall:                             #   callee not known to leave them alone: every slot is lost
        sub $24, %rsp
        mov %rdi, 16(%rsp)
        movq $7, (%rsp)
        call writer
m_argcall_reload:
        mov 16(%rsp), %rax
        mov (%rax), %rdx
        add $24, %rsp
        ret
        .size argcall, .-argcall

        .type narrow, @function      # stored 4 bytes, reloaded 8: not a slot
narrow: sub $24, %rsp
        mov %edi, 8(%rsp)
        mov (%rsi), %rax
        mov %rax, 16(%rsp)
m_narrow_reload:
        mov 8(%rsp), %rax
        mov (%rax), %rdx
        add $24, %rsp
        ret
        .size narrow, .-narrow

        .type onepath, @function     # stored on one path only: not available at the reload
onepath:
        sub $24, %rsp
        test %esi, %esi
        je 1f
        mov %rdi, 8(%rsp)
1:
m_onepath_reload:
        mov 8(%rsp), %rax
        mov (%rax), %rdx
        add $24, %rsp
        ret
        .size onepath, .-onepath

        .type sj, @function          # setjmp returns twice, with a frame the path does not show
sj:     sub $24, %rsp
        mov %rdi, 8(%rsp)
        lea sjbuf(%rip), %rdi
        call _setjmp@PLT
m_sj_reload:
        mov 8(%rsp), %rax
        mov (%rax), %rdx
        add $24, %rsp
        ret
        .size sj, .-sj

        .type redzone, @function     # a leaf's red zone: kept while within 128 bytes of %rsp
redzone:
        mov %rdi, -16(%rsp)          # below %rsp: a signal's frame goes below the red zone's 128 bytes
        mov (%rsi), %rcx
m_redzone_reload:
        mov -16(%rsp), %rax
        mov (%rax), %rdx
        ret
        .size redzone, .-redzone

        .type loop, @function        # a pointer stepped in a loop: emulated, recorded once at entry
loop:   xor %eax, %eax
1:
m_loop_add:
        add (%rdi), %rax
        add $8, %rdi
        cmp %rsi, %rdi
        jne 1b
        ret
        .size loop, .-loop

        .type sources, @function     # static, per-thread (%fs) and a stack frame
sources:
m_sources:
        mov counter(%rip), %eax
        mov %fs:0x28, %rdx
        push %rbp
        mov %rsp, %rbp
        and $-16, %rsp
        sub $32, %rsp
        mov %eax, 4(%rsp)
        leave
        ret
        .size sources, .-sources

        .type backwards, @function   # std in the procedure: its string instructions' addresses are recorded
backwards:
        std
m_backwards_movs:
        rep movsb
        cld
        ret
        .size backwards, .-backwards

        .type cpuidaddr, @function   # cpuid's result used as an address: recorded after cpuid
cpuidaddr:
        push %rbx
        cpuid
m_cpuid:
        mov (%rbx), %eax
        pop %rbx
        ret
        .size cpuidaddr, .-cpuidaddr

        .data
counter: .long 0
        .local sjbuf
        .comm sjbuf, 512, 16
)";
  }

  analysis::DataSlices slices(const ir::Procedure& p) const {
    return analysis::computeDataSlices(model().program, p, model().decoder, nullptr);
  }
};

TEST_F(DataSlicesTest, LoadIsRecordedAfter) {
  auto [p, i] = at("m_chase_load");
  const analysis::DataSlices s = slices(*p);
  EXPECT_EQ(s.insns[i - 1].recordAfter, RAX);  // mov (%rdi),%rax: rax feeds 8(%rax)
  EXPECT_EQ(s.insns[i - 1].source[0], AddressSource::Computed);
  EXPECT_EQ(s.recordAtEntry[0] & ~RSP, RDI);   // and rdi at entry (rsp: ret's slot)
  EXPECT_EQ(s.insns[i].recordAfter, 0);        // rdx feeds no address
}

TEST_F(DataSlicesTest, ArithmeticIsEmulated) {
  auto [p, i] = at("m_arith_use");
  const analysis::DataSlices s = slices(*p);
  for (uint32_t k = 0; k < i; ++k) {
    EXPECT_NE(s.insns[k].emulated, 0) << k;
    EXPECT_EQ(s.insns[k].recordAfter, 0) << k;
  }
  EXPECT_EQ(s.recordAtEntry[0], RSI | RDI | RSP);
  EXPECT_EQ(s.insns[i].recordAfter, 0);  // eax feeds nothing after
}

TEST_F(DataSlicesTest, CallClobbersCallerSavedOnly) {
  auto [p, i] = at("m_across_call");
  const analysis::DataSlices s = slices(*p);
  EXPECT_EQ(s.insns[i].recordAfter, RDI);  // caller-saved: recorded when the call returns
  EXPECT_EQ(s.insns[i].emulated, RSP);     // the caller sees %rsp unchanged
  EXPECT_EQ(s.insns[i].neededBefore & RBX, RBX);  // kept by the ABI: needed through the call
  EXPECT_EQ(s.recordAtEntry[0], RDI | RSP);       // rbx = rdi, emulated
}

TEST_F(DataSlicesTest, LoopPointerEmulated) {
  auto [p, i] = at("m_loop_add");
  const analysis::DataSlices s = slices(*p);
  EXPECT_EQ(s.insns[i + 1].emulated, RDI);  // add $8,%rdi
  uint16_t recorded = 0;
  for (size_t b = 0; b < p->blocks.size(); ++b) recorded |= s.recordAtEntry[b];
  for (const analysis::InsnSlice& x : s.insns) recorded |= x.recordAfter;
  EXPECT_EQ(recorded, RDI | RSP);  // once, at entry
}

TEST_F(DataSlicesTest, Sources) {
  auto [p, i] = at("m_sources");
  const analysis::DataSlices s = slices(*p);
  EXPECT_EQ(s.insns[i].source[0], AddressSource::Static);        // counter(%rip)
  EXPECT_EQ(s.insns[i + 1].source[0], AddressSource::Computed);  // %fs:0x28: the thread's base
  EXPECT_EQ(s.insns[i + 1].addressRegs, 0);
  // push, mov %rsp,%rbp, and, sub: emulated; leave's %rsp from %rbp; %rsp
  // recorded at entry only.
  uint16_t recorded = s.recordAtEntry[0];
  for (const analysis::InsnSlice& x : s.insns) recorded |= x.recordAfter;
  EXPECT_EQ(recorded, RSP);
  EXPECT_EQ(s.insns[i + 7].emulated, RSP);  // leave
}

TEST_F(DataSlicesTest, StdMakesStringAddressesRecorded) {
  auto [p, i] = at("m_backwards_movs");
  const analysis::DataSlices s = slices(*p);
  ASSERT_EQ(s.insns[i].memCount, 2);
  EXPECT_EQ(s.insns[i].source[0], AddressSource::Recorded);
  EXPECT_EQ(s.insns[i].source[1], AddressSource::Recorded);
  // Neither rsi nor rdi needed; rcx is, the rep's count (its references
  // are one per iteration).
  EXPECT_EQ(s.recordAtEntry[0], RSP | RCX);
  EXPECT_TRUE(s.insns[i].repeated);
}

TEST_F(DataSlicesTest, CpuidResultRecorded) {
  auto [p, i] = at("m_cpuid");
  const analysis::DataSlices s = slices(*p);
  EXPECT_EQ(s.insns[i - 1].recordAfter, RBX);
}

// Stack slots as registers (DataSlices.h): a spill and its reload.
TEST_F(DataSlicesTest, SpilledSlotReloadIsKnown) {
  auto [p, i] = at("m_spill_reload");
  const analysis::DataSlices s = slices(*p);
  ASSERT_EQ(s.slots.size(), 1u);
  EXPECT_EQ(s.slots[0].offset, -24);  // 16(%rsp) after push and sub $32
  EXPECT_EQ(s.slots[0].width, 8);
  EXPECT_EQ(s.insns[i].op.kind, x86::EmuKind::SlotLoad);
  EXPECT_EQ(s.insns[i].recordAfter, 0);
  EXPECT_EQ(s.insns[i].emulated, RAX);
  EXPECT_TRUE(s.insns[2].storesSlot);  // mov %rdi,16(%rsp)
  EXPECT_EQ(s.insns[2].op.kind, x86::EmuKind::SlotStore);
  EXPECT_EQ(s.recordAtEntry[0], RBX | RDI | RSP);  // (rbx: 8(%rbx))
  EXPECT_EQ(analysis::checkSlices(*p, s), "");
}

TEST_F(DataSlicesTest, FramePointerSlotsAndImmediates) {
  auto [p, i] = at("m_framed_reload");
  const analysis::DataSlices s = slices(*p);
  EXPECT_EQ(s.slots.size(), 2u);
  EXPECT_EQ(s.insns[i].recordAfter, 0);
  EXPECT_EQ(s.insns[i + 1].recordAfter, 0);  // the immediate's slot
  EXPECT_EQ(s.insns[i + 1].emulated, RCX);
  EXPECT_EQ(s.recordAtEntry[0], RDI | RSP);
}

// Each case the rule refuses: the reload is recorded, as without slots.
TEST_F(DataSlicesTest, SlotRefusals) {
  for (const char* label :
       {"m_escaped_reload", "m_argcall_reload", "m_narrow_reload", "m_onepath_reload", "m_sj_reload"}) {
    auto [p, i] = at(label);
    const analysis::DataSlices s = slices(*p);
    EXPECT_EQ(s.insns[i].recordAfter, RAX) << label;
    EXPECT_NE(s.insns[i].op.kind, x86::EmuKind::SlotLoad) << label;
    EXPECT_EQ(analysis::checkSlices(*p, s), "") << label;
  }
  EXPECT_TRUE(slices(*at("m_escaped_reload").first).frameEscapes);
  EXPECT_TRUE(slices(*at("m_narrow_reload").first).slots.empty());  // 4 bytes stored, 8 reloaded
  EXPECT_EQ(slices(*at("m_sj_reload").first).slots.size(), 1u);     // a slot, lost at the setjmp
  EXPECT_EQ(slices(*at("m_argcall_reload").first).slots.size(), 1u);  // a slot, lost at the call
}

TEST_F(DataSlicesTest, RedZoneSlotKept) {
  auto [p, i] = at("m_redzone_reload");
  const analysis::DataSlices s = slices(*p);
  EXPECT_EQ(s.insns[i].recordAfter, 0);
  EXPECT_EQ(s.insns[i].op.kind, x86::EmuKind::SlotLoad);
}

// The emulator's slot ops: a 4-byte reload zero-extends; an immediate
// store keeps its width.
TEST(EmulatorSlots, StoreAndReload) {
  x86::RegisterFile f;
  f.gpr[0] = 0xffffffff12345678;
  x86::EmuOp st;
  st.kind = x86::EmuKind::SlotStore;
  st.src = 0;
  st.width = 4;
  st.slot = 3;
  x86::emulate(st, f);
  x86::EmuOp ld;
  ld.kind = x86::EmuKind::SlotLoad;
  ld.dst = 1;
  ld.width = 4;
  ld.slot = 3;
  f.gpr[1] = ~uint64_t(0);
  x86::emulate(ld, f);
  EXPECT_EQ(f.gpr[1], 0x12345678u);
  int64_t w[3];
  ld.encode(w);
  EXPECT_EQ(x86::EmuOp::decode(w).slot, 3);
  st.src = -1;
  st.imm = -1;
  st.width = 8;
  x86::emulate(st, f);
  ld.width = 8;
  x86::emulate(ld, f);
  EXPECT_EQ(f.gpr[1], ~uint64_t(0));
}

// The invariant on every procedure here, and its check's teeth.
TEST_F(DataSlicesTest, InvariantHoldsAndCheckBites) {
  for (const ir::Procedure& p : model().program.procs) {
    if (p.blocks.empty()) continue;
    EXPECT_EQ(analysis::checkSlices(p, slices(p)), "") << p.name;
  }
  auto [p, i] = at("m_chase_load");
  analysis::DataSlices s = slices(*p);
  s.recordAtEntry[0] &= ~RDI;  // an entry site that forgets a register
  EXPECT_NE(analysis::checkSlices(*p, s).find("needed but not known"), std::string::npos);
  s = slices(*p);
  s.insns[i - 1].recordAfter = 0;  // a load whose value is not recorded
  EXPECT_NE(analysis::checkSlices(*p, s), "");
}

// checkSlices on every procedure atomx moves in `path`, with its trace
// plan; returns how many.
int checkProgram(const std::filesystem::path& path) {
  const elf::ElfImage image = elf::ElfImage::load(path.string());
  const auto model = analysis::analyzeProgram(image);
  const analysis::TracePlan plan = analysis::planTrace(model->program);
  int checked = 0;
  for (const ir::Procedure& p : model->program.procs) {
    if (!p.isMovable() || p.blocks.empty()) continue;
    const analysis::DataSlices s = analysis::computeDataSlices(model->program, p, model->decoder, &plan.procs[p.id]);
    EXPECT_EQ(analysis::checkSlices(p, s), "") << path << " " << p.name;
    ++checked;
  }
  return checked;
}

// And on real compiler output: the pitfall programs, with their trace plans.
TEST(DataSlicesPrograms, InvariantHoldsOnPitfallPrograms) {
  // The build directory's programs, found from this executable's path (bin/).
  const std::filesystem::path dir =
      std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "tests/programs/O2";
  int checked = 0;
  for (const char* name : {"funcptrs", "switch_tables", "recursion_noreturn", "exceptions", "tls_threads",
                           "signals_setjmp", "computed_goto", "cold_parts", "tailcalls"}) {
    if (!std::filesystem::exists(dir / name)) continue;
    checked += checkProgram(dir / name);
  }
  if (checked == 0) GTEST_SKIP() << "no pitfall program built";
}

// And on the corpus's gzip and bzip2 when it is built (corpus/build.sh).
TEST(DataSlicesPrograms, InvariantHoldsOnCorpus) {
  const char* env = std::getenv("ATOMX_CORPUS_DIR");
  const char* home = std::getenv("HOME");
  const std::filesystem::path dir =
      env ? std::filesystem::path(env) / "bin" : std::filesystem::path(home ? home : "/") / ".cache/atomx-corpus/bin";
  int checked = 0;
  for (const char* name : {"gzip-gcc-O2", "bzip2-gcc-O2", "gzip-clang-O2", "bzip2-gcc-O2-nopie"}) {
    if (!std::filesystem::exists(dir / name)) continue;
    checked += checkProgram(dir / name);
  }
  if (checked == 0) GTEST_SKIP() << "no corpus under " << dir;
}

}  // namespace
}  // namespace atomx
