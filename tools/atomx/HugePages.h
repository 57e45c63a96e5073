// Transparent huge pages for atomx's own heap.
//
// A rewrite touches tens of MB of fresh memory (the instructions, the
// blocks, the layout's tables), and with 4 KB pages the kernel's page
// faults and page clearing are about a sixth of its CPU time: on the
// benchmark machine, glibc's huge-page heap (`glibc.malloc.hugetlb=1`) makes
// the rewrite of atomx itself 17% faster and of sqlite3 19%.  glibc takes
// that setting only from GLIBC_TUNABLES when a process starts, so atomx
// starts itself again once with it added, and the second process puts the
// environment back before it does anything else: the programs and
// compilers it runs see the environment atomx was given.
//
// Done only where it helps: when the kernel leaves huge pages to madvise
// (/sys/kernel/mm/transparent_hugepage/enabled is "[madvise]"; "always"
// needs nothing and "never" allows nothing), when GLIBC_TUNABLES does not
// already say, and unless ATOMX_HUGE_PAGES=0.  If the second start fails,
// atomx goes on as it is.
#pragma once

namespace atomx::cli {

// Call first in main(); returns only in the process that goes on.
void startWithHugePageHeap(char** argv);

}  // namespace atomx::cli
