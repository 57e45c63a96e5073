// The recorder's stepper (runtime/trace/stepper.c) against every form of
// witness stores instrument::emitStores produces (runtime/trace/stores.h):
// every register instrument::storeScratch may choose, and %rax saved when
// it chooses none; every count of witness bytes a site may store (1..127,
// so every mix of 4-, 2- and 1-byte pieces and every offset).  Each
// sequence, run instruction by instruction on a context (as when a signal
// interrupts it), must write the site's bytes at the cursor, move the
// cursor past them, and leave every register as it was but the dead
// register it used, which then holds the cursor; and likewise when its
// first store finds the buffer full, or the thread with no buffer yet (the
// stepper then gets a fresh one, as the recorder's fault handler would).
// And the forms of a loop that holds the cursor in a register
// (instrument::promoteTraceCursor): its entry's Load, its stores through
// the register, its exit's Save, with the register's value spilled or not.
#include <gtest/gtest.h>

#include <runtime/trace/stepper.h>
#include <runtime/trace/stores.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "instrument/CallCode.h"
#include "instrument/Plan.h"
#include "instrument/SaveSet.h"

namespace {

using namespace atomx;

// The recorder's side, as stepper.h asks for it: one thread, its cursor,
// the buffer it points into, and the fresh buffer a full one's store gets.
struct Buffers {
  uint8_t* cursor = nullptr;
  uint8_t* base = nullptr;
  size_t size = 0;
  uint8_t* fresh = nullptr;
  size_t freshSize = 0;
  int swaps = 0;
  uint32_t librarySlot = 0;
  int promoted = -1;   // a promoted loop's register: it holds the cursor (the recorder's AtomxCursorRegion)
  uint64_t spill = 0;  // %fs:ATOMX_TRACE_SPILL_OFFSET
};
Buffers world;

}  // namespace

extern "C" {
uint8_t* step_cursor(void) { return world.cursor; }
void step_set_cursor(uint8_t* c) { world.cursor = c; }
void step_set_library_slot(uint32_t site) { world.librarySlot = site; }
uint64_t step_spill(void) { return world.spill; }
void step_set_spill(uint64_t v) { world.spill = v; }
// As buffer.c's: inside the buffer the register points into, or, when the
// register holds the cursor, a fresh buffer for a thread's first store (the
// cursor is 0) or one that reaches past the buffer's end.
uint8_t* step_store_at(greg_t* g, int reg, int disp, int width) {
  uint8_t* r = reinterpret_cast<uint8_t*>(g[kGreg[reg]]);
  uint8_t* at = r + disp;
  if (world.base && r >= world.base && at >= world.base && at + width <= world.base + world.size) return at;
  if ((reg != world.promoted && r != world.cursor) || !world.fresh) return nullptr;
  world.base = world.fresh, world.size = world.freshSize, world.fresh = nullptr;
  ++world.swaps;
  g[kGreg[reg]] = reinterpret_cast<greg_t>(world.base);
  world.cursor = world.base;
  return world.base + disp;
}
}

