// x86::Semantics against Zydis' own full operand decoding on every
// instruction of libc, libm and libstdc++ (register sets, per-flag sets,
// memory descriptors, condition codes), against hand-written cases for the
// implicit operands, and its two uses of a memory descriptor against each
// other: evaluate() against Zydis' ZydisCalcAbsoluteAddressEx, and the code
// emitLinearAddress()/emitSegmentBase() generate, run, against evaluate().
#include <gtest/gtest.h>

#include <elf.h>
#include <sys/mman.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "x86/Decoder.h"
#include "x86/Semantics.h"

using namespace atomx;
using x86::RegSet;

namespace {

// --- An independent, straightforward reading of Zydis' operand list ----

struct Zy {
  ZydisDecodedInstruction insn;
  ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
};

RegSet bitOf(ZydisRegister r) {
  switch (ZydisRegisterGetClass(r)) {
    case ZYDIS_REGCLASS_GPR8:  // ids: al cl dl bl 0..3, ah ch dh bh 4..7, spl .. dil 8..11, r8b .. r15b 12..19
      if (r >= ZYDIS_REGISTER_AH && r <= ZYDIS_REGISTER_BH) return RegSet{uint64_t(1) << (ZydisRegisterGetId(r) - 4)};
      return RegSet{uint64_t(1) << (ZydisRegisterGetId(r) < 8 ? ZydisRegisterGetId(r) : ZydisRegisterGetId(r) - 4)};
    case ZYDIS_REGCLASS_GPR16: case ZYDIS_REGCLASS_GPR32: case ZYDIS_REGCLASS_GPR64:
      return RegSet{uint64_t(1) << ZydisRegisterGetId(r)};
    case ZYDIS_REGCLASS_XMM: case ZYDIS_REGCLASS_YMM: case ZYDIS_REGCLASS_ZMM:
      return RegSet{uint64_t(1) << (32 + ZydisRegisterGetId(r))};
    default:
      return {};
  }
}

struct Expected {
  RegSet read, written;
  uint8_t flagsRead = 0, flagsWritten = 0;  // written: set, undefined or maybe
  std::vector<const ZydisDecodedOperand*> mem;
};

uint8_t eflagsBits(uint32_t f) {
  // EFLAGS positions: CF 0, PF 2, AF 4, ZF 6, SF 7, DF 10, OF 11.
  const int pos[7] = {0, 2, 4, 6, 7, 11, 10};
  uint8_t m = 0;
  for (int k = 0; k < 7; ++k)
    if (f & (1u << pos[k])) m |= uint8_t(1u << k);
  return m;
}

Expected expectedOf(const Zy& z) {
  Expected e;
  for (unsigned i = 0; i < z.insn.operand_count; ++i) {
    const ZydisDecodedOperand& op = z.ops[i];
    if (op.type == ZYDIS_OPERAND_TYPE_REGISTER) {
      if (op.actions & (ZYDIS_OPERAND_ACTION_READ | ZYDIS_OPERAND_ACTION_CONDREAD)) e.read |= bitOf(op.reg.value);
      if (op.actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE)) e.written |= bitOf(op.reg.value);
    }
    if (op.type != ZYDIS_OPERAND_TYPE_MEMORY) continue;
    e.read |= bitOf(op.mem.base) | bitOf(op.mem.index);
    const bool agen = op.mem.type == ZYDIS_MEMOP_TYPE_AGEN || op.mem.type == ZYDIS_MEMOP_TYPE_MIB ||
                      z.insn.mnemonic == ZYDIS_MNEMONIC_LEA || z.insn.mnemonic == ZYDIS_MNEMONIC_NOP;
    if (!agen) e.mem.push_back(&op);
  }
  // What the operand list leaves out (the module's documented additions).
  if (z.insn.mnemonic == ZYDIS_MNEMONIC_SYSCALL) {
    e.read |= RegSet{1u << 0 | 1u << 2 | 1u << 6 | 1u << 7 | 1u << 8 | 1u << 9 | 1u << 10};  // rax, the arguments
    e.written |= RegSet{1};  // rax
  }
  if (z.insn.mnemonic == ZYDIS_MNEMONIC_VZEROUPPER || z.insn.mnemonic == ZYDIS_MNEMONIC_VZEROALL)
    e.written |= RegSet{uint64_t(0xffff) << 32};
  if (const ZydisAccessedFlags* f = z.insn.cpu_flags) {
    e.flagsRead = eflagsBits(f->tested);
    e.flagsWritten = eflagsBits(f->modified | f->set_0 | f->set_1 | f->undefined);
  }
  return e;
}

