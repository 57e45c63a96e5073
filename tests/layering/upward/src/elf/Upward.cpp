// A lower layer including a higher one: check_layers.py must reject this
// tree (the layering.catches_upward test).
#include "elf/ElfImage.h"
#include "rewrite/Rewriter.h"
