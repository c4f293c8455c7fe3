"""Tests of scripts/test-timings on small logs: the markers scripts/lib/common.sh writes (read
back from a real run of its functions), a cold run's log with epoch prefixes and no markers, and
hostile input (a truncated log, garbage, missing phases, an unreadable file)."""

import importlib.machinery
import importlib.util
import io
import os
import subprocess
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent
loader = importlib.machinery.SourceFileLoader("test_timings", str(SCRIPTS / "test-timings"))
spec = importlib.util.spec_from_loader("test_timings", loader)
timings = importlib.util.module_from_spec(spec)
loader.exec_module(timings)

# A run with markers (the sanitizer entry's printed after ctest, as scripts/test.sh does).
MARKED = """\
[taas] phase setup started
[taas] phase setup/10-toolchain started
[taas] phase setup/10-toolchain: 4 s
[taas] phase setup/30-kubernetes started
taas-cluster: step 2/2: compiling
[taas] phase setup/30-kubernetes: 596 s
[taas] setup complete (all)
[taas] phase setup: 600 s
[taas] phase build started
[1/2] Building CXX object a.o
[taas] phase build: 300 s
[taas] phase ctest started
Test project /tmp/x/build
  1/3 Test  #2: taas_kube_test ...................   Passed   12.50 sec
  2/3 Test  #1: sanitizer_asan ...................   Passed  700.00 sec
  3/3 Test  #3: web_ui_e2e ....................***Failed   90.25 sec
Total Test time (real) = 1100.40 sec
[taas] phase ctest/sanitize-asan/build: 500 s
[taas] phase ctest/sanitize-asan/ctest: 199 s
[taas] phase ctest: 1100 s
"""

BASE = 1795870000  # an epoch second of the kind a timing wrapper puts before each line


def stamped(text):
    """text whose lines start with seconds after BASE, with BASE added (real epoch prefixes)."""
    out = []
    for line in text.splitlines(keepends=True):
        offset, rest = line.split(" ", 1)
        out.append(f"{BASE + int(offset)} {rest}")
    return "".join(out)


# A cold run before the markers, as a timing wrapper writes it: the main job first, then the
# test command (only that part counts).
COLD = stamped("""\
1000 START main-job
1001 [taas] installing the web UI's npm packages (npm ci)
1005 [taas] setup complete (main-job)
1100 END main-job rc=0
1100 START test
1100 [taas] installing Debian packages: clang libclang-rt-14-dev libomp-14-dev
1110 taas-cluster: building Kubernetes v1.36.3
1874 kueue: building sigs.k8s.io/kueue
2208 [taas] installing the CUDA 13.5.37 wheels into /root/.cache/taas/cuda (about 1.4 GB)
2220 [taas] installing Debian packages: chromium
2235 [taas] setup complete (all)
2236 [1/292] Building CXX object common/base/a.o
3300 [292/292] Linking CXX executable x
3301 Test project /tmp/cold/build
3400   1/2 Test  #1: taas_kube_test ...................   Passed   99.00 sec
6300   2/2 Test  #2: sanitizer_asan ...................   Passed 2899.00 sec
6301 Total Test time (real) = 3000.00 sec
6302 END test rc=0
""")


def table(text, top=10):
    return timings.render(timings.read(io.StringIO(text)), top)


def row(out, name):
    """The seconds column of the row whose label (indentation stripped) is name."""
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == name:
            return parts[1]
    raise AssertionError(f"no row {name} in:\n{out}")


class MarkedLogTest(unittest.TestCase):
    def test_phases_parts_and_shares(self):
        out = table(MARKED)
        self.assertEqual(row(out, "setup"), "600")
        self.assertEqual(row(out, "setup/30-kubernetes"), "596")
        self.assertEqual(row(out, "build"), "300")
        self.assertEqual(row(out, "ctest/sanitize-asan/build"), "500")
        # The total is the top-level phases', not the parts' again: 600 + 300 + 1100.
        self.assertIn("total", out)
        self.assertEqual(row(out, "total"), "2000")
        self.assertIn("  30.0%", [line for line in out.splitlines()
                                  if line.startswith("setup ")][0])
        # Parts are indented under their phase.
        self.assertIn("\n  ctest/sanitize-asan/build", out)
        self.assertNotIn("missing:", out)

    def test_slowest_entries_first_and_failures_flagged(self):
        out = table(MARKED, top=2)
        entries = out.split("slowest ctest entries")[1].splitlines()[1:]
        self.assertTrue(entries[0].startswith("sanitizer_asan"))
        self.assertTrue(entries[1].startswith("web_ui_e2e"))
        self.assertIn("Failed", entries[1])
        self.assertNotIn("taas_kube_test", out)  # --top 2
        self.assertIn("(2 of 3;", out)

    def test_phase_run_twice_counts_both(self):
        out = table("[taas] phase ctest/sanitize-asan/build: 900 s\n"
                    "[taas] phase ctest/sanitize-asan/build: 3 s\n")
        self.assertEqual(row(out, "ctest/sanitize-asan/build"), "903")
        self.assertIn("2 runs", out)

    def test_markers_as_common_sh_writes_them(self):
        """The format written (scripts/lib/common.sh) is the format read."""
        with tempfile.TemporaryDirectory() as tmp:
            phase_log = Path(tmp) / "phases.log"
            script = (f'source "{SCRIPTS}/lib/common.sh"; phase_start setup; '
                      'phase_start setup/10-toolchain; phase_end setup/10-toolchain; '
                      'phase_end setup; TAAS_PHASE_PREFIX=ctest/ phase_start sanitize-tsan/build; '
                      'TAAS_PHASE_PREFIX=ctest/ phase_end sanitize-tsan/build')
            # The run's own phase settings, not the ones scripts/test.sh gives ctest (a
            # TAAS_PHASE_PREFIX inherited from it would name every phase ctest/...).
            env = {k: v for k, v in os.environ.items() if not k.startswith("TAAS_PHASE_")}
            run = subprocess.run(["bash", "-euo", "pipefail", "-c", script],
                                 env={**env, "TAAS_PHASE_LOG": str(phase_log)},
                                 capture_output=True, text=True, check=True)
            self.assertEqual(phase_log.read_text(),
                             "[taas] phase setup/10-toolchain: 0 s\n[taas] phase setup: 0 s\n"
                             "[taas] phase ctest/sanitize-tsan/build: 0 s\n")
        t = timings.read(io.StringIO(run.stderr))
        self.assertEqual({name: p.seconds for name, p in t.phases.items()},
                         {"setup": 0, "setup/10-toolchain": 0, "ctest/sanitize-tsan/build": 0})