// Zydis' register context for a set of 64-bit values: every width of
// each general register (addresses use 32-bit ones under addr32).
void fillContext(ZydisRegisterContext& ctx, const x86::RegisterValues& v) {
  std::memset(&ctx, 0, sizeof ctx);
  for (unsigned hw = 0; hw < 16; ++hw) {
    ctx.values[ZYDIS_REGISTER_RAX + hw] = v.gpr[hw];
    ctx.values[ZYDIS_REGISTER_EAX + hw] = uint32_t(v.gpr[hw]);
    ctx.values[ZYDIS_REGISTER_AX + hw] = uint16_t(v.gpr[hw]);
  }
}

// --- Running generated address code ---------------------------------------

// A page near the libraries' link-time addresses, so a rip-relative lea
// reaches its target.
struct CodePage {
  uint8_t* at = nullptr;
  CodePage() {
    void* p = mmap(reinterpret_cast<void*>(0x10000000), 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED) at = static_cast<uint8_t*>(p);
  }
  ~CodePage() {
    if (at) munmap(at, 4096);
  }
};

uint64_t threadPointer() {
  uint64_t tp;
  asm volatile("mov %%fs:0, %0" : "=r"(tp));
  return tp;
}

// Generates the address code for `m` (base value in %rdi, index in %rsi,
// a bit test's offset in %rdx, %rsp bias 16), runs it and returns what it
// computed.
uint64_t runEmitted(CodePage& page, const x86::MemOperand& m, uint64_t base, uint64_t index, uint64_t offset = 0) {
  std::vector<uint8_t> code;
  x86::Assembler a(code, reinterpret_cast<uint64_t>(page.at));
  x86::emitLinearAddress(a, m, ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, 16);
  x86::emitBitOffset(a, m, ZYDIS_REGISTER_RAX, ZYDIS_REGISTER_RDX);
  x86::emitSegmentBase(a, m, ZYDIS_REGISTER_RAX, 0);
  a.ret();
  std::memcpy(page.at, code.data(), code.size());
  __builtin___clear_cache(reinterpret_cast<char*>(page.at), reinterpret_cast<char*>(page.at + code.size()));
  return reinterpret_cast<uint64_t (*)(uint64_t, uint64_t, uint64_t)>(page.at)(base, index, offset);
}

// --- Walking a library ------------------------------------------------------

struct Section {
  std::vector<uint8_t> bytes;
  uint64_t addr;
};

std::vector<Section> executableSections(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Section> out;
  if (file.size() < sizeof(Elf64_Ehdr)) return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s;
    std::memcpy(&s, file.data() + eh.e_shoff + i * sizeof s, sizeof s);
    if (s.sh_type == SHT_PROGBITS && (s.sh_flags & SHF_EXECINSTR) && s.sh_offset + s.sh_size <= file.size())
      out.push_back({std::vector<uint8_t>(file.begin() + long(s.sh_offset), file.begin() + long(s.sh_offset + s.sh_size)),
                     s.sh_addr});
  }
  return out;
}

struct Counts {
  size_t insns = 0, mems = 0, ran = 0;
};

