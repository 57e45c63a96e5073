"""What a per-procedure oracle compares: the one policy every checker uses
(tests/branch/branch_vs_cachegrind.py and the Valgrind checkers of
tests/tools through vgharness.py).

A checker counts something per procedure with the tool, once per run of
the instrumented workload (--runs N), and compares it with an independent
count (Valgrind's).  The oracle, not the tool, decides what is compared:

  - a procedure is left out only when it is named with --set-aside
    'PROC=REASON'; the reason is printed with the result;
  - a procedure whose counts differ between the N runs and is not named
    fails the check: a bug that makes counts nondeterministic cannot remove
    itself from the comparison;
  - the events compared must be at least --min-share percent of all the
    tool counted in the procedures Valgrind can name (default 99), so that
    set-asides cannot grow until nothing is left; a run in which the tool
    counted nothing at all compares nothing, and fails;
  - a set-aside that is no longer needed fails (Selection.stale): a
    procedure set aside whose counts agree with the oracle's, run after run
    -- unless its reason says it "depends on the schedule" (SCHEDULE): a
    count that depends on how threads interleave can equal Valgrind's (one
    interleaving) by chance, so one agreement does not prove the set-aside
    stale (pbzip2's polling loops agreed in one full run and not the next);
    it is noted, not failed.  Name a procedure so only with the measured
    cause.

corpus/set_aside.txt lists the procedures of the corpus programs that are
set aside, each with its reason; corpus_setaside.sh turns it into options.
"""


# A set-aside whose reason contains this is exempt from the stale check.
SCHEDULE = "depends on the schedule"


def add_arguments(ap):
    ap.add_argument("--set-aside", action="append", default=[], metavar="PROC=REASON",
                    help="do not compare PROC, for REASON (printed with the result); may be given again")
    ap.add_argument("--min-share", type=float, default=99.0, metavar="PCT",
                    help="fail unless the events compared are at least PCT%% of those counted (default 99)")


def parse(items, ap=None):
    """{procedure: reason} from --set-aside values; a value without a reason
    is an error."""
    out = {}
    for item in items:
        proc, sep, reason = item.partition("=")
        if not sep or not proc.strip() or not reason.strip():
            msg = f"--set-aside needs PROC=REASON, not {item!r}"
            if ap:
                ap.error(msg)
            raise ValueError(msg)
        out[proc.strip()] = reason.strip()
    return out


class Selection:
    """The procedures compared, and what the oracle says about the rest.

    names: the procedures both sides can count (canonical names);
    per_run: one mapping per run, procedure -> what is compared (any value
    with ==); weight: procedure -> events of the first run (for the share);
    set_aside: {procedure: reason}; canon: maps a set-aside name to its
    canonical name (aliases, f.cold)."""

    def __init__(self, names, per_run, weight, set_aside, min_share=99.0, canon=None, unit="events"):
        canon = canon or {}
        self.set_aside = {canon.get(p, p): r for p, r in set_aside.items()}
        first = per_run[0] if per_run else {}
        self.varying = sorted({n for r in per_run[1:] for n in set(r) | set(first)
                               if n in names and r.get(n) != first.get(n)})
        self.runs = len(per_run)
        self.compared = sorted(set(names) - set(self.set_aside) - set(self.varying))
        self.total = sum(weight(n) for n in names)
        self.compared_events = sum(weight(n) for n in self.compared)
        self.min_share, self.unit = min_share, unit
        self.problems = [f"{n}: its counts differ between the {self.runs} runs, and it is not set aside"
                         for n in self.varying if n not in self.set_aside]
        if not self.total:
            self.problems.append(f"nothing was counted: 0 {unit} in the {len(names)} procedures both sides can "
                                 "name, so nothing was compared")
        elif self.share() < min_share:
            self.problems.append(f"only {self.share():.2f}% of the {unit} counted were compared "
                                 f"({self.compared_events} of {self.total}), below the floor of {min_share}%")

    def stale(self, agrees):
        """Problems for the set-asides no longer needed: a procedure set
        aside that did not vary between the runs and on which `agrees(name)`
        (the tool's count equals the oracle's) holds.  Call it with the
        checker's own comparison; the problems go with the others."""
        return [f"{p}: set aside ({self.set_aside[p]}), but the tool and the oracle agree on it: "
                "the set-aside is stale, remove it"
                for p in sorted(self.set_aside)
                if p not in self.varying and SCHEDULE not in self.set_aside[p] and agrees(p)]

    def share(self):
        return 100.0 * self.compared_events / self.total if self.total else 100.0

    def summary(self):
        """'N of M events (P%) compared' for the PASS line."""
        return f"{self.compared_events} of {self.total} {self.unit} ({self.share():.2f}%) compared"

    def notes(self):
        """One line per procedure left out, with its reason (and whether it
        varied between the runs)."""
        lines = []
        for p in sorted(self.set_aside):
            varied = " [varied between runs]" if p in self.varying else ""
            lines.append(f"set aside: {p}: {self.set_aside[p]}{varied}")
        return lines
