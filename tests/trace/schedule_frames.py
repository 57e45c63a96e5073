#!/usr/bin/env python3
"""schedule_frames.py --atomx ATOMX [--kill SECONDS] [--damage cut|flip] -- PROG ARGS...

The privileged schedule log's file (include/atomx/trace_format.h,
AtomxScheduleHeader, AtomxScheduleFrame; docs/trace.md, "The privileged
schedule log"), read without atomx: PROG is traced on one CPU (taskset -c 0)
and DIR/schedule is walked frame by frame here, each frame's checksum
computed (FNV-1a) and its bytes decompressed by the zstd command, not by
atomx.  Checks:
  - the file is the header, then whole frames and nothing else, each of
    1..256 records that decompress to exactly their 192 bytes each;
  - the records are those atomx's closing line counts, and `atomx regen
    DIR --switches` lists one switch-out per record flagged OUT and one
    switch-in per record flagged IN;
  - --kill SECONDS: atomx is killed (SIGKILL) that long into the run: the
    file still holds only whole frames (the collector writes each at once),
    and atomx regen reads every one of them.
--damage cut|flip (the must-fail twins): the file is then cut inside its
first frame, or a byte of that frame's stored bytes is flipped, and `atomx
regen DIR --switches` must fail naming the file and the frame's offset; its
error is printed and this script exits 1.
Exits 77 where the log cannot load (no root, atomx built without libbpf).
"""
import argparse
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEADER = struct.Struct("<IIIIQ")  # magic, version, recordSize, reserved, lost
FRAME = struct.Struct("<IIII")    # magic, records, storedSize, checksum
RECORD = 192
OUT, IN = 1, 2


def fnv1a32(data):
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def frames(path):
    """The file's frames as (offset, records' raw bytes); raises on any defect."""
    data = path.read_bytes()
    magic, version, size, _, _ = HEADER.unpack_from(data)
    if (magic, version, size) != (0x48535841, 2, RECORD):
        raise ValueError(f"{path}: header {magic:#x} version {version} records of {size} bytes")
    at, out = HEADER.size, []
    while at < len(data):
        if len(data) - at < FRAME.size:
            raise ValueError(f"{path}: {len(data) - at} bytes after the last whole frame, at {at}")
        magic, n, stored, checksum = FRAME.unpack_from(data, at)
        body = data[at + FRAME.size:at + FRAME.size + stored]
        if magic != 0x46535841 or not 1 <= n <= 256 or len(body) != stored:
            raise ValueError(f"{path}: frame at {at}: magic {magic:#x}, {n} records, {len(body)} of {stored} bytes")
        if fnv1a32(body) != checksum:
            raise ValueError(f"{path}: frame at {at}: checksum differs")
        raw = subprocess.run(["zstd", "-d", "-c", "-q"], input=body, stdout=subprocess.PIPE, check=True).stdout
        if len(raw) != n * RECORD:
            raise ValueError(f"{path}: frame at {at}: {len(raw)} bytes for {n} records")
        out.append((at, raw))
        at += FRAME.size + stored
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--atomx", required=True)
    ap.add_argument("--kill", type=float)
    ap.add_argument("--damage", choices=["cut", "flip"])
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    if "Schedule log: built in" not in subprocess.run([a.atomx, "trace", "--help"], capture_output=True, text=True).stdout:
        print("SKIP: atomx was built without the schedule log")
        return 77
    with tempfile.TemporaryDirectory() as work:
        tdir = Path(work) / "t"
        with open(Path(work) / "err", "w+") as errf:
            # (a session of its own: --kill ends atomx and the traced program at once)
            p = subprocess.Popen(["taskset", "-c", "0", a.atomx, "trace", "-o", str(tdir), "--", *a.cmd],
                                 stdout=subprocess.DEVNULL, stderr=errf, start_new_session=True)
            if a.kill:
                time.sleep(a.kill)
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            errf.seek(0)
            err = errf.read()
        if not a.kill and p.returncode != 0:
            print(f"FAIL atomx trace exited {p.returncode}:\n{err}")
            return 1
        manifest = (tdir / "manifest").read_text() if (tdir / "manifest").exists() else ""
        if "schedule sync-points switches" not in manifest:
            print(f"SKIP: no privileged schedule log in this run:\n{err}")
            return 77
        path = tdir / "schedule"
        if a.damage:
            data = bytearray(path.read_bytes())
            if a.damage == "cut":
                data = data[:HEADER.size + FRAME.size + 3]
            else:
                data[HEADER.size + FRAME.size + 2] ^= 0x40
            path.write_bytes(bytes(data))
        try:
            fs = frames(path)
        except (ValueError, subprocess.CalledProcessError) as e:
            if not a.damage:
                print(f"FAIL {e}")
                return 1
            fs = None
        r = subprocess.run([a.atomx, "regen", str(tdir), "--switches"], capture_output=True, text=True)
        if a.damage:
            # The reader's one line, as the user sees it.
            print(f"atomx regen --switches exited {r.returncode}: {r.stderr.strip()}")
            return 1 if r.returncode != 0 or fs is None else 0
        records = [raw[k:k + RECORD] for _, raw in fs for k in range(0, len(raw), RECORD)]
        flags = [struct.unpack_from("<I", rec, 12)[0] for rec in records]
        outs, ins = sum(1 for f in flags if f & OUT), sum(1 for f in flags if f & IN)
        lines = [l for l in r.stdout.splitlines() if l and not l.startswith("#")]
        seen_out = sum(1 for l in lines if l.split()[3] == "out")
        seen_in = sum(1 for l in lines if l.split()[3] == "in")
        problems = []
        if not a.kill:
            m = re.search(r"(\d+) switch\(es\) logged", err)
            if not m or int(m.group(1)) != len(records):
                problems.append(f"atomx's closing line counts {m.group(1) if m else 'no'} switches, the frames hold {len(records)}")
        if "the schedule log" in r.stderr:
            problems.append(f"atomx regen cannot read the log: {r.stderr.strip()}")
        if (seen_out, seen_in) != (outs, ins):
            problems.append(f"regen --switches lists {seen_out} out and {seen_in} in, the frames' records {outs} and {ins}")
        if len(fs) < 2:
            problems.append(f"only {len(fs)} frame(s): the test wants a log of several")
        for pr in problems:
            print(f"FAIL {pr}")
        if problems:
            return 1
        print(f"{len(fs)} whole frames, {len(records)} records ({outs} out, {ins} in), {path.stat().st_size} bytes "
              f"({len(records) * RECORD} uncompressed){', atomx killed' if a.kill else ''}: equal to regen --switches")
        return 0


if __name__ == "__main__":
    sys.exit(main())