class EpochLogTest(unittest.TestCase):
    def test_cold_log_without_markers(self):
        out = table(COLD)
        self.assertEqual(row(out, "setup"), str(2235 - 1100))
        self.assertEqual(row(out, "setup/15-sanitizers"), "10")
        self.assertEqual(row(out, "setup/30-kubernetes"), str(1874 - 1110))
        self.assertEqual(row(out, "setup/36-kueue"), str(2208 - 1874))
        self.assertEqual(row(out, "setup/45-cuda"), str(2220 - 2208))
        self.assertEqual(row(out, "setup/50-web-ui"), str(2235 - 2220))
        self.assertEqual(row(out, "build"), str(3301 - 2235))
        self.assertEqual(row(out, "ctest"), "3000")
        # Only the test part: the main job's npm line (at 1001) is not where 50-web-ui starts.
        self.assertEqual(out.count("50-web-ui"), 1)
        self.assertIn("lines 5-18", out)
        self.assertEqual(row(out, "total"), str(6302 - 1100))
        self.assertTrue(out.split("slowest ctest entries")[1].splitlines()[1]
                        .startswith("sanitizer_asan"))

    def test_run_still_going(self):
        """Cut after the build started: build is timed up to the last line and said so."""
        cut = "\n".join(COLD.splitlines()[:13]) + "\n"
        out = table(cut)
        self.assertEqual(row(out, "build"), str(3300 - 2235))
        self.assertIn("never ended", out)
        self.assertIn("no `END test` line", out)
        self.assertIn("missing: ctest", out)

    def test_marker_started_then_log_ends(self):
        out = table(stamped("10 [taas] phase setup started\n"
                            "10 [taas] phase setup/30-kubernetes started\n"
                            "70 taas-cluster: step 2/2: compiling\n"))
        self.assertEqual(row(out, "setup/30-kubernetes"), "60")
        self.assertIn("no end marker", out)


class HostileLogTest(unittest.TestCase):
    def test_truncated_without_timestamps(self):
        out = table("[taas] phase setup started\n[taas] phase setup/30-kubernetes: 764 s\n"
                    "[taas] phase build sta")
        self.assertIn("started, never ended", out)
        self.assertEqual(row(out, "setup/30-kubernetes"), "764")
        self.assertIn("missing: setup, build, ctest", out)

    def test_garbage(self):
        junk = ("\x00\xff[taas] phase : s\n[taas] phase x: -3 s\n1/2 Test #: .. sec\n"
                "99999999999999 [taas] phase y: 5 s\nTotal Test time (real) = sec\n"
                "12 END test\n[taas] phase a//b: 1 s\n" + "z" * 100000 + "\n")
        out = table(junk)
        self.assertIn("missing:", out)
        self.assertEqual(row(out, "a//b"), "1")

    def test_ctest_alone(self):
        """`ctest ...` run by hand: no markers, no timestamps; ctest's own total is its time."""
        out = table("Test project /x/build\n"
                    "  1/1 Test  #1: taas_base_test ...   Passed    5.00 sec\n"
                    "Total Test time (real) =   7.20 sec\n")
        self.assertEqual(row(out, "ctest"), "7")
        self.assertIn("missing: setup, build (", out)

    def test_nothing_known(self):
        self.assertIn("nothing to time", table("hello\nworld\n"))
        self.assertIn("nothing to time", table(""))

    def test_command_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp) / "test.log"
            log.write_bytes(MARKED.encode() + b"\xc3\x28 invalid utf-8\n")
            stdout, stderr = io.StringIO(), io.StringIO()
            with redirect_stdout(stdout), redirect_stderr(stderr):
                self.assertEqual(timings.main([str(log), "--top", "1"]), 0)
                self.assertEqual(timings.main([str(Path(tmp) / "absent.log")]), 2)
            self.assertIn("sanitizer_asan", stdout.getvalue())
            self.assertIn("cannot read", stderr.getvalue())
            self.assertIn("absent.log", stderr.getvalue())


if __name__ == "__main__":
    unittest.main()
