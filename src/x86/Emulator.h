// The emulator: which instructions the data-address regenerator can repeat
// from register values it already knows (abstract execution's "difficult"
// instructions, Larus' qpt), compiled from a decoded instruction to an
// EmuOp (EmulatorCore.h, which also holds the code that repeats one).  It
// is the one definition of "can be repeated": analysis/DataSlices asks it
// which needed registers an instruction computes, and the regenerator and
// the slices oracle run the ops it compiles.
//
// Supported, with x86's rules for 32-bit (zero-extending) and 8/16-bit
// (merging) destinations: mov of a register or an immediate to a register;
// lea (32-bit address size too; %rip-relative: the original address plus
// the load bias); add, sub, and, or, xor, inc, dec, neg, not with register
// or immediate operands (xor/sub of a register with itself: a zeroing idiom
// that reads nothing); shl/sal, shr, sar, rol, ror by an immediate or by %cl; imul by
// a constant (3 operands) and of two registers (2 operands); movsx, movsxd,
// movzx from registers; cbw/cwde/cdqe and cwd/cdq/cqo; xchg of two
// registers; and the effects on %rsp of push, pushf, pop, popf (a pop's
// destination is a load: not computed), call (seen from its caller once it
// returns: %rsp as before), ret and leave (%rsp = %rbp + 8; %rbp is a
// load); and, through compileSlotEmu, a 4- or 8-byte store of a register
// or an immediate to a stack slot and its reload, when the analysis knows
// the slot holds what was stored.  Anything else -- a memory source, high-byte
// registers, flags-dependent results (adc, sbb, cmov, setcc) -- is not
// emulable.
#pragma once

#include <Zydis/Zydis.h>

#include "x86/EmulatorCore.h"
#include "x86/Semantics.h"

namespace atomx::x86 {

// The op repeating the instruction at `address` (kind None: nothing).  It
// may compute only some of the registers the instruction writes (pop:
// %rsp, not the destination): op.outputs() says which.
EmuOp compileEmu(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands, uint64_t address);

// A mov of a 4- or 8-byte general register or immediate to memory
// (SlotStore), or of 4 or 8 bytes of memory to a general register of that
// width (SlotLoad): what a stack slot's store and reload would be, if its
// memory operand (Semantics::mem[0]) is a slot -- analysis/DataSlices
// decides that and numbers the slot (op.slot).  Anything else: kind None.
EmuOp compileSlotEmu(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands);

// The flag setter an evaluated predicate repeats (FlagOp): cmp, sub,
// test, and, add, inc, dec of a general register (no high byte) with a
// register of the same width or an immediate; anything else, a memory
// operand included: kind None.
FlagOp compileFlags(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands);

// Whether every register of `outputsNeeded` that the instruction writes
// can be computed by repeating it (those it does not write need nothing).
bool emulable(const ZydisDecodedInstruction& insn, const ZydisDecodedOperand* operands, const Semantics& s,
              uint64_t address, RegSet outputsNeeded);

}  // namespace atomx::x86