void checkOne(const x86::Decoder& d, const uint8_t* bytes, size_t avail, uint64_t addr, const x86::Insn& fast,
              CodePage& page, std::mt19937_64& rng, Counts& n) {
  Zy z;
  ASSERT_TRUE(d.decodeFull(bytes, avail, z.insn, z.ops));
  const x86::Semantics s = x86::describe(z.insn, z.ops, addr);
  const Expected e = expectedOf(z);
  const std::string where = " at " + std::to_string(addr);
  ASSERT_EQ(s.read.bits, e.read.bits) << "registers read" << where;
  ASSERT_EQ(s.written.bits, e.written.bits) << "registers written" << where;
  ASSERT_EQ(s.flags.read, e.flagsRead) << "flags read" << where;
  ASSERT_EQ(s.flags.anyWritten(), e.flagsWritten) << "flags written" << where;
  ASSERT_EQ(s.flags.set & s.flags.undefined, 0) << where;
  ASSERT_EQ((s.flags.set | s.flags.undefined) & s.flags.maybe, 0) << where;
  // Condition codes: jcc's from the fast decoder, setcc's and cmovcc's from the opcode, fcmovcc's
  // from the opcode (DA: b, e, be, u by ModRM.reg; DB: their negations).
  if (fast.flow == x86::Flow::CondBranch) {
    ASSERT_EQ(s.loopFamily, fast.isLoopFamily()) << where;
    if (!s.loopFamily) {
      ASSERT_EQ(s.condition, fast.condCode) << where;
    }
  } else if (z.insn.meta.category == ZYDIS_CATEGORY_SETCC || z.insn.meta.category == ZYDIS_CATEGORY_CMOV) {
    if (z.insn.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY) {
      ASSERT_EQ(s.condition, z.insn.opcode & 0xf) << where;
    }
  } else if (z.insn.meta.category == ZYDIS_CATEGORY_FCMOV) {
    static constexpr uint8_t kFcmov[4] = {2, 4, 6, 10};
    ASSERT_EQ(s.condition, kFcmov[z.insn.raw.modrm.reg & 3] + (z.insn.opcode == 0xdb)) << where;
  } else {
    ASSERT_EQ(s.condition, x86::kNoCondition) << where;
  }
  ASSERT_EQ(s.memCount, e.mem.size()) << where;
  for (unsigned k = 0; k < s.memCount; ++k) {
    const ZydisDecodedOperand& op = *e.mem[k];
    const x86::MemOperand& m = s.mem[k];
    ASSERT_EQ(m.size, op.size / 8) << where;
    ASSERT_EQ(m.read, bool(op.actions & (ZYDIS_OPERAND_ACTION_READ | ZYDIS_OPERAND_ACTION_CONDREAD))) << where;
    ASSERT_EQ(m.write, bool(op.actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE))) << where;
    ASSERT_EQ(m.implicit, op.visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN) << where;
    ASSERT_EQ(m.ripRelative, op.mem.base == ZYDIS_REGISTER_RIP) << where;
    ASSERT_EQ(m.segment == x86::Segment::FS, op.mem.segment == ZYDIS_REGISTER_FS) << where;
    ASSERT_EQ(m.segment == x86::Segment::GS, op.mem.segment == ZYDIS_REGISTER_GS) << where;
    // Evaluation against Zydis' own, for random register values; the
    // slot a push writes is below %rsp, segment bases are ours to add.
    x86::RegisterValues v;
    for (uint64_t& r : v.gpr) r = rng();
    v.gpr[4] = 0x7ffff000 + (rng() & 0xfff0);
    ZydisRegisterContext ctx;
    fillContext(ctx, v);
    ZyanU64 zydis = 0;
    ASSERT_TRUE(ZYAN_SUCCESS(ZydisCalcAbsoluteAddressEx(&z.insn, &op, addr, &ctx, &zydis))) << where;
    const bool pushSlot = m.implicit && m.write && op.mem.base == ZYDIS_REGISTER_RSP;
    if (pushSlot) zydis -= m.size;
    if (m.hasBitOffset()) zydis += uint64_t(x86::bitOffsetBytes(m, v.gpr[m.bitOffset]));  // Zydis: the operand's own
    if (m.segment != x86::Segment::FS && m.segment != x86::Segment::GS) {
      ASSERT_EQ(x86::evaluate(m, v), zydis) << where;
    }
    ++n.mems;
    // The generated code computes what evaluate() says.
    if (!page.at || m.segment == x86::Segment::GS) continue;
    const uint64_t base = m.hasBase() ? v.gpr[m.base] : 0, index = m.hasIndex() ? v.gpr[m.index] : 0;
    v.fsBase = threadPointer();
    x86::RegisterValues seen = v;
    if (m.base == 4) seen.gpr[4] = base + 16;  // the code's %rsp is 16 below the program's
    ASSERT_EQ(runEmitted(page, m, base, index, m.hasBitOffset() ? v.gpr[m.bitOffset] : 0), x86::evaluate(m, seen))
        << "generated code" << where;
    ++n.ran;
  }
  ++n.insns;
}

