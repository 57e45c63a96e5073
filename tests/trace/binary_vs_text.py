#!/usr/bin/env python3
"""`atomx regen --binary` against `atomx regen`'s text, on one traced run.

    binary_vs_text.py [--data [--corrupt-ref N]] [--merge [--binary-env VAR=VALUE]] ATOMX PROG [ARGS...]

Traces PROG ARGS (with --data: `atomx trace --data`), then decodes the
binary stream here, from the layout include/atomx/trace_format.h documents
(AtomxRegen*: header, then THREAD_BEGIN / BLOCK with instruction lengths /
DATA with the block's references / CALL / LIBRARY / THREAD_END / SIGNAL
records), rebuilds from it the text `atomx regen` prints (`TID PC` per
instruction, each PC the previous one plus its length, then its data
references, ` R|W|M ADDR SIZE`, each DATA reference after the instruction
its index names; `TID call NAME`, then a LIBRARY record's references as
` L NAME` and its references, ` LR|LW|LM ADDR SIZE`; `TID signal SIGNO PC` and
`TID sigreturn SIGNO PC`;
blocks, their references and signals a forked child inherited from its
parent left out, as the text leaves them out) and checks that the two are
equal line for line.  With --data the trace must have references, and
every DATA record must follow a BLOCK record and name instructions of it.
--corrupt-ref N (the must-fail twin) turns the Nth reference of the binary
file (from 1) from a read into a write or back before decoding it.
--merge: the merged stream (`atomx regen --merge --binary`, version 3),
whose SLICE records (thread, CPU) say whose the records after them are,
against `atomx regen --merge --cpus` (each SLICE decoded as the text's line
`cpu N` before the slice's lines); the trace must have at least two
threads and a change of thread between slices.  --binary-env VAR=VALUE
(the twin: a test hook such as ATOMX_TEST_MERGE_DROP) is set for the
binary run alone.
Exit status 0 when equal.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

MAGIC, VERSION = 0x49545841, 3
THREAD_BEGIN, BLOCK, CALL, THREAD_END, SIGNAL, DATA, LIBRARY, SLICE = 1, 2, 3, 4, 5, 6, 7, 8
INHERITED, RETURNED = 1, 4
REF = struct.Struct("<QHHBB")  # address, instruction, size, kind, flags: 14 bytes
KINDS = {1: "R", 2: "W", 3: "M"}


def references(data, pos, count):
    """The `count` references at `pos`: [(address, instruction, size, kind)]."""
    out = []
    for k in range(count):
        address, insn, size, kind, _ = REF.unpack_from(data, pos + k * REF.size)
        if kind not in KINDS:
            raise ValueError(f"reference kind {kind} at byte {pos + k * REF.size}")
        out.append((address, insn, size, KINDS[kind]))
    return out, pos + count * REF.size


def reference_offsets(data):
    """Byte offsets of every reference of DATA and LIBRARY records, in order."""
    pos, offsets = 8, []
    while pos < len(data):
        kind, _, n = struct.unpack_from("<BBH", data, pos)
        pos += 4
        if kind == THREAD_BEGIN:
            pos += 4
        elif kind == SLICE:
            pos += 8
        elif kind == BLOCK:
            pos += 8 + n
        elif kind == CALL:
            pos += 8 + n
        elif kind == THREAD_END:
            pos += 4 + n
        elif kind == SIGNAL:
            pos += 8
        elif kind == DATA:
            (count,) = struct.unpack_from("<I", data, pos)
            offsets += [pos + 4 + k * REF.size for k in range(count)]
            pos += 4 + count * REF.size
        elif kind == LIBRARY:
            (count,) = struct.unpack_from("<I", data, pos + 8)
            first = pos + 12 + n
            offsets += [first + k * REF.size for k in range(count)]
            pos = first + count * REF.size
        else:
            raise ValueError(f"record kind {kind} at byte {pos - 4}")
    return offsets


def decode(data):
    """The text lines the binary stream stands for (a merged stream's SLICE
    records as `cpu N` lines), the threads seen, the number of references
    and the slices as (thread, cpu)."""
    magic, version = struct.unpack_from("<II", data, 0)
    if (magic, version) != (MAGIC, VERSION):
        raise ValueError(f"bad header {magic:#x} {version}")
    pos, thread, lines, threads, refs, slices = 8, None, [], [], 0, []
    block = None  # the BLOCK record just before: (flags, instructions, end of its lines)
    while pos < len(data):
        kind, flags, n = struct.unpack_from("<BBH", data, pos)
        pos += 4
        previous, block = block, None
        if kind == THREAD_BEGIN:
            (thread,) = struct.unpack_from("<I", data, pos)
            pos += 4
            threads.append(thread)
        elif kind == SLICE:
            thread, cpu = struct.unpack_from("<Ii", data, pos)
            pos += 8
            if thread not in threads:
                raise ValueError(f"a SLICE record at byte {pos - 12} of thread {thread} before its THREAD_BEGIN")
            slices.append((thread, cpu))
            lines.append(f"cpu {cpu}")
        elif kind == BLOCK:
            (pc,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            for length in data[pos:pos + n]:
                if not flags & INHERITED:
                    lines.append(f"{thread} {pc:x}")
                pc += length
            # Its instructions' references go after their lines: inserted
            # when the DATA record after it comes.
            block = (flags, n, len(lines))
            pos += n
        elif kind == DATA:
            if previous is None:
                raise ValueError(f"a DATA record at byte {pos - 4} does not follow a BLOCK record")
            (count,) = struct.unpack_from("<I", data, pos)
            got, pos = references(data, pos + 4, count)
            refs += count
            bflags, ninsns, end = previous
            if any(i >= ninsns for _, i, _, _ in got):
                raise ValueError(f"a DATA record at byte {pos} names an instruction past its block's {ninsns}")
            if not bflags & INHERITED:
                # The block's lines are lines[end - ninsns:end]: rebuild them
                # with each instruction's references after it.
                insns = lines[end - ninsns:]
                del lines[end - ninsns:]
                for k, line in enumerate(insns):
                    lines.append(line)
                    lines += [f" {kd} {a:x} {sz}" for a, i, sz, kd in got if i == k]
        elif kind == CALL:
            pos += 8
            name = data[pos:pos + n].decode()
            pos += n
            lines.append(f"{thread} call {name or '*'}")
        elif kind == LIBRARY:
            (count,) = struct.unpack_from("<I", data, pos + 8)
            name = data[pos + 12:pos + 12 + n].decode()
            got, pos = references(data, pos + 12 + n, count)
            refs += count
            if not flags & INHERITED:
                lines.append(f" L {name}")  # the text's line naming the function, then its references
                lines += [f" L{kd} {a:x} {sz}" for a, _, sz, kd in got]
        elif kind == THREAD_END:
            pos += 4 + n
        elif kind == SIGNAL:
            (pc,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            if not flags & INHERITED:
                lines.append(f"{thread} {'sigreturn' if flags & RETURNED else 'signal'} {n} {pc:x}")
        else:
            raise ValueError(f"record kind {kind} at byte {pos - 4}")
    return lines, threads, refs, slices


def main():
    argv = sys.argv[1:]
    data = corrupt = merge = None
    binary_env = dict(os.environ)
    while argv and argv[0].startswith("--"):
        if argv[0] == "--data":
            data, argv = True, argv[1:]
        elif argv[0] == "--merge":
            merge, argv = True, argv[1:]
        elif argv[0] == "--binary-env":
            var, _, value = argv[1].partition("=")
            binary_env[var], argv = value, argv[2:]
        elif argv[0] == "--corrupt-ref":
            corrupt, argv = int(argv[1]), argv[2:]
        else:
            sys.exit(f"unknown option {argv[0]}")
    atomx, prog, args = os.path.abspath(argv[0]), os.path.abspath(argv[1]), argv[2:]
    w = tempfile.mkdtemp(prefix="atomx-binary.")
    try:
        trace, binary = os.path.join(w, "trace"), os.path.join(w, "regen.bin")
        subprocess.run([atomx, "trace", "-q", "--cache-dir", os.path.join(w, "cache"), "-o", trace]
                       + (["--data"] if data else []) + ["--", prog] + args,
                       cwd=w, capture_output=True, timeout=600)
        how = ["--merge"] if merge else []
        text = subprocess.run([atomx, "regen", trace, *how] + (["--cpus"] if merge else []), capture_output=True,
                              text=True, check=True).stdout.splitlines()
        subprocess.run([atomx, "regen", trace, *how, "--binary", binary], capture_output=True, check=True,
                       env=binary_env)
        with open(binary, "rb") as f:
            stream = bytearray(f.read())
        if corrupt:
            at = reference_offsets(stream)[corrupt - 1] + 12  # the reference's kind byte
            stream[at] = {1: 2, 2: 1, 3: 2}[stream[at]]
        lines, threads, refs, slices = decode(bytes(stream))
        if data and not refs:
            print(f"FAIL {prog}: --data, and the binary stream holds no data reference")
            return 1
        turns = sum(1 for a, b in zip(slices, slices[1:]) if a[0] != b[0])
        if merge and (len(threads) < 2 or turns == 0):
            print(f"FAIL {prog}: --merge, and the binary stream has {len(threads)} thread(s) taking {turns} turn(s): "
                  "the test wants threads that interleave")
            return 1
        if lines != text:
            k = next((i for i, (a, b) in enumerate(zip(lines, text)) if a != b), min(len(lines), len(text)))
            print(f"FAIL {prog}: line {k} of {len(text)} differs: binary {lines[k] if k < len(lines) else 'end'!r},"
                  f" text {text[k] if k < len(text) else 'end'!r} ({len(lines)} lines decoded)")
            return 1
        print(f"PASS {prog}: {len(threads)} thread(s), {len(text)} lines of text equal to the binary stream's"
              + (f" ({refs} data references)" if data else "")
              + (f" (merged: {len(slices)} slices on CPUs {sorted(set(c for _, c in slices))}, {turns} changes of "
                 "thread)" if merge else ""))
        return 0
    finally:
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
