# Sourced by the workloads (not a workload itself).
# Deterministic environment and a fixed-seed data generator.
export LC_ALL=C TZ=UTC LANG=C
unset LANGUAGE GZIP BZIP2 BZIP XZ_OPT XZ_DEFAULTS LZIP_OPT POSIXLY_CORRECT BC_ENV_ARGS BC_LINE_LENGTH
umask 022

# WORKLOAD_ONE_THREAD=1: where a program lets the workload choose its number
# of threads (xz -T), one thread, so that the work done -- not only the
# output -- is the same in every run, Valgrind's included.  The oracles that
# compare counts per procedure set it; the output checks do not, and run the
# threaded code.  A workload may also leave out under it the runs whose work
# depends on the schedule however many threads it asks for (pbzip2's
# corrupt inputs, which a worker thread ends).
threads() { # threads N: N, or 1 under WORKLOAD_ONE_THREAD
  if [[ ${WORKLOAD_ONE_THREAD:-} == 1 ]]; then echo 1; else echo "$1"; fi
}

# gen_text SEED LINES: pseudo-English text, one line per record, from a
# Park-Miller generator (all arithmetic exact in doubles, so any awk gives
# the same bytes). Compresses roughly like real text.
gen_text() {
  awk -v seed="$1" -v lines="$2" '
    function rnd(n) { x = (x * 16807) % 2147483647; return x % n }
    BEGIN {
      x = seed + 0; if (x <= 0) x = 1
      nw = split("the of and to in is was that for on with as by at from it his an were are which " \
                 "this be or has had not but first one their its new after who they have her she two " \
                 "been other when there all during into school time may years more most only over city " \
                 "some world would where later up such used many can state about national out known " \
                 "university united then made also between team film music game against season three " \
                 "while area series under him well number people being before family year would could " \
                 "compressor binary rewriter relocation section symbol instrument basic block analysis", w, " ")
      for (i = 0; i < lines; i++) {
        n = 4 + rnd(14); line = ""
        for (j = 0; j < n; j++) {
          r = rnd(100)
          if (r < 80)      t = w[1 + rnd(nw)]
          else if (r < 90) t = rnd(100000)
          else if (r < 96) t = sprintf("%08x", rnd(2147483647))
          else             t = sprintf("%s-%d", w[1 + rnd(nw)], rnd(1000))
          line = (j ? line " " : "") t
        }
        if (rnd(7) == 0) line = toupper(substr(line, 1, 1)) substr(line, 2) "."
        print line
      }
    }'
}

# run LABEL CMD...: run a command and report its exit status on the
# workload's own stdout (fd 3), which stays put when the command's stdout is
# redirected to a file.
exec 3>&1
run() {
  local label=$1 rc=0; shift
  "$@" || rc=$?
  echo "[$label] exit=$rc" >&3
}
