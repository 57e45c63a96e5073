// The program as atomx sees it: procedures, their instructions, basic blocks,
// CFG edges and jump tables, all at their ORIGINAL addresses.
//
// The IR is plain data.  Analyses in src/analysis fill it in, in the order the
// ProcState enum lists; the layout in src/layout reads it and never changes
// it, so every later phase can rely on original addresses being the identity
// of an instruction.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "elf/ElfImage.h"
#include "support/InlineVector.h"
#include "x86/Decoder.h"

namespace atomx::ir {

// The CFG of a procedure has two kinds of edges.  Intra-procedural edges
// (FallThrough, Taken, JumpTable) join two blocks of the procedure and are
// the only ones in Block::succs, so code that walks the branch graph (layout,
// instrumentation edges, flags liveness) sees exactly the edges it always saw.
// The other kinds leave the procedure's blocks: they are in Block::outs.  A
// Call edge goes to a callee and control comes back to the call's
// fall-through block (which the FallThrough edge reaches); every other
// leaving kind goes to the procedure's virtual EXIT node, whose predecessors
// Procedure::exitPreds lists.
enum class EdgeKind : uint8_t {
  FallThrough,      // to the next block in address order
  Taken,            // the target of a direct jump or conditional branch
  JumpTable,        // one target of an indirect jump through a jump table
  Call,             // a direct or indirect call; `target` is the callee when known
  Return,           // ret: to the virtual exit
  TailCall,         // a branch out of the procedure (another procedure's entry, a
                    // .cold part, falling off the end) or an indirect jump no table
                    // explains in a procedure that takes no inner block's address
  Exit,             // a call that never comes back: a known no-return callee, or a
                    // call whose return address is outside the procedure
  Stop,             // ud2, hlt, int3: to the virtual exit
  UnknownIndirect,  // an indirect jump no table explains in a procedure whose inner
                    // blocks' addresses are taken (by itself, RIP-relative, or from
                    // outside: maybe a computed goto), or a branch into the
                    // procedure that is not a block start
};
const char* edgeKindName(EdgeKind kind);
// FallThrough, Taken and JumpTable: the kinds of Block::succs.
inline bool isIntraprocedural(EdgeKind kind) { return kind <= EdgeKind::JumpTable; }
// Every leaving kind except Call leads to the virtual exit.
inline bool leadsToExit(EdgeKind kind) { return kind > EdgeKind::Call; }

struct Edge {
  uint32_t to = 0;  // block index in the same procedure
  EdgeKind kind = EdgeKind::FallThrough;
};

// A predecessor: the block the edge comes from, and the edge's kind.
struct PredEdge {
  uint32_t from = 0;
  EdgeKind kind = EdgeKind::FallThrough;
};

// An edge that leaves the procedure's blocks (any kind but the three
// intra-procedural ones).  `target` is the callee or branch target when the
// instruction names it, otherwise 0.
struct OutEdge {
  EdgeKind kind = EdgeKind::Call;
  uint64_t target = 0;
};

struct Block {
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t firstInsn = 0;
  uint32_t insnCount = 0;
  // The edge lists (support/InlineVector.h: std::vector's read API, the
  // first few elements kept inside the block).
  InlineVector<Edge, 2> succs;      // intra-procedural edges only
  InlineVector<PredEdge, 2> preds;  // mirror of the succs of other blocks, same kinds
  InlineVector<OutEdge, 1> outs;    // calls, and the edges to the virtual exit
  bool isEntry = false;        // the procedure's entry point
  bool isLandingPad = false;   // reached by the unwinder (LSDA), maybe with no predecessor
  bool isAddressTaken = false; // its address is stored somewhere (relocation, lea)
  bool isExternalEntry = false;// entered by a branch from another procedure
};

struct JumpTable {
  uint64_t address = 0;   // first entry
  uint64_t base = 0;      // relative tables: entries hold target - base
  uint8_t entrySize = 0;  // 4 (relative) or 8 (absolute)
  bool relative = false;
  std::vector<uint64_t> entryTargets;  // one per entry, original addresses
  // The indirect jumps that dispatch through the table, when every place
  // that loads its base leads straight to one; otherwise empty, and any
  // indirect jump of the procedure may use it.
  std::vector<uint64_t> dispatchJumps;
};

enum class ProcState : uint8_t {
  Discovered,    // known from a symbol, extent fixed
  Disassembled,  // every byte decoded into instructions
  CfgBuilt,      // blocks, edges and jump tables known
  Movable,       // proven safe to move
  Unmovable,     // stays at its original address; `reason` says why
};
const char* procStateName(ProcState state);

struct Procedure {
  uint32_t id = 0;
  std::string name;
  std::vector<std::string> aliases;
  uint64_t start = 0;
  uint64_t end = 0;
  uint32_t section = 0;
  bool sizeInferred = false;  // symbol had no size: extent runs to the next symbol
  int32_t hotPart = -1;       // for a `foo.cold` part: the id of `foo`
  bool addressTaken = false;  // its entry's address is stored or computed somewhere (a
                              // relocation, a RIP-relative lea, an exported symbol, the
                              // entry point): code may reach it other than by a direct branch
  ProcState state = ProcState::Discovered;
  std::string reason;         // why it is Unmovable

  std::vector<x86::Insn> insns;
  bool fullyDecoded = false;  // insns cover [start, end) exactly
  std::vector<Block> blocks;
  // The predecessors of the virtual exit node: one per edge of Block::outs
  // whose kind leadsToExit, in block order.  Analyses number the exit node
  // blocks.size() (exitNode()).
  std::vector<PredEdge> exitPreds;
  std::vector<JumpTable> jumpTables;
  // Addresses inside this procedure that something outside its own branches
  // refers to (other procedures' branches, data, the unwinder).
  std::vector<uint64_t> externalLeaders;

  uint64_t size() const { return end - start; }
  uint32_t exitNode() const { return uint32_t(blocks.size()); }
  bool contains(uint64_t a) const { return a >= start && a < end; }
  bool isMovable() const { return state == ProcState::Movable; }
  // Index of the instruction starting exactly at `addr`, or -1.
  int64_t insnIndexAt(uint64_t addr) const;
  bool isBoundary(uint64_t addr) const { return addr == end || insnIndexAt(addr) >= 0; }
  // Index of the block containing `addr`, or -1.
  int64_t blockIndexAt(uint64_t addr) const;
  void markUnmovable(std::string why);
};

struct Program {
  const elf::ElfImage* image = nullptr;
  std::vector<Procedure> procs;             // sorted by start address
  // procs[i].start, in one compact array for procAt (indexProcedures()
  // fills it once the procedures are found; procAt searches procs itself
  // while it does not have their number).
  std::vector<uint64_t> procStarts;
  std::map<uint64_t, std::string> pltNames; // PLT entry address -> "name@plt"
  std::map<uint64_t, std::string> gotNames; // GOT slot address -> "name" (JUMP_SLOT, GLOB_DAT)

  void indexProcedures();
  Procedure* procAt(uint64_t addr);
  const Procedure* procAt(uint64_t addr) const;
  // The name of whatever code lives at `addr`: "proc+0x12", "puts@plt", or "".
  std::string describe(uint64_t addr) const;
};

}  // namespace atomx::ir
