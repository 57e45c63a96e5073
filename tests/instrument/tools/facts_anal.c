/* facts.out: every procedure, block and instruction of the embedded facts
 * (facts_inst.cpp), and each block's exact count beside its own
 * increment's.  An instruction's names and source line are printed as
 * AtomxInstNamesOf gives them, which the end line's range check also
 * requires to be its record's own strings. */
#include <atomx/analysis.h>
#include <atomx/facts.h>
#include <inttypes.h>
#include <stdio.h>

void FactsDump(long *exact, long *each) {
  FILE *f = fopen(AtomxOutputPath("facts.out"), "w");
  int namesAgree = 1;
  fprintf(f, "program %s\n", AtomxProgramFile());
  for (long p = 0; p < AtomxProcCount(); ++p) {
    const AtomxProcFacts *pf = AtomxProc(p);
    fprintf(f, "proc %ld %s %#" PRIx64 " %#" PRIx64 " %u %u\n", p, pf->name, pf->pc, pf->endPc, pf->firstBlock,
            pf->blockCount);
    for (uint32_t b = pf->firstBlock; b < pf->firstBlock + pf->blockCount; ++b) {
      const AtomxBlockFacts *bf = AtomxBlock(b);
      fprintf(f, "block %u %#" PRIx64 " %#" PRIx64 " proc %u insts %u count %ld %ld\n", b, bf->pc, bf->endPc, bf->proc,
              bf->instCount, exact[b], each[b]);
      for (uint32_t i = bf->firstInst; i < bf->firstInst + bf->instCount; ++i) {
        const AtomxInstFacts *x = AtomxInst(i);
        const AtomxInstNames n = AtomxInstNamesOf(i);
        namesAgree &= n.mnemonic == x->mnemonic && n.category == x->category && n.file == x->file && n.line == x->line;
        fprintf(f, "inst %u %#" PRIx64 " block %u size %u kind %u mem %u access %u bytes %u read %#" PRIx64
                   " written %#" PRIx64 " %s %s %s:%u\n",
                i, x->pc, x->block, x->size, x->kind, x->memOperands, x->access, x->accessSize, x->regsRead,
                x->regsWritten, n.mnemonic, n.category, n.file, n.line);
        fprintf(f, "sem %u %u %u %u %u %d %d %#" PRIx64 " %u\n", i, x->flagsRead, x->flagsWritten,
                x->flagsMaybeWritten, x->flagsLiveAfter, x->condition, x->traits, x->target, x->operandCount);
        for (uint32_t k = 0; k < x->operandCount; ++k) {
          const AtomxOperandFacts *o = AtomxOperand(x->firstOperand + k);
          fprintf(f, "op %u %u %d %d %d %d %d %d %u %u %u %u %d %d %u %d %u %d %d %" PRId64 " %#" PRIx64 "\n", i, k,
                  o->kind, o->regKind, o->type, o->access, o->reg, o->memIndex, o->regBits, o->bits, o->elementBits,
                  o->elements, o->base, o->index, o->scale, o->segment, o->size, o->memAccess, o->ripRelative,
                  o->disp, o->target);
        }
      }
    }
  }
  fprintf(f, "end %ld %ld %ld %d %ld\n", AtomxProcCount(), AtomxBlockCount(), AtomxInstCount(),
          AtomxProc(AtomxProcCount()) == NULL && AtomxBlock(-1) == NULL && AtomxOperand(AtomxOperandCount()) == NULL &&
              namesAgree && AtomxInstNamesOf(AtomxInstCount()).mnemonic == NULL && AtomxInstNamesOf(-1).file == NULL,
          AtomxOperandCount());
  fclose(f);
}