void checkLibrary(const std::string& path, Counts& n) {
  const std::vector<Section> sections = executableSections(path);
  ASSERT_FALSE(sections.empty()) << path;
  x86::Decoder d;
  CodePage page;
  std::mt19937_64 rng(42);
  for (const Section& sec : sections)
    for (size_t off = 0; off < sec.bytes.size();) {
      x86::Insn fast;
      const uint64_t addr = sec.addr + off;
      if (!d.decode(sec.bytes.data() + off, sec.bytes.size() - off, addr, fast)) {
        off += 1;
        continue;
      }
      checkOne(d, sec.bytes.data() + off, sec.bytes.size() - off, addr, fast, page, rng, n);
      if (::testing::Test::HasFatalFailure()) return;
      off += fast.length;
    }
}

// --- Hand-written instructions ------------------------------------------------

x86::Semantics of(const std::vector<uint8_t>& b, uint64_t address = 0x400000) {
  x86::Decoder d;
  Zy z;
  EXPECT_TRUE(d.decodeFull(b.data(), b.size(), z.insn, z.ops));
  return x86::describe(z.insn, z.ops, address);
}

RegSet gprs(std::initializer_list<unsigned> hws) {
  RegSet r;
  for (unsigned hw : hws) r |= RegSet::gpr(hw);
  return r;
}

enum : unsigned { RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8, R9, R10, R11 };
using namespace x86::flag;

}  // namespace

TEST(X86Semantics, AgreesWithZydisOnSystemLibraries) {
  Counts n;
  for (const char* path : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6",
                           "/lib/x86_64-linux-gnu/libstdc++.so.6"}) {
    checkLibrary(path, n);
    if (HasFatalFailure()) return;
  }
  std::printf("%zu instructions, %zu memory operands, %zu address codes run\n", n.insns, n.mems, n.ran);
  EXPECT_GT(n.insns, 300000u);
  EXPECT_GT(n.mems, 100000u);
  EXPECT_GT(n.ran, 100000u);
}

