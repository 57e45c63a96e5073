#!/usr/bin/env python3
"""Runs one runtime test (see CMakeLists.txt) and checks what happened.

Harness scenarios: run_runtime_test.py MODE --harness H --analysis A.so
    --blob-bin B --cxx-analysis 0|1
The harness and the analysis routines append "<pid> <event>" lines to
DIR/log; each scenario below states the exact sequence of events expected,
the exit status (or the signal) and the output.

Other checks:
    run_runtime_test.py analysis-symbols --nm NM --analysis A.so
    run_runtime_test.py blob-check --cc CC --blob-ld blob.ld --make-blob make_blob.py
        --readelf R --objcopy O
"""
import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def finish():
    if failures:
        for f in failures:
            sys.stderr.write("FAIL: %s\n" % f)
        sys.exit(1)
    print("ok")
    sys.exit(0)


# --- harness scenarios ---------------------------------------------------------------

START = ["setup", "before-1 entered=0", "analysis-setup getenv-ok", "before-2",
         "analysis-from-before-2", "app-ctor", "startup-ok"]
# Normal exit: the program's atexit handlers, its static destructors, then
# _dl_fini (analysis namespace first, then the program's .fini_array), and
# only then the runtime's handler: ProgramAfter bodies, then
# atomx_analysis_finish (the analysis object's atexit handlers and static
# destructors, last registered first).
EXIT_HANDLERS = ["app-atexit", "app-static-dtor", "analysis-fini-array", "app-fini-array"]


def program_after(cxx):
    events = ["after-1", "analysis-report", "after-2", "analysis-atexit"]
    if cxx:
        events.append("analysis-static-dtor")
    return events


def run_harness(a, mode):
    work = tempfile.mkdtemp(prefix="atomx-runtime-")
    # Older, longer outputs under the names the analysis writes: what it
    # writes must replace them whole (AtomxOpenOutput does not truncate first).
    for name in ("report", "closed"):
        with open(os.path.join(work, name), "w") as f:
            f.write("stale output of an earlier run\n" * 200)
    env = dict(os.environ)
    env.update(ATOMX_TEST_DIR=work, ATOMX_TEST_ANALYSIS=a.analysis, ATOMX_TEST_MODE=mode,
               ATOMX_TEST_BLOB_BIN=a.blob_bin)

    def child_setup():
        # A signal the program inherits as ignored must stay ignored; no core files.
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    r = subprocess.run([a.harness], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       preexec_fn=child_setup, timeout=50)
    log = []
    if os.path.exists(os.path.join(work, "log")):
        for line in open(os.path.join(work, "log")).read().splitlines():
            pid, _, event = line.partition(" ")
            log.append((int(pid), event))
    files = {}
    for name in os.listdir(work):
        if name != "log":
            files[name] = open(os.path.join(work, name)).read()
    shutil.rmtree(work)
    out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
    for pid, event in log:
        check(not event.startswith("FAIL"), "harness: %s" % event)
    return r.returncode, log, out, err, files


def events_of(log, pid):
    return [e for p, e in log if p == pid]


def check_sequence(got, expected, who="process"):
    if got != expected:
        failures.append("%s events:\n  got      %s\n  expected %s" % (who, got, expected))


def check_report(files, name, pid, total):
    for n in (name, name.replace("report", "closed")):
        got = files.get(n)
        check(got == "total %d pid %d\n" % (total, pid),
              "report file %s: %r (flushed at exit? cut at its end?)" % (n, got if got is None else got[:80]))


def check_stdout(out, pid, total, cxx, app=True):
    check(("analysis stdout total %d pid %d\n" % (total, pid)) in out,
          "analysis stdout not flushed: %r" % out)
    if cxx:
        check("analysis cout from a static destructor\n" in out, "analysis cout not flushed: %r" % out)
    if app:
        check("app stdout\n" in out, "the program's own stdout lost: %r" % out)


