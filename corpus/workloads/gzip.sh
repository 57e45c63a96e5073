#!/usr/bin/env bash
# gzip workload: compress/decompress/test/list at several levels, plus the
# error paths for a truncated and a corrupted file and a missing file.
# Usage: gzip.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

gen_text 1 40000 >text.txt
awk 'BEGIN { for (i = 0; i < 30000; i++) print substr("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbbbbbbbbbbcccccccc", 1, 1 + (i * 7) % 70) }' >runs.txt

# -n everywhere: no name/time stamp in the header (inputs have fresh mtimes)
for lvl in 1 4 6 9; do
  run "compress -$lvl" "$B" -n -"$lvl" -c text.txt >"text.$lvl.gz"
done
run "compress rsyncable" "$B" -n --rsyncable -c text.txt >text.rsync.gz
run "compress runs" "$B" -n -9 -c runs.txt >runs.gz
run "compress stdin" "$B" -n -c <runs.txt >runs.stdin.gz
run "compress empty" "$B" -n -c </dev/null >empty.gz
cp runs.txt keep.txt
run "compress in place" "$B" -n -k -v keep.txt 2>&1

for lvl in 1 9; do
  run "decompress -$lvl" "$B" -d -c "text.$lvl.gz" >"text.$lvl.out"
done
run "decompress rsyncable" "$B" -d -c text.rsync.gz >text.rsync.out
run "decompress in place" "$B" -d -f keep.txt.gz
run "zcat style" "$B" -dc runs.gz empty.gz runs.stdin.gz >runs.cat
run "test" "$B" -t -v text.4.gz text.6.gz runs.gz 2>&1
run "list" "$B" -l text.1.gz text.9.gz runs.gz empty.gz
touch -d '2001-02-03 04:05:06' text.6.gz  # -lv shows the file's mtime
run "list verbose" "$B" -l -v text.6.gz

# error paths
head -c 100000 text.9.gz >trunc.gz
run "truncated" "$B" -t trunc.gz
cp text.6.gz corrupt.gz
printf 'XYZ' | dd of=corrupt.gz bs=1 seek=20000 conv=notrunc status=none
run "corrupt" "$B" -d -c corrupt.gz >corrupt.out
run "missing" "$B" -d -c no-such-file.gz
run "not gzip" "$B" -d -c text.txt >/dev/null
run "bad option" "$B" --no-such-option
run "help" "$B" --help
run "version" "$B" --version