namespace {

// Every register storeScratch may choose (from a set of dead registers
// that holds just it), then NONE: %rax, saved.
std::vector<ZydisRegister> scratchChoices() {
  std::set<ZydisRegister> seen;
  std::vector<ZydisRegister> out;
  for (unsigned hw = 0; hw < 16; ++hw) {
    const ZydisRegister r = instrument::storeScratch(x86::RegSet::gpr(hw));
    if (r != ZYDIS_REGISTER_NONE && seen.insert(r).second) out.push_back(r);
  }
  out.push_back(instrument::storeScratch(x86::RegSet{}));
  return out;
}

std::vector<uint8_t> witnesses(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t(0x11 + 37 * i + n);
  return bytes;
}

// What a sequence does to the buffers and the context.
enum class Start { InBuffer, FullBuffer, NoBuffer };

struct Sequence {
  std::string what;
  std::vector<uint8_t> code;
  std::vector<uint8_t> bytes;
};

Sequence emit(ZydisRegister scratch, const std::vector<std::vector<uint8_t>>& requests) {
  std::vector<instrument::StoreRequest> stores(requests.size());
  instrument::Site site;
  site.storeScratch = scratch;
  Sequence run;
  for (size_t k = 0; k < requests.size(); ++k) {
    stores[k].bytes = requests[k];
    site.stores.push_back(&stores[k]);
    run.bytes.insert(run.bytes.end(), requests[k].begin(), requests[k].end());
  }
  instrument::emitStores(site, run.code);
  run.what = std::string(scratch == ZYDIS_REGISTER_NONE ? "saved %rax" : ZydisRegisterGetString(scratch)) + ", " +
             std::to_string(run.bytes.size()) + " bytes";
  return run;
}

void stepThrough(ZydisRegister scratch, const Sequence& run, Start start) {
  SCOPED_TRACE(run.what + (start == Start::InBuffer ? "" : start == Start::FullBuffer ? ", full buffer" : ", no buffer"));
  const size_t n = run.bytes.size();
  std::vector<uint8_t> buffer(256, 0), fresh(256, 0);
  std::vector<uint64_t> stack(512, 0x5a5a5a5a5a5a5a5aull);
  const size_t cursorAt = start == Start::FullBuffer ? buffer.size() - n + 1 : 8;
  world = Buffers{};
  if (start != Start::NoBuffer) world.base = buffer.data(), world.size = buffer.size(), world.cursor = buffer.data() + cursorAt;
  world.fresh = fresh.data(), world.freshSize = fresh.size();

  gregset_t g;
  for (int i = 0; i < NGREG; ++i) g[i] = greg_t(0x1000 * (i + 1));
  uint64_t* const top = stack.data() + 384;
  g[REG_RSP] = reinterpret_cast<greg_t>(top);
  g[REG_RIP] = reinterpret_cast<greg_t>(run.code.data());
  gregset_t before;
  std::memcpy(before, g, sizeof g);

  const greg_t end = reinterpret_cast<greg_t>(run.code.data() + run.code.size());
  for (int steps = 0; g[REG_RIP] != end; ++steps) {
    ASSERT_LT(steps, 200);
    const greg_t rip = g[REG_RIP];
    ASSERT_EQ(step_inserted(g), 1) << "refused the instruction at offset "
                                   << (rip - reinterpret_cast<greg_t>(run.code.data()));
  }

  // The bytes, where the cursor was (or in the fresh buffer), and nothing else written.
  const bool swapped = start != Start::InBuffer;
  EXPECT_EQ(world.swaps, swapped ? 1 : 0);
  const std::vector<uint8_t>& into = swapped ? fresh : buffer;
  const size_t at = swapped ? 0 : cursorAt;
  EXPECT_EQ(std::vector<uint8_t>(into.begin() + at, into.begin() + at + n), run.bytes);
  for (size_t i = 0; i < into.size(); ++i) {
    if (i < at || i >= at + n) {
      ASSERT_EQ(into[i], 0) << "byte " << i << " of the buffer written";
    }
  }
  if (swapped) {
    for (size_t i = 0; i < buffer.size(); ++i) ASSERT_EQ(buffer[i], 0) << "byte " << i << " of the full buffer written";
  }
  EXPECT_EQ(world.cursor, into.data() + at + n);

  // The registers: as they were, but the scratch register, which holds the cursor.
  const int changed = scratch == ZYDIS_REGISTER_NONE ? -1 : kGreg[scratch - ZYDIS_REGISTER_RAX];
  for (int i = 0; i < NGREG; ++i) {
    if (i == REG_RIP) continue;
    if (i == changed) EXPECT_EQ(g[i], reinterpret_cast<greg_t>(world.cursor)) << "the scratch register";
    else EXPECT_EQ(g[i], before[i]) << "gregs[" << i << "]";
  }
  // The red zone below the stack pointer kept (a saved %rax goes below it).
  for (const uint64_t* p = top - 16; p < top; ++p) EXPECT_EQ(*p, 0x5a5a5a5a5a5a5a5aull) << "the red zone";
}

TEST(TraceStepper, RunsEveryFormOfWitnessStores) {
  const std::vector<ZydisRegister> choices = scratchChoices();
  // The registers without a SIB-free disp8 form are never chosen.
  for (ZydisRegister r : choices) EXPECT_TRUE(r != ZYDIS_REGISTER_RSP && r != ZYDIS_REGISTER_R12);
  EXPECT_EQ(choices.size(), 15u);  // 14 registers, and NONE
  for (ZydisRegister scratch : choices)
    for (size_t n = 1; n <= ATOMX_STORES_MAX_BYTES; ++n) {
      const Sequence run = emit(scratch, {witnesses(n)});
      for (Start start : {Start::InBuffer, Start::FullBuffer, Start::NoBuffer}) {
        stepThrough(scratch, run, start);
        if (HasFatalFailure() || HasNonfatalFailure()) return;  // one form's failures, not 5,715
      }
    }
}

TEST(TraceStepper, RunsTheStoresOfSeveralRequestsAtOneSite) {
  for (ZydisRegister scratch : scratchChoices()) {
    const Sequence run = emit(scratch, {{1, 2, 3}, {4}, {5, 6, 7, 8, 9}});
    ASSERT_EQ(run.bytes, (std::vector<uint8_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
    stepThrough(scratch, run, Start::InBuffer);
  }
}

TEST(TraceStepper, SetsAMeasuredLibraryCallsSite) {
  // A library call's arguments, then its site in the thread's library slot
  // (runtime/trace/library.c): stepped as the CPU would run them.
  for (ZydisRegister scratch : scratchChoices()) {
    std::vector<instrument::StoreRequest> stores(1);
    stores[0].registers = ATOMX_TRACE_LIBRARY_ARGUMENTS;
    stores[0].librarySite = 0x12345;
    instrument::Site site;
    site.storeScratch = scratch;
    site.stores.push_back(&stores[0]);
    std::vector<uint8_t> code;
    instrument::emitStores(site, code);
    world = Buffers{};
    std::vector<uint8_t> buffer(256, 0);
    world.base = buffer.data(), world.size = buffer.size(), world.cursor = buffer.data();
    gregset_t g;
    for (int i = 0; i < NGREG; ++i) g[i] = greg_t(0x1000 * (i + 1));
    std::vector<uint64_t> stack(512, 0);
    g[REG_RSP] = reinterpret_cast<greg_t>(stack.data() + 384);
    g[REG_RIP] = reinterpret_cast<greg_t>(code.data());
    const greg_t end = reinterpret_cast<greg_t>(code.data() + code.size());
    for (int steps = 0; g[REG_RIP] != end; ++steps) {
      ASSERT_LT(steps, 50);
      ASSERT_EQ(step_inserted(g), 1);
    }
    EXPECT_EQ(world.librarySlot, 0x12345u);
    EXPECT_EQ(world.cursor, buffer.data() + 24);  // %rdx %rsi %rdi
    uint64_t rdi;
    std::memcpy(&rdi, buffer.data() + 16, 8);
    EXPECT_EQ(rdi, uint64_t(g[REG_RDI]));
  }
}

TEST(TraceStepper, RefusesOtherInstructions) {
  // A store that is not a trace store's (its register does not hold the
  // cursor, and it points into no buffer), and an instruction of no
  // inserted form: the context is left alone.
  world = Buffers{};
  std::vector<uint8_t> buffer(64, 0);
  world.base = buffer.data(), world.size = buffer.size(), world.cursor = buffer.data();
  const std::vector<std::vector<uint8_t>> others = {
      {0xc6, 0x41, 0x05, 0x07},                     // movb $7,5(%rcx): %rcx is not the cursor
      {0x48, 0x89, 0xc8},                           // mov %rcx,%rax
      {0x0f, 0x0b, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90},  // ud2
  };
  for (const std::vector<uint8_t>& code : others) {
    gregset_t g;
    for (int i = 0; i < NGREG; ++i) g[i] = greg_t(0x1000 * (i + 1));
    g[REG_RIP] = reinterpret_cast<greg_t>(code.data());
    gregset_t before;
    std::memcpy(before, g, sizeof g);
    EXPECT_EQ(step_inserted(g), 0);
    EXPECT_EQ(std::memcmp(g, before, sizeof g), 0);
  }
}

}  // namespace

// A data trace's values (StoreRequest::registers): each general register
// but the cursor's, in its first 8, 4, 2 or 1 bytes, beside a tag, for
// every scratch choice (a saved one too: %rsp is then corrected by the
// addq form) and every start (in a buffer, a full one, none yet): the
// bytes are the registers' as the context had them.
TEST(TraceStepper, RunsTheStoresOfRegisterValues) {
  for (ZydisRegister scratch : scratchChoices())
    for (unsigned width : {8u, 4u, 2u, 1u})
      for (Start start : {Start::InBuffer, Start::FullBuffer, Start::NoBuffer}) {
        instrument::StoreRequest tag, values;
        tag.bytes = {0xab};
        const int cursorReg = scratch == ZYDIS_REGISTER_NONE ? -1 : int(scratch - ZYDIS_REGISTER_RAX);
        for (unsigned r = 0; r < 16; ++r) {
          if (int(r) == cursorReg) continue;
          values.registers |= uint16_t(1u << r);
          values.widths[r] = uint8_t(r == 4 ? 8 : width);  // %rsp always whole
        }
        instrument::Site site;
        site.storeScratch = scratch;
        site.stores = {&tag, &values};
        std::vector<uint8_t> code;
        instrument::emitStores(site, code);
        SCOPED_TRACE(std::string(scratch == ZYDIS_REGISTER_NONE ? "saved" : ZydisRegisterGetString(scratch)) + ", width " +
                     std::to_string(width) + ", start " + std::to_string(int(start)));
        std::vector<uint8_t> buffer(256, 0), fresh(256, 0);
        std::vector<uint64_t> stack(512, 0x5a5a5a5a5a5a5a5aull);
        world = Buffers{};
        const size_t cursorAt = 8;
        if (start == Start::InBuffer) world.base = buffer.data(), world.size = buffer.size(), world.cursor = buffer.data() + cursorAt;
        if (start == Start::FullBuffer) world.base = buffer.data(), world.size = 16, world.cursor = buffer.data() + 16;
        world.fresh = fresh.data(), world.freshSize = fresh.size();
        gregset_t g;
        for (int i = 0; i < NGREG; ++i) g[i] = greg_t(0x0102030405060708ll * (i + 1));
        g[REG_RSP] = reinterpret_cast<greg_t>(stack.data() + 384);
        g[REG_RIP] = reinterpret_cast<greg_t>(code.data());
        gregset_t before;
        std::memcpy(before, g, sizeof g);
        std::vector<uint8_t> expected = {0xab};
        for (unsigned r = 0; r < 16; ++r)
          if (values.registers >> r & 1) {
            const uint64_t v = uint64_t(before[kGreg[r]]);
            for (unsigned b = 0; b < (values.widths[r] ? values.widths[r] : 8u); ++b) expected.push_back(uint8_t(v >> (8 * b)));
          }
        const greg_t end = reinterpret_cast<greg_t>(code.data() + code.size());
        for (int steps = 0; g[REG_RIP] != end; ++steps) {
          ASSERT_LT(steps, 200);
          ASSERT_EQ(step_inserted(g), 1);
        }
        const bool swapped = start != Start::InBuffer;
        const std::vector<uint8_t>& into = swapped ? fresh : buffer;
        const size_t at = swapped ? 0 : cursorAt;
        ASSERT_LE(at + expected.size(), into.size());
        EXPECT_EQ(std::vector<uint8_t>(into.begin() + at, into.begin() + at + expected.size()), expected);
        EXPECT_EQ(world.cursor, into.data() + at + expected.size());
        for (int i = 0; i < NGREG; ++i)
          if (i != REG_RIP && i != (cursorReg >= 0 ? kGreg[cursorReg] : -1)) EXPECT_EQ(g[i], before[i]) << "gregs[" << i << "]";
      }
}

// A promoted loop's forms, for every register analysis::promoteCursor may
// choose, spilled or not: on an entry edge the edge's stores through %fs
// then the Load (the register's value to the spill word first); inside
// the loop stores through the register alone, the cursor in %fs left
// behind, in a buffer and at a full buffer's end; on an exit edge the
// edge's stores through the register, then the Save (the register's value
// back from the spill word).
TEST(TraceStepper, RunsThePromotedLoopsForms) {
  using Move = instrument::StoreRequest::Move;
  for (unsigned hw : {11u, 10u, 9u, 8u, 7u, 6u, 1u, 2u, 3u, 5u, 13u, 14u, 15u})
    for (bool spilled : {false, true})
      for (size_t n : {size_t(1), size_t(6), size_t(ATOMX_STORES_MAX_BYTES)})
        for (int part = 0; part < 4; ++part) {  // entry, inside, inside at a full buffer, exit
          SCOPED_TRACE(std::string(ZydisRegisterGetString(x86::reg64(hw))) + (spilled ? " spilled" : "") + ", " +
                       std::to_string(n) + " bytes, part " + std::to_string(part));
          instrument::StoreRequest edge, move;
          edge.bytes = witnesses(n);
          move.cursor = int8_t(hw), move.spilled = spilled;
          move.move = part == 0 ? Move::Load : Move::Save;
          instrument::Site site;
          site.storeScratch = ZYDIS_REGISTER_RAX;
          if (part != 0) edge.cursor = int8_t(hw);
          if (part == 1 || part == 2) site.stores = {&edge};
          else site.stores = {&edge, &move};
          std::vector<uint8_t> code;
          instrument::emitStores(site, code);

          std::vector<uint8_t> buffer(256, 0), fresh(256, 0);
          world = Buffers{};
          world.base = buffer.data(), world.size = buffer.size(), world.cursor = buffer.data() + 8;
          world.fresh = fresh.data(), world.freshSize = fresh.size();
          world.promoted = part != 0 ? int(hw) : -1;
          world.spill = 0x5151;
          gregset_t g;
          for (int i = 0; i < NGREG; ++i) g[i] = greg_t(0x1000 * (i + 1));
          uint8_t* const loopAt = part == 2 ? buffer.data() + buffer.size() - n + 1 : buffer.data() + 40;
          if (part != 0) g[kGreg[hw]] = reinterpret_cast<greg_t>(loopAt);  // the loop's cursor
          g[REG_RIP] = reinterpret_cast<greg_t>(code.data());
          gregset_t before;
          std::memcpy(before, g, sizeof g);
          const greg_t end = reinterpret_cast<greg_t>(code.data() + code.size());
          for (int steps = 0; g[REG_RIP] != end; ++steps) {
            ASSERT_LT(steps, 200);
            ASSERT_EQ(step_inserted(g), 1);
          }
          const std::vector<uint8_t> bytes = witnesses(n);
          const uint8_t* wrote = part == 0 ? buffer.data() + 8 : part == 2 ? fresh.data() : loopAt;
          EXPECT_EQ(std::vector<uint8_t>(wrote, wrote + n), bytes);
          if (part == 0) {  // the cursor past the edge's bytes, in the register too
            EXPECT_EQ(world.cursor, buffer.data() + 8 + n);
            EXPECT_EQ(g[kGreg[hw]], reinterpret_cast<greg_t>(world.cursor));
            EXPECT_EQ(world.spill, spilled ? uint64_t(before[kGreg[hw]]) : 0x5151u);
          } else if (part == 3) {  // the edge's bytes through the register, then the cursor saved
            EXPECT_EQ(world.cursor, loopAt + n);
            EXPECT_EQ(g[kGreg[hw]], spilled ? greg_t(0x5151) : reinterpret_cast<greg_t>(loopAt + n));
          } else {  // the register moves on, %fs's cursor is left behind (or given the fresh buffer)
            EXPECT_EQ(g[kGreg[hw]], reinterpret_cast<greg_t>(wrote + n));
            EXPECT_EQ(world.cursor, part == 2 ? fresh.data() : buffer.data() + 8);
            EXPECT_EQ(world.swaps, part == 2 ? 1 : 0);
          }
          for (int i = 0; i < NGREG; ++i)
            if (i != REG_RIP && i != kGreg[hw] && i != REG_RAX) EXPECT_EQ(g[i], before[i]) << "gregs[" << i << "]";
          if (HasFatalFailure() || HasNonfatalFailure()) return;
        }
}
