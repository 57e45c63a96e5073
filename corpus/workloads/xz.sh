#!/usr/bin/env bash
# xz workload: multi-threaded (-T2; -T1 with WORKLOAD_ONE_THREAD=1)
# compression and decompression of a multi-block stream, single-threaded
# presets, BCJ/delta filter chains, the .lzma format, listing, and error
# paths.
# Usage: xz.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1
T=-T$(threads 2)  # -T1 under WORKLOAD_ONE_THREAD (_common.sh)

gen_text 3 15000 >text.txt
awk 'BEGIN { x = 7; for (i = 0; i < 30000; i++) { x = (x * 16807) % 2147483647; printf "%d,%d,%d\n", i, i * 3 % 1000, x % 65536 } }' >table.csv

# Multi-threaded ($T): small blocks so that both worker threads get work; the
# output depends only on the block size, not on thread scheduling.
run "compress $T" "$B" $T --block-size=128KiB -6 -c text.txt >text.mt.xz
run "decompress $T" "$B" $T -d -c text.mt.xz >text.mt.out
run "compress $T stdin" "$B" $T --block-size=100KiB -3 <table.csv >table.mt.xz
run "test $T" "$B" $T -t text.mt.xz table.mt.xz

# single-threaded presets and formats
run "compress -0" "$B" -T1 -0 -c text.txt >text.0.xz
run "compress -9e" "$B" -T1 -9e -c table.csv >table.9e.xz
run "compress lzma" "$B" --format=lzma -c -5 table.csv >table.lzma
run "compress delta" "$B" -T1 --delta=dist=4 --lzma2=preset=2,lc=0 -c table.csv >table.delta.xz
run "compress x86" "$B" -T1 --x86 --lzma2=preset=1 -c text.txt >text.x86.xz
run "compress crc32" "$B" -T1 --check=crc32 -2 -c table.csv >table.crc32.xz
run "compress sha256" "$B" -T1 --check=sha256 -2 -c table.csv >table.sha256.xz
run "compress raw" "$B" --format=raw --lzma1=preset=1 -c table.csv >table.raw

run "decompress -0" "$B" -d -c text.0.xz >text.0.out
run "decompress -9e" "$B" -d -c table.9e.xz >table.9e.out
run "decompress lzma" "$B" -d -c table.lzma >table.lzma.out
run "decompress delta" "$B" -d -c table.delta.xz >table.delta.out
run "decompress x86" "$B" -d -c text.x86.xz >text.x86.out
run "decompress raw" "$B" -d --format=raw --lzma1=preset=1 -c table.raw >table.raw.out
run "decompress concatenated" "$B" -d -c table.crc32.xz table.sha256.xz >table.cat
run "list" "$B" -l text.mt.xz table.9e.xz table.crc32.xz
run "list robot" "$B" --robot -lvv text.mt.xz table.sha256.xz

# error paths
# (with -T2, how much of the other blocks the workers decode before a bad
# block stops them depends on scheduling, and so does the work: the threaded
# decoder gets a bad block header, which it reads before starting a worker,
# and the damaged data goes to the single-threaded one)
cp text.mt.xz corrupt.xz
printf 'XYZ' | dd of=corrupt.xz bs=1 seek=50000 conv=notrunc status=none
run "corrupt" "$B" -T1 -d -c corrupt.xz >corrupt.out
cp text.mt.xz badheader.xz
printf 'XYZ' | dd of=badheader.xz bs=1 seek=16 conv=notrunc status=none
run "bad block header $T" "$B" $T -d -c badheader.xz >badheader.out
head -c 70000 text.0.xz >trunc.xz
run "truncated" "$B" -d -c trunc.xz >trunc.out
run "not xz" "$B" -d -c text.txt >/dev/null
run "memlimit" "$B" -d --memlimit=1MiB -c table.9e.xz >/dev/null
run "missing" "$B" -d no-such-file.xz
run "bad option" "$B" --lzma2=preset=99 -c text.txt