TEST(X86Semantics, ImplicitRegisters) {
  x86::Semantics s = of({0x48, 0x99});  // cqo
  EXPECT_EQ(s.read, gprs({RAX}));
  EXPECT_EQ(s.written, gprs({RDX}));
  s = of({0x0f, 0x05});  // syscall
  EXPECT_EQ(s.read, gprs({RAX, RDI, RSI, RDX, R10, R8, R9}));
  EXPECT_EQ(s.written, gprs({RAX, RCX, R11}));
  EXPECT_EQ(s.flags.alwaysWritten(), 0);
  s = of({0x50});  // push %rax
  EXPECT_EQ(s.read, gprs({RAX, RSP}));
  EXPECT_EQ(s.written, gprs({RSP}));
  ASSERT_EQ(s.memCount, 1);
  EXPECT_TRUE(s.mem[0].write && s.mem[0].implicit && !s.mem[0].read);
  EXPECT_EQ(s.mem[0].disp, -8);
  EXPECT_EQ(s.mem[0].base, RSP);
  s = of({0x5b});  // pop %rbx
  EXPECT_EQ(s.written, gprs({RBX, RSP}));
  ASSERT_EQ(s.memCount, 1);
  EXPECT_TRUE(s.mem[0].read && !s.mem[0].write);
  EXPECT_EQ(s.mem[0].disp, 0);
  s = of({0xe8, 0, 0, 0, 0});  // call
  EXPECT_EQ(s.read, gprs({RSP}));
  EXPECT_EQ(s.written, gprs({RSP}));
  EXPECT_EQ(s.mem[0].disp, -8);
  s = of({0xc3});  // ret
  EXPECT_EQ(s.written, gprs({RSP}));
  EXPECT_TRUE(s.loads() && !s.stores());
  s = of({0xf3, 0x48, 0xa5});  // rep movsq
  EXPECT_EQ(s.read, gprs({RCX, RSI, RDI}));
  EXPECT_EQ(s.written, gprs({RCX, RSI, RDI}));
  EXPECT_EQ(s.flags.read, DF);
  ASSERT_EQ(s.memCount, 2);
  EXPECT_TRUE(s.loads() && s.stores());
  EXPECT_EQ(s.mem[0].size, 8);
  s = of({0x0f, 0xa2});  // cpuid
  EXPECT_EQ(s.read, gprs({RAX, RCX}));
  EXPECT_EQ(s.written, gprs({RAX, RCX, RDX, RBX}));
  s = of({0x48, 0xf7, 0xe1});  // mul %rcx
  EXPECT_EQ(s.read, gprs({RAX, RCX}));
  EXPECT_EQ(s.written, gprs({RAX, RDX}));
  EXPECT_EQ(s.flags.set, CF | OF);
  EXPECT_EQ(s.flags.undefined, PF | AF | ZF | SF);
  s = of({0x48, 0xf7, 0xf1});  // div %rcx
  EXPECT_EQ(s.read, gprs({RAX, RCX, RDX}));
  EXPECT_EQ(s.written, gprs({RAX, RDX}));
  EXPECT_EQ(s.flags.undefined, kStatus);
  s = of({0x48, 0x87, 0xd8});  // xchg %rbx,%rax
  EXPECT_EQ(s.read, gprs({RAX, RBX}));
  EXPECT_EQ(s.written, gprs({RAX, RBX}));
  s = of({0xf0, 0x48, 0x0f, 0xb1, 0x0b});  // lock cmpxchg %rcx,(%rbx)
  EXPECT_EQ(s.read, gprs({RAX, RBX, RCX}));
  EXPECT_EQ(s.written, gprs({RAX}));
  ASSERT_EQ(s.memCount, 1);
  EXPECT_TRUE(s.mem[0].read && s.mem[0].write && !s.mem[0].implicit);
  s = of({0x48, 0x8d, 0x04, 0x48});  // lea (%rax,%rcx,2),%rax: no access
  EXPECT_EQ(s.memCount, 0);
  EXPECT_EQ(s.read, gprs({RAX, RCX}));
  s = of({0xc5, 0xf8, 0x77});  // vzeroupper
  EXPECT_TRUE(s.vectorState);
  EXPECT_EQ(s.written.bits, uint64_t(0xffff) << 32);
}

TEST(X86Semantics, FlagsPerFlag) {
  x86::Semantics s = of({0x48, 0xd3, 0xe0});  // shl %cl,%rax: maybe none
  EXPECT_EQ(s.flags.alwaysWritten(), 0);
  EXPECT_EQ(s.flags.maybe, kStatus);
  s = of({0x48, 0xc1, 0xe0, 0x03});  // shl $3,%rax
  EXPECT_EQ(s.flags.set, CF | PF | ZF | SF);
  EXPECT_EQ(s.flags.undefined, AF | OF);
  s = of({0x48, 0xff, 0xc0});  // inc %rax: CF untouched
  EXPECT_EQ(s.flags.set, kStatus & ~CF);
  s = of({0xf3, 0xa6});  // repe cmpsb
  EXPECT_EQ(s.flags.read, ZF | DF);
  EXPECT_EQ(s.flags.maybe, kStatus);
  s = of({0xfc});  // cld
  EXPECT_EQ(s.flags.set, DF);
  s = of({0x48, 0x11, 0xc8});  // adc %rcx,%rax
  EXPECT_EQ(s.flags.read, CF);
}

TEST(X86Semantics, Conditions) {
  EXPECT_EQ(of({0x74, 0x00}).condition, 4);              // jz
  EXPECT_EQ(of({0x0f, 0x8f, 0, 0, 0, 0}).condition, 15);  // jg
  EXPECT_EQ(of({0x0f, 0x92, 0xc0}).condition, 2);        // setb %al
  EXPECT_EQ(of({0x48, 0x0f, 0x4c, 0xc1}).condition, 12);  // cmovl %rcx,%rax
  x86::Semantics s = of({0xe2, 0x00});                    // loop
  EXPECT_TRUE(s.loopFamily);
  EXPECT_EQ(s.condition, x86::kNoCondition);
  EXPECT_TRUE(of({0xe3, 0x00}).loopFamily);  // jrcxz
  EXPECT_FALSE(of({0x90}).loopFamily);
}

