#!/usr/bin/env python3
"""Unit test of tests/setaside.py, the policy that decides what every
per-procedure oracle compares: a procedure that varies between runs must be
named with a reason, and set-asides cannot push the compared share below
the floor."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import setaside  # noqa: E402


class SelectionTest(unittest.TestCase):
    names = {"a", "b", "c"}
    runs = [{"a": 10, "b": 5, "c": 85}, {"a": 10, "b": 6, "c": 85}]

    def select(self, set_aside, min_share=99.0, runs=None):
        runs = runs or self.runs
        return setaside.Selection(self.names, runs, lambda n: runs[0].get(n, 0), set_aside, min_share)

    def test_unnamed_varying_procedure_fails(self):
        s = self.select({}, min_share=0)
        self.assertEqual(s.varying, ["b"])
        self.assertEqual(len(s.problems), 1)
        self.assertIn("b: its counts differ between the 2 runs", s.problems[0])
        self.assertNotIn("b", s.compared)

    def test_named_varying_procedure_passes(self):
        s = self.select({"b": "polls a queue"}, min_share=90)
        self.assertEqual(s.problems, [])
        self.assertEqual(s.compared, ["a", "c"])
        self.assertEqual(s.notes(), ["set aside: b: polls a queue [varied between runs]"])
        self.assertAlmostEqual(s.share(), 95.0)

    def test_floor(self):
        s = self.select({"b": "polls a queue"}, min_share=99)
        self.assertEqual(len(s.problems), 1)
        self.assertIn("only 95.00%", s.problems[0])
        s = self.select({"b": "x", "c": "y"}, min_share=0)
        self.assertEqual(s.compared, ["a"])
        self.assertEqual(s.problems, [])

    def test_nothing_counted_fails(self):
        # Must fail: 0 events counted used to be "100% compared".
        s = setaside.Selection(self.names, [{"a": 0, "b": 0, "c": 0}], lambda n: 0, {}, 99.0)
        self.assertEqual(len(s.problems), 1)
        self.assertIn("nothing was counted: 0 events in the 3 procedures", s.problems[0])

    def test_stale_set_aside_fails(self):
        s = self.select({"b": "polls a queue", "c": "calls libc"}, min_share=0)
        # b varied: still needed whatever agrees says; c agrees: stale.
        problems = s.stale(lambda n: True)
        self.assertEqual(len(problems), 1)
        self.assertIn("c: set aside (calls libc), but the tool and the oracle agree on it: the set-aside is stale",
                      problems[0])
        self.assertEqual(s.stale(lambda n: False), [])

    def test_schedule_dependent_set_aside_is_not_stale(self):
        # Equal by chance: one agreement does not make it stale; any other
        # reason still fails.
        s = self.select({"b": "x", "c": "polls: depends on the schedule"}, min_share=0,
                        runs=[{"a": 1, "b": 1, "c": 1}, {"a": 1, "b": 1, "c": 1}])
        problems = s.stale(lambda n: True)
        self.assertEqual(len(problems), 1)
        self.assertIn("b: set aside (x), but the tool and the oracle agree on it", problems[0])

    def test_procedure_missing_from_a_run_varies(self):
        s = self.select({}, min_share=0, runs=[{"a": 1, "b": 1, "c": 1}, {"a": 1, "c": 1}])
        self.assertEqual(s.varying, ["b"])

    def test_canonical_names(self):
        s = setaside.Selection({"f"}, [{"f": 1}, {"f": 2}], lambda n: 1, {"f_alias": "why"}, 0,
                               canon={"f_alias": "f"})
        self.assertEqual(s.problems, [])

    def test_parse(self):
        self.assertEqual(setaside.parse(["p=a reason = with equals"]), {"p": "a reason = with equals"})
        for bad in ["p", "p=", "=reason", "p=  "]:
            with self.assertRaises(ValueError):
                setaside.parse([bad])


if __name__ == "__main__":
    unittest.main()
