// The analysis side's reader of the embedded facts (runtime/analysis/facts.c):
// records read a chunk at a time as they are asked for, by any number of
// threads at once, into slots laid end to end.  The blob is built here by
// hand from <atomx/facts.h>'s record layouts, each field a function of its
// record's number, so every value read can be checked.
#include <gtest/gtest.h>

#include <atomx/facts.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t kProcs = 40, kBlocksPerProc = 25, kInstsPerBlock = 5;
constexpr uint32_t kBlocks = kProcs * kBlocksPerProc, kInsts = kBlocks * kInstsPerBlock;

uint32_t operandsOf(uint32_t i) { return i % 4; }
uint64_t instPc(uint32_t i) { return 0x400000 + 7ull * i; }
uint8_t instSize(uint32_t i) { return uint8_t(1 + i % 15); }
int64_t operandDisp(uint32_t o) { return int64_t(o) * 1000003 - 500000000; }
bool operandRip(uint32_t o) { return o % 7 == 0; }
const char* const kMnemonics[3] = {"mov", "add", "jnz"};

struct Blob {
  std::string bytes;
  uint32_t operands = 0;
  std::vector<uint32_t> firstOperand;  // per instruction
  std::vector<uint32_t> instOfOperand;
};

template <class T> void put(std::string& b, const T& v) { b.append(reinterpret_cast<const char*>(&v), sizeof v); }

const Blob& blob() {
  static const Blob made = [] {
    Blob b;
    for (uint32_t i = 0; i < kInsts; ++i) {
      b.firstOperand.push_back(b.operands);
      for (uint32_t k = 0; k < operandsOf(i); ++k) b.instOfOperand.push_back(i);
      b.operands += operandsOf(i);
    }
    // Strings: "prog", the three mnemonics, "f.c", procedure names p0 ...
    std::string strings;
    auto add = [&](const std::string& s) {
      const uint32_t at = uint32_t(strings.size());
      strings += s, strings += '\0';
      return at;
    };
    const uint32_t program = add("prog"), file = add("f.c");
    uint32_t mnemonic[3];
    for (int k = 0; k < 3; ++k) mnemonic[k] = add(kMnemonics[k]);
    std::vector<uint32_t> procName;
    for (uint32_t p = 0; p < kProcs; ++p) procName.push_back(add("p" + std::to_string(p)));

    AtomxFactsHeader h{ATOMX_FACTS_MAGIC, ATOMX_FACTS_VERSION, kProcs, kBlocks, kInsts, b.operands, program, 0};
    put(b.bytes, h);
    for (uint32_t p = 0; p < kProcs; ++p) {
      const uint32_t first = p * kBlocksPerProc;
      AtomxFactsProc r{instPc(first * kInstsPerBlock), instPc((first + kBlocksPerProc) * kInstsPerBlock), procName[p],
                       first, kBlocksPerProc, 0};
      put(b.bytes, r);
    }
    for (uint32_t k = 0; k < kBlocks; ++k) {
      const uint32_t first = k * kInstsPerBlock;
      AtomxFactsBlock r{instPc(first), instPc(first + kInstsPerBlock), k / kBlocksPerProc, first, kInstsPerBlock,
                        uint8_t(k % 3), 2, 0};
      put(b.bytes, r);
    }
    for (uint32_t i = 0; i < kInsts; ++i) {
      AtomxFactsInst r{};
      r.pc = instPc(i), r.regsRead = i * 0x9E37ull, r.regsWritten = ~uint64_t(i);
      r.block = i / kInstsPerBlock, r.size = instSize(i), r.kind = uint8_t(i % 7);
      r.mnemonic = mnemonic[i % 3], r.category = mnemonic[(i + 1) % 3], r.file = file, r.line = i;
      r.firstOperand = b.firstOperand[i], r.operandCount = uint16_t(operandsOf(i));
      r.target = 3ull * i, r.condition = int8_t(int(i % 17) - 1);
      put(b.bytes, r);
    }
    for (uint32_t o = 0; o < b.operands; ++o) {
      AtomxFactsOperand r{};
      r.kind = uint8_t(o % 5), r.reg = int8_t(o % 16), r.base = int8_t(int(o % 3) - 1), r.bits = uint16_t(o % 512);
      r.ripRelative = operandRip(o), r.cause = uint8_t(o % 7);
      const uint64_t disp = uint64_t(operandDisp(o));
      r.dispLow = uint32_t(disp), r.dispHigh = uint32_t(disp >> 32);
      put(b.bytes, r);
    }
    b.bytes += strings;
    return b;
  }();
  return made;
}

