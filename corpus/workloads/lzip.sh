#!/usr/bin/env bash
# lzip workload (C++): both encoders (fast FLZ_encoder for -0, LZ_encoder
# otherwise: virtual dispatch through LZ_encoder_base), multimember files,
# decompress/test/list, and the error paths. Exceptions thrown and caught:
# Error("Write error") when writing to /dev/full (encoder and decoder) and
# std::bad_alloc when the dictionary does not fit under `ulimit -v`.
# Usage: lzip.sh BINARY   (cwd: an empty scratch directory)
. "$(dirname "$0")/_common.sh"
B=$1

gen_text 5 11000 >text.txt
awk 'BEGIN { for (i = 0; i < 15000; i++) print substr("mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmnnnnnnnnnnnnnnnnnnnnnnnnooooooo", 1, 1 + (i * 13) % 70) }' >runs.txt

run "compress -0" "$B" -0 -c text.txt >text.0.lz
run "compress -3" "$B" -3 -c text.txt >text.3.lz
run "compress -6" "$B" -6 -c text.txt >text.6.lz
run "compress -9 runs" "$B" -9 -c runs.txt >runs.9.lz
run "compress multimember" "$B" -1 -b 300KiB -c text.txt >text.mm.lz
run "compress -m -s" "$B" -m 100 -s 64KiB -c text.txt >text.ms.lz
run "compress stdin" "$B" -2 <runs.txt >runs.stdin.lz
cp runs.txt keep.txt
run "compress in place" "$B" -k -v keep.txt 2>&1

for f in text.0 text.3 text.6 text.mm text.ms runs.9; do
  run "decompress $f" "$B" -d -c "$f.lz" >"$f.out"
done
run "decompress in place" "$B" -d -f keep.txt.lz
run "decompress concatenated" "$B" -d -c runs.9.lz runs.stdin.lz >runs.cat
run "test" "$B" -t -v text.0.lz text.mm.lz runs.9.lz 2>&1
run "list" "$B" -l text.0.lz text.6.lz text.mm.lz
run "list verbose" "$B" -l -v text.mm.lz

# exceptions: Error thrown from deep inside the encoder/decoder, caught in main
if [[ -w /dev/full ]]; then
  run "compress to /dev/full" "$B" -6 -c text.txt >/dev/full
  run "compress -0 to /dev/full" "$B" -0 -c text.txt >/dev/full
  run "decompress to /dev/full" "$B" -d -c text.6.lz >/dev/full
else
  echo "no /dev/full"
fi
# std::bad_alloc: a 512 MiB dictionary from a pipe (not shrunk to the file size)
run "bad_alloc" bash -c 'ulimit -v 300000; "$1" -s 512MiB -c <text.txt >/dev/null' _ "$B"

# other error paths (reported through return codes)
cp text.6.lz corrupt.lz
printf 'XYZ' | dd of=corrupt.lz bs=1 seek=40000 conv=notrunc status=none
run "corrupt" "$B" -d -c corrupt.lz >corrupt.out
run "corrupt test" "$B" -t -vv corrupt.lz
head -c 30000 text.6.lz >trunc.lz
run "truncated" "$B" -d -c trunc.lz >trunc.out
run "not lzip" "$B" -d -c text.txt >/dev/null
run "trailing data" bash -c 'cat "$1" "$1" >tr.lz; printf garbage >>tr.lz; "$2" -t tr.lz; "$2" -t --trailing-error tr.lz' _ runs.9.lz "$B"
run "missing" "$B" -d no-such-file.lz
run "bad option" "$B" --no-such-option
run "bad size" "$B" -s 1KiB -c text.txt