// An instruction that only adds a constant to a whole 64-bit register (a
// loop's induction variable), and look-alikes that do more or less.
TEST(X86Semantics, ConstantSteps) {
  auto step = [](std::initializer_list<uint8_t> b) {
    const x86::Semantics s = of(b);
    return std::pair<int, int>{s.stepReg, s.stepBy};
  };
  using P = std::pair<int, int>;
  EXPECT_EQ(step({0x48, 0x83, 0xc7, 0x08}), P(RDI, 8));                    // add $8,%rdi
  EXPECT_EQ(step({0x49, 0x81, 0xe8, 0x00, 0x01, 0x00, 0x00}), P(R8, -256));  // sub $0x100,%r8
  EXPECT_EQ(step({0x48, 0x83, 0xc1, 0xff}), P(RCX, -1));                   // add $-1,%rcx
  EXPECT_EQ(step({0x48, 0xff, 0xc2}), P(RDX, 1));                          // inc %rdx
  EXPECT_EQ(step({0x49, 0xff, 0xcb}), P(R11, -1));                         // dec %r11
  EXPECT_EQ(step({0x48, 0x8d, 0x40, 0xfc}), P(RAX, -4));                   // lea -4(%rax),%rax
  EXPECT_EQ(step({0x83, 0xc0, 0x01}), P(-1, 0));              // add $1,%eax: 32 bits wrap at 2^32
  EXPECT_EQ(step({0x48, 0x01, 0xd8}), P(-1, 0));              // add %rbx,%rax: not a constant
  EXPECT_EQ(step({0x48, 0x8d, 0x43, 0x01}), P(-1, 0));        // lea 1(%rbx),%rax: another register
  EXPECT_EQ(step({0x48, 0x8d, 0x44, 0x08, 0x01}), P(-1, 0));  // lea 1(%rax,%rcx),%rax: an index
  EXPECT_EQ(step({0x48, 0x83, 0xc4, 0x08}), P(-1, 0));        // add $8,%rsp
  EXPECT_EQ(step({0x48, 0x83, 0x00, 0x01}), P(-1, 0));        // addq $1,(%rax): memory
  EXPECT_EQ(step({0x48, 0x83, 0xd0, 0x01}), P(-1, 0));        // adc $1,%rax: the carry too
}

TEST(X86Semantics, EvaluatesHandComputedAddresses) {
  x86::RegisterValues v;
  v.gpr[RAX] = 0x1000;
  v.gpr[RBX] = 3;
  v.gpr[RSP] = 0x8000;
  v.fsBase = 0x7000;
  x86::Semantics s = of({0x8b, 0x4c, 0x98, 0x10});  // mov 0x10(%rax,%rbx,4),%ecx
  ASSERT_EQ(s.memCount, 1);
  EXPECT_EQ(x86::evaluate(s.mem[0], v), 0x101cu);
  EXPECT_EQ(s.mem[0].size, 4);
  s = of({0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0});  // mov %fs:0x28,%rax
  EXPECT_EQ(x86::evaluate(s.mem[0], v), 0x7028u);
  s = of({0x48, 0x8b, 0x05, 0x00, 0x01, 0, 0}, 0x400000);  // mov 0x100(%rip),%rax
  EXPECT_TRUE(s.mem[0].ripRelative);
  EXPECT_EQ(x86::evaluate(s.mem[0], v), 0x400107u);
  s = of({0x50});  // push %rax
  EXPECT_EQ(x86::evaluate(s.mem[0], v), 0x7ff8u);
  v.gpr[RAX] = 0x100000010;
  s = of({0x67, 0x8b, 0x08});  // mov (%eax),%ecx
  EXPECT_EQ(s.mem[0].addressWidth, 32);
  EXPECT_EQ(x86::evaluate(s.mem[0], v), 0x10u);
  s = of({0x8b, 0x0c, 0x9d, 0xf0, 0xff, 0xff, 0xff});  // mov -0x10(,%rbx,4),%ecx
  EXPECT_EQ(x86::evaluate(s.mem[0], v), uint64_t(12 - 16));
}

