#!/usr/bin/env bash
# bzip2 workload: compress at several block sizes, decompress (normal and
# --small), test, plus the error paths for corrupted/truncated/non-bzip2 input.
# Usage: bzip2.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

gen_text 2 25000 >text.txt
# long runs exercise bzip2's run-length stage and the randomised-block paths
awk 'BEGIN { for (i = 0; i < 20000; i++) print substr("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbbbbbbbbbbcccccccc", 1, 1 + (i * 7) % 70) }' >runs.txt

run "compress -9 -v" "$B" -9 -v -c text.txt >text.9.bz2
run "compress -1" "$B" -1 -c text.txt >text.1.bz2
run "compress -5 stdin" "$B" -5 <text.txt >text.5.bz2
run "compress runs" "$B" -c -vv runs.txt >runs.bz2
run "compress empty" "$B" -c </dev/null >empty.bz2
cp runs.txt keep.txt
run "compress in place" "$B" -k keep.txt

run "decompress -9" "$B" -d -c text.9.bz2 >text.9.out
run "decompress -1 small" "$B" -d -s -c text.1.bz2 >text.1.out
run "decompress stdin" "$B" -d <text.5.bz2 >text.5.out
run "decompress concatenated" "$B" -dc runs.bz2 empty.bz2 runs.bz2 >runs.cat
run "decompress in place" "$B" -d -f keep.txt.bz2
run "test" "$B" -t -v text.9.bz2 text.1.bz2 runs.bz2 2>&1

# error paths
cp text.9.bz2 corrupt.bz2
printf 'XYZ' | dd of=corrupt.bz2 bs=1 seek=30000 conv=notrunc status=none
run "corrupt" "$B" -d -c corrupt.bz2 >corrupt.out
run "corrupt test" "$B" -t corrupt.bz2
head -c 50000 text.1.bz2 >trunc.bz2
run "truncated" "$B" -d -c trunc.bz2 >trunc.out
run "not bzip2" "$B" -d -c text.txt >/dev/null
run "missing" "$B" -d no-such-file.bz2
run "bad option" "$B" --no-such-option
run "help" "$B" --help