def scenario(a, mode):
    cxx = a.cxx_analysis == "1"
    rc, log, out, err, files = run_harness(a, mode)
    pids = sorted({p for p, _ in log}, key=lambda p: [q for q, _ in log].index(p))
    main = pids[0] if pids else -1
    ev = events_of(log, main)
    after = program_after(cxx)
    start = START + ["main " + mode]
    if mode in ("missing-routine", "bad-analysis"):
        check(rc == 127, "exit status %d, expected 127" % rc)
        check_sequence(ev, ["setup"])  # nothing ran: no ProgramBefore, no program
        prefix = "atomx: harness: cannot load the analysis routines: "
        if mode == "missing-routine":
            check(err == prefix + "the analysis object does not define NoSuchRoutine\n", "stderr %r" % err)
        else:
            check(err.startswith(prefix) and err.count("\n") == 1 and len(err) > len(prefix) + 1,
                  "stderr %r" % err)
        return
    check(len(pids) == (2 if mode == "fork" else 1), "processes in the log: %s" % pids)
    if mode in ("normal", "no-dt-debug"):
        check(rc == 0, "exit status %d; stderr %r" % (rc, err))
        check_sequence(ev, start + ["blob-file-ok"] + EXIT_HANDLERS + after)
        check_report(files, "report", main, 1)
        check_stdout(out, main, 1, cxx)
    elif mode in ("original-address", "enter"):
        check(rc == 0, "exit status %d; stderr %r" % (rc, err))
        check_sequence(ev, start + [mode + "-ok"] + EXIT_HANDLERS + after)
    elif mode == "explicit":
        # program_after called twice by the program, then exit(): once only.
        check(rc == 3, "exit status %d, expected 3; stderr %r" % (rc, err))
        check_sequence(ev, start + after + ["main-after-returned"] + EXIT_HANDLERS)
        check_report(files, "report", main, 1)
        check_stdout(out, main, 1, cxx)
    elif mode == "fork":
        check(rc == 0, "exit status %d; stderr %r" % (rc, err))
        child = pids[1] if len(pids) > 1 else -1
        check_sequence(ev, start + ["parent-output-path out"] + EXIT_HANDLERS + after, "parent")
        check_sequence(events_of(log, child), ["child-output-path out.%d" % child] + EXIT_HANDLERS + after,
                       "child")
        check_report(files, "report", main, 1)
        check_report(files, "report.%d" % child, child, 11)
        check_stdout(out, main, 1, cxx)
        check_stdout(out, child, 11, cxx)
    elif mode in ("segv", "term", "abort"):
        sig = {"segv": signal.SIGSEGV, "term": signal.SIGTERM, "abort": signal.SIGABRT}[mode]
        check(rc == -sig, "exit status %d, expected death by signal %d; stderr %r" % (rc, sig, err))
        check_sequence(ev, start + ["crashing"] + after)
        check_report(files, "report", main, 1)
        check_stdout(out, main, 1, cxx, app=False)  # the program's stdio is never flushed
    elif mode == "vfork":
        if "vfork-skip no kcmp" in ev:
            print("kcmp is not available: the runtime cannot tell a vfork child")
            sys.exit(77)
        check(rc == 0, "exit status %d; stderr %r" % (rc, err))
        check_sequence(ev, start + ["vfork-child-done"] + EXIT_HANDLERS + after)
    elif mode == "own-handler":
        check(rc == 0, "exit status %d; stderr %r" % (rc, err))
        check_sequence(ev, start + ["app-handler"] + EXIT_HANDLERS + after)
    elif mode == "threads":
        # The main thread calls program_after while another thread runs it:
        # it returns only when the bodies and finish are done.
        check(rc == 0, "exit status %d; stderr %r" % (rc, err))
        head = start + after
        check_sequence(ev[:len(head)], head)
        check(sorted(ev[len(head):len(head) + 2]) == ["main-returned", "thread-returned"],
              "after ProgramAfter: %s" % ev[len(head):])
        check_sequence(ev[len(head) + 2:], EXIT_HANDLERS)
    else:
        failures.append("unknown mode " + mode)


# --- other checks ----------------------------------------------------------------------

def nm_symbols(nm, path, *flags):
    r = subprocess.run([nm] + list(flags) + [path], stdout=subprocess.PIPE, text=True, check=True)
    symbols = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            symbols.setdefault(parts[-1], set()).add(parts[-2])
    return symbols


def analysis_symbols(a):
    """__cxa_atexit calls of the analysis object (C++ static destructors,
    atexit() from libc_nonshared.a) bind to libatomx_analysis.a's hidden copy:
    no undefined __cxa_atexit left for libc, none exported."""
    dynamic = nm_symbols(a.nm, a.analysis, "-D")
    check("__cxa_atexit" not in dynamic, "__cxa_atexit in the dynamic symbols: %s" % dynamic.get("__cxa_atexit"))
    for name in ("atomx_analysis_finish", "AtomxOutputPath"):
        check("T" in dynamic.get(name, ()), "%s not exported" % name)
    static = nm_symbols(a.nm, a.analysis)
    check(static.get("__cxa_atexit") == {"t"}, "__cxa_atexit is not local: %s" % static.get("__cxa_atexit"))


def blob_check(a):
    """make_blob.py must refuse a blob with an absolute address in it."""
    work = tempfile.mkdtemp(prefix="atomx-blobcheck-")
    try:
        src = os.path.join(work, "bad.S")
        with open(src, "w") as f:
            f.write('.section .text.atomx_slots,"ax",@progbits\n'
                    ".globl atomx_blob_start\n.hidden atomx_blob_start\n"
                    "atomx_blob_start:\n.space 40, 0xcc\n.ascii \"ATOMXRT1\"\n"
                    "movabs $atomx_blob_start, %rax\nret\n"
                    '.section .note.GNU-stack,"",@progbits\n')
        elf = os.path.join(work, "bad.elf")
        subprocess.run([a.cc, "-nostdlib", "-shared", "-Wl,-T," + a.blob_ld, "-Wl,-z,notext", "-o", elf, src],
                       check=True)
        r = subprocess.run([sys.executable, a.make_blob, "--readelf", a.readelf, "--objcopy", a.objcopy,
                            "--elf", elf, "--bin", os.path.join(work, "bad.bin"),
                            "--cpp", os.path.join(work, "bad.cpp")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        check(r.returncode != 0 and "relocations" in r.stdout,
              "make_blob.py accepted a blob with a relocation: %s" % r.stdout)
        check(not os.path.exists(os.path.join(work, "bad.cpp")), "make_blob.py wrote the array anyway")
    finally:
        shutil.rmtree(work)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode")
    for opt in ("harness", "analysis", "blob-bin", "cxx-analysis", "nm", "cc", "blob-ld", "make-blob",
                "readelf", "objcopy"):
        p.add_argument("--" + opt)
    a = p.parse_args()
    if a.mode == "analysis-symbols":
        analysis_symbols(a)
    elif a.mode == "blob-check":
        blob_check(a)
    else:
        scenario(a, a.mode)
    finish()


if __name__ == "__main__":
    main()
