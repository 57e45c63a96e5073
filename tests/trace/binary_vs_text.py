#!/usr/bin/env python3
"""`atomx regen --binary` against `atomx regen`'s text, on one traced run.

    binary_vs_text.py ATOMX PROG [ARGS...]

Traces PROG ARGS, then decodes the binary stream here, from the layout
include/atomx/trace_format.h documents (AtomxRegen*: header, then
THREAD_BEGIN / BLOCK with instruction lengths / CALL / THREAD_END / SIGNAL
records), rebuilds from it the text `atomx regen` prints (`TID PC` per
instruction, each PC the previous one plus its length; `TID call NAME`;
`TID signal SIGNO PC` and `TID sigreturn SIGNO PC`; blocks and signals a forked
child inherited from its parent left out, as the text leaves them out) and
checks that the two are equal line for line.  Exit status 0 when equal.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

MAGIC, VERSION = 0x49545841, 1
THREAD_BEGIN, BLOCK, CALL, THREAD_END, SIGNAL = 1, 2, 3, 4, 5
INHERITED, RETURNED = 1, 4


def decode(data):
    """The text lines the binary stream stands for, and the threads seen."""
    magic, version = struct.unpack_from("<II", data, 0)
    if (magic, version) != (MAGIC, VERSION):
        raise ValueError(f"bad header {magic:#x} {version}")
    pos, thread, lines, threads = 8, None, [], []
    while pos < len(data):
        kind, flags, n = struct.unpack_from("<BBH", data, pos)
        pos += 4
        if kind == THREAD_BEGIN:
            (thread,) = struct.unpack_from("<I", data, pos)
            pos += 4
            threads.append(thread)
        elif kind == BLOCK:
            (pc,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            for length in data[pos:pos + n]:
                if not flags & INHERITED:
                    lines.append(f"{thread} {pc:x}")
                pc += length
            pos += n
        elif kind == CALL:
            pos += 8
            name = data[pos:pos + n].decode()
            pos += n
            lines.append(f"{thread} call {name or '*'}")
        elif kind == THREAD_END:
            pos += 4 + n
        elif kind == SIGNAL:
            (pc,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            if not flags & INHERITED:
                lines.append(f"{thread} {'sigreturn' if flags & RETURNED else 'signal'} {n} {pc:x}")
        else:
            raise ValueError(f"record kind {kind} at byte {pos - 4}")
    return lines, threads


def main():
    atomx, prog, args = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3:]
    w = tempfile.mkdtemp(prefix="atomx-binary.")
    try:
        trace, binary = os.path.join(w, "trace"), os.path.join(w, "regen.bin")
        subprocess.run([atomx, "trace", "-q", "--cache-dir", os.path.join(w, "cache"), "-o", trace, "--", prog] + args,
                       cwd=w, capture_output=True, timeout=600)
        text = subprocess.run([atomx, "regen", trace], capture_output=True, text=True, check=True).stdout.splitlines()
        subprocess.run([atomx, "regen", trace, "--binary", binary], capture_output=True, check=True)
        with open(binary, "rb") as f:
            lines, threads = decode(f.read())
        if lines != text:
            k = next((i for i, (a, b) in enumerate(zip(lines, text)) if a != b), min(len(lines), len(text)))
            print(f"FAIL {prog}: line {k} of {len(text)} differs: binary {lines[k] if k < len(lines) else 'end'!r},"
                  f" text {text[k] if k < len(text) else 'end'!r} ({len(lines)} lines decoded)")
            return 1
        print(f"PASS {prog}: {len(threads)} thread(s), {len(text)} lines of text equal to the binary stream's")
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