// Every field of instruction i and its operands as the reader gives them.
void checkInst(uint32_t i) {
  const Blob& b = blob();
  const AtomxInstFacts* x = AtomxInst(i);
  ASSERT_NE(x, nullptr);
  ASSERT_EQ(x->pc, instPc(i));
  ASSERT_EQ(x->size, instSize(i));
  ASSERT_EQ(x->block, i / kInstsPerBlock);
  ASSERT_EQ(x->regsRead, i * 0x9E37ull);
  ASSERT_STREQ(x->mnemonic, kMnemonics[i % 3]);
  ASSERT_STREQ(x->file, "f.c");
  ASSERT_EQ(x->line, i);
  ASSERT_EQ(x->operandCount, operandsOf(i));
  ASSERT_EQ(x->firstOperand, b.firstOperand[i]);
  for (uint32_t k = 0; k < x->operandCount; ++k) {
    const uint32_t o = x->firstOperand + k;
    const AtomxOperandFacts* op = AtomxOperand(o);
    ASSERT_NE(op, nullptr);
    ASSERT_EQ(op->kind, o % 5);
    ASSERT_EQ(op->reg, int(o % 16));
    ASSERT_EQ(op->bits, o % 512);
    ASSERT_EQ(op->disp, operandDisp(o));
    ASSERT_EQ(op->ripRelative, operandRip(o));
    ASSERT_EQ(op->cause, o % 7);
    // A %rip-relative operand's target: its instruction's end plus the displacement.
    if (op->ripRelative) {
      ASSERT_EQ(op->target, instPc(i) + instSize(i) + uint64_t(operandDisp(o)));
    }
  }
}

// One process's reader: the first use of each kind below is its first read.
TEST(FactsRead, ChunksLaidEndToEndAndThreadsReadTheSameRecords) {
  const Blob& b = blob();
  atomx_facts_init(b.bytes.data(), long(b.bytes.size()));
  ASSERT_EQ(AtomxInstCount(), long(kInsts));
  ASSERT_EQ(AtomxOperandCount(), long(b.operands));
  ASSERT_STREQ(AtomxProgramFile(), "prog");

  // Blocks: the chunk of block 900 is read first, then block 3's: its slot
  // comes right after (the chunks a process reads lie together, so its
  // pages are those it read, not every page the records are spread over).
  const AtomxBlockFacts* late = AtomxBlock(900);
  const AtomxBlockFacts* early = AtomxBlock(3);
  ASSERT_NE(late, nullptr);
  ASSERT_NE(early, nullptr);
  EXPECT_EQ(late->firstInst, 900 * kInstsPerBlock);
  EXPECT_EQ(early->firstInst, 3 * kInstsPerBlock);
  const AtomxBlockFacts* lateChunk = late - 900 % 16;  // facts.c's kChunk: 16 records
  EXPECT_EQ(early - 3, lateChunk + 16);
  EXPECT_EQ(AtomxBlock(901), late + 1);  // the same chunk, the same slot

  // Instructions and operands: 8 threads, each in an order of its own.
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([t, &failures] {
      std::vector<uint32_t> order(kInsts);
      for (uint32_t i = 0; i < kInsts; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(unsigned(t)));
      for (uint32_t i : order) {
        checkInst(i);
        if (::testing::Test::HasFatalFailure()) {
          ++failures[size_t(t)];
          return;
        }
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(failures[size_t(t)], 0) << "thread " << t;
  // The same record is one address, whichever thread read it.
  for (uint32_t i = 0; i < kInsts; i += 97) EXPECT_EQ(AtomxInst(i), AtomxInst(i));
  for (uint32_t p = 0; p < kProcs; ++p) {
    const AtomxProcFacts* pf = AtomxProc(p);
    ASSERT_NE(pf, nullptr);
    EXPECT_EQ(std::string(pf->name), "p" + std::to_string(p));
    EXPECT_EQ(pf->firstBlock, p * kBlocksPerProc);
  }
  EXPECT_EQ(AtomxInst(kInsts), nullptr);
  EXPECT_EQ(AtomxInst(-1), nullptr);
}

}  // namespace
