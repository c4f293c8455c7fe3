"""The order ctest runs the sanitizer entries in (tests/CMakeLists.txt), read from ctest's own list
of the build tree given as the argument: each sanitizer tree is built by an entry that is not
serial, starts before any other entry in a fresh clone (highest COST) and shares a lock with the
other tree's build; the runs need their tree's build first (a fixture). Without this, a cold
ASan+UBSan build (most of sanitizer_asan) waits for every other entry and then runs alone. The
sanitizer runs are serial; the fuzz run is not (it runs at the lowest priority beside the suites
that wait, instead of alone at the end)."""

import json
import subprocess
import sys
import unittest

BUILD = None


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


class SanitizerScheduleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        run = subprocess.run(["ctest", "--test-dir", BUILD, "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
        cls.tests = {t["name"]: properties(t) for t in json.loads(run.stdout)["tests"]}
        cls.sanitizer = {name: p for name, p in cls.tests.items()
                         if "sanitizer" in (p.get("LABELS") or [])}

    def builds(self):
        return {name: p for name, p in self.sanitizer.items() if p.get("FIXTURES_SETUP")}

    def runs(self):
        return {name: p for name, p in self.sanitizer.items() if not p.get("FIXTURES_SETUP")}

    def test_sanitizer_runs_are_serial_the_fuzz_run_is_not(self):
        runs = self.runs()
        self.assertEqual(sorted(runs), ["fuzz_all", "sanitizer_asan", "sanitizer_tsan"])
        self.assertTrue(runs["sanitizer_asan"].get("RUN_SERIAL"))
        self.assertTrue(runs["sanitizer_tsan"].get("RUN_SERIAL"))
        self.assertFalse(runs["fuzz_all"].get("RUN_SERIAL"), "fuzz_all would run alone at the end")

    def test_each_run_needs_a_tree_built_by_another_entry(self):
        runs = self.runs()
        self.assertGreaterEqual(len(runs), 3, self.sanitizer)
        made = {fixture for p in self.builds().values() for fixture in p["FIXTURES_SETUP"]}
        for name, p in runs.items():
            with self.subTest(name):
                self.assertTrue(p.get("FIXTURES_REQUIRED"), f"{name} builds its tree itself")
                self.assertTrue(set(p["FIXTURES_REQUIRED"]) <= made, p)

    def test_builds_are_not_serial_start_first_and_take_turns(self):
        builds = self.builds()
        self.assertEqual(len(builds), 2, self.sanitizer)
        others = [p.get("COST", 0) for name, p in self.tests.items() if name not in builds]
        locks = None
        for name, p in builds.items():
            with self.subTest(name):
                self.assertFalse(p.get("RUN_SERIAL"), f"{name} would wait for every other entry")
                self.assertGreater(p.get("COST", 0), max(others))
                self.assertTrue(p.get("RESOURCE_LOCK"))
                locks = set(p["RESOURCE_LOCK"]) if locks is None else locks & set(
                    p["RESOURCE_LOCK"])
        self.assertTrue(locks, "the two builds share no lock: they would split the cores")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: sanitizer_schedule_test.py BUILD_DIR [unittest arguments]")
    BUILD = sys.argv.pop(1)
    unittest.main()