// A bit test with a register bit offset accesses the word that holds the
// bit: size * floor(offset / (8 * size)) bytes from the operand, the offset
// signed at the operand's size (Intel SDM, BT).
TEST(X86Semantics, BitTestsReachTheWordOfTheBit) {
  CodePage page;
  x86::RegisterValues v;
  v.gpr[RDI] = 0x10000;
  auto at = [&](std::vector<uint8_t> code, uint64_t offset) {
    const x86::Semantics s = of(code);
    EXPECT_EQ(s.memCount, 1);
    EXPECT_EQ(s.mem[0].bitOffset, RAX);
    v.gpr[RAX] = offset;
    const uint64_t address = x86::evaluate(s.mem[0], v);
    EXPECT_EQ(runEmitted(page, s.mem[0], 0x10000, 0, offset), address) << "generated code";  // emitBitOffset
    return int64_t(address - 0x10000);
  };
  const std::vector<uint8_t> btq = {0x48, 0x0f, 0xa3, 0x07};  // bt %rax,(%rdi)
  EXPECT_EQ(at(btq, 0), 0);
  EXPECT_EQ(at(btq, 63), 0);
  EXPECT_EQ(at(btq, 64), 8);
  EXPECT_EQ(at(btq, 1000), 1000 / 64 * 8);
  EXPECT_EQ(at(btq, uint64_t(-1)), -8);
  EXPECT_EQ(at(btq, uint64_t(-64)), -8);
  EXPECT_EQ(at(btq, uint64_t(-65)), -16);
  const std::vector<uint8_t> btsl = {0x0f, 0xab, 0x07};  // bts %eax,(%rdi): the offset is %eax, signed
  EXPECT_EQ(at(btsl, 0xffffffffu), -4);
  EXPECT_EQ(at(btsl, 0x100000020u), 4);
  const std::vector<uint8_t> btrw = {0x66, 0x0f, 0xb3, 0x07};  // btr %ax,(%rdi)
  EXPECT_EQ(at(btrw, 0xffff), -2);
  EXPECT_EQ(at(btrw, 17), 2);
  // An immediate offset stays within the operand: no bitOffset.
  EXPECT_EQ(of({0x48, 0x0f, 0xba, 0x27, 0x45}).mem[0].bitOffset, x86::MemOperand::kNone);  // btq $0x45,(%rdi)
}

// What memrefs.hpp and the analyses ask of an instruction beyond its
// registers and flags (include/atomx/memrefs.hpp, CounterPromotion,
// Threads): kernel entries, legacy prefixes, repeated compares, compare-
// and-exchange, cache control, gathers' vector index.
TEST(X86Semantics, KernelEntries) {
  EXPECT_TRUE(x86::entersKernel(ZYDIS_MNEMONIC_SYSCALL));
  EXPECT_TRUE(x86::entersKernel(ZYDIS_MNEMONIC_SYSENTER));
  EXPECT_TRUE(x86::entersKernel(ZYDIS_MNEMONIC_INT));
  EXPECT_TRUE(x86::entersKernel(ZYDIS_MNEMONIC_INT1));
  EXPECT_TRUE(x86::entersKernel(ZYDIS_MNEMONIC_INT3));
  EXPECT_TRUE(x86::entersKernel(ZYDIS_MNEMONIC_INTO));
  EXPECT_FALSE(x86::entersKernel(ZYDIS_MNEMONIC_CALL));
  EXPECT_FALSE(x86::entersKernel(ZYDIS_MNEMONIC_SYSRET));
}

