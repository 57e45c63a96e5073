/* The ATOM paper's branch-counting tool, analysis routines (Figure 3).
 * Typos fixed: FILE, the missing semicolon and <stdlib.h>, "struct BranchInfo",
 * and %ld for the long counters. */
#include <stdio.h>
#include <stdlib.h>
FILE *file;

struct BranchInfo{
    long taken;
    long notTaken;
} *bstats;

void OpenFile(int n){
    bstats = (struct BranchInfo *)
                malloc (n * sizeof(struct BranchInfo));
    file = fopen("btaken.out", "w");
    fprintf(file, "PC \t Taken \t Not Taken \n");
}

void CondBranch(int n, long taken){
    if (taken)
        bstats[n].taken++;
    else
        bstats[n].notTaken++;
}

void PrintBranch(int n, long pc){
    fprintf(file, "0x%lx \t %ld \t %ld\n",
            pc, bstats[n].taken, bstats[n].notTaken);
}

void CloseFile() {
    fclose(file);
}
