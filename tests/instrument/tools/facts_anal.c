/* facts.out: every procedure, block and instruction of the embedded facts
 * (facts_inst.cpp), and each block's exact count beside its own
 * increment's. */
#include <atomx/analysis.h>
#include <atomx/facts.h>
#include <inttypes.h>
#include <stdio.h>

void FactsDump(long *exact, long *each) {
  FILE *f = fopen(AtomxOutputPath("facts.out"), "w");
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
        fprintf(f, "inst %u %#" PRIx64 " block %u size %u kind %u mem %u access %u bytes %u read %#" PRIx64
                   " written %#" PRIx64 " %s %s %s:%u\n",
                i, x->pc, x->block, x->size, x->kind, x->memOperands, x->access, x->accessSize, x->regsRead,
                x->regsWritten, x->mnemonic, x->category, x->file, x->line);
      }
    }
  }
  fprintf(f, "end %ld %ld %ld %d\n", AtomxProcCount(), AtomxBlockCount(), AtomxInstCount(),
          AtomxProc(AtomxProcCount()) == NULL && AtomxBlock(-1) == NULL);
  fclose(f);
}