TEST(X86Semantics, LegacyPrefixes) {
  using namespace x86::prefix;
  auto has = [](std::initializer_list<uint8_t> bytes, uint8_t p) {
    const std::vector<uint8_t> b(bytes);
    return x86::hasLegacyPrefix(b.data(), b.size(), p);
  };
  EXPECT_TRUE(has({0x65, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, kGS));  // mov %gs:0x28,%rax
  EXPECT_TRUE(has({0x66, 0x65, 0x8b, 0x00}, kGS));                      // mov %gs:(%rax),%ax: after another
  EXPECT_FALSE(has({0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, kGS));  // %fs
  EXPECT_TRUE(has({0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0}, kFS));
  EXPECT_FALSE(has({0x48, 0xc7, 0xc0, 0x65, 0, 0, 0}, kGS));  // mov $0x65,%rax: 0x65 after the REX, no prefix
  EXPECT_FALSE(has({0xb8, 0x65, 0, 0, 0}, kGS));              // mov $0x65,%eax: an immediate byte
  EXPECT_TRUE(has({0xf0, 0x48, 0x0f, 0xb1, 0x0a}, kLock));    // lock cmpxchg %rcx,(%rdx)
  EXPECT_FALSE(has({0x65}, kLock));
}

TEST(X86Semantics, MemoryAccessKinds) {
  x86::Semantics s = of({0xf3, 0xa6});  // repe cmpsb
  EXPECT_TRUE(s.repeated && s.repeatedWhile && !s.repeatedWhileNotEqual);
  s = of({0xf2, 0xae});  // repne scasb
  EXPECT_TRUE(s.repeated && s.repeatedWhile && s.repeatedWhileNotEqual);
  s = of({0xf3, 0x48, 0xa5});  // rep movsq
  EXPECT_TRUE(s.repeated && !s.repeatedWhile);
  s = of({0xa6});  // cmpsb
  EXPECT_FALSE(s.repeated || s.repeatedWhile);
  EXPECT_EQ(s.written, gprs({RSI, RDI}));  // both step by DF (Zydis lists them as read only)
  EXPECT_EQ(of({0xf2, 0xae}).written, gprs({RCX, RDI}));  // repne scasb
  EXPECT_EQ(of({0xf3, 0xa6}).written, gprs({RCX, RSI, RDI}));  // repe cmpsb
  EXPECT_EQ(of({0xf2, 0x0f, 0xc2, 0xc1, 0x00}).written, RegSet::vector(0));  // cmpeqsd: no string register
  s = of({0xf2, 0x0f, 0xc2, 0xc1, 0x00});  // cmpeqsd %xmm1,%xmm0: SSE, no string
  EXPECT_FALSE(s.repeatedWhile);
  EXPECT_TRUE(of({0xf0, 0x48, 0x0f, 0xb1, 0x0a}).compareExchange);  // lock cmpxchg %rcx,(%rdx)
  EXPECT_TRUE(of({0x48, 0x0f, 0xc7, 0x0f}).compareExchange);        // cmpxchg16b (%rdi)
  EXPECT_FALSE(of({0xf0, 0x48, 0x0f, 0xc1, 0x0a}).compareExchange);  // lock xadd %rcx,(%rdx)
  EXPECT_TRUE(of({0x0f, 0x18, 0x08}).cacheControl);        // prefetcht0 (%rax)
  EXPECT_TRUE(of({0x0f, 0x0d, 0x08}).cacheControl);        // prefetchw (%rax)
  EXPECT_TRUE(of({0x0f, 0xae, 0x38}).cacheControl);        // clflush (%rax)
  EXPECT_TRUE(of({0x66, 0x0f, 0xae, 0x38}).cacheControl);  // clflushopt (%rax)
  EXPECT_TRUE(of({0x66, 0x0f, 0xae, 0x30}).cacheControl);  // clwb (%rax)
  EXPECT_FALSE(of({0x8b, 0x08}).cacheControl);             // mov (%rax),%ecx
}

TEST(X86Semantics, VectorIndex) {
  // vpgatherdd %xmm2,(%rax,%xmm1,4),%xmm0
  x86::Semantics s = of({0xc4, 0xe2, 0x69, 0x90, 0x04, 0x88});
  ASSERT_EQ(s.memCount, 1);
  EXPECT_EQ(s.mem[0].vectorIndex, 1);
  EXPECT_FALSE(s.mem[0].hasIndex());
  EXPECT_EQ(s.mem[0].base, int8_t(RAX));
  s = of({0x8b, 0x4c, 0x98, 0x10});  // mov 0x10(%rax,%rbx,4),%ecx
  EXPECT_EQ(s.mem[0].vectorIndex, x86::MemOperand::kNone);
  EXPECT_EQ(s.mem[0].index, int8_t(RBX));
}
