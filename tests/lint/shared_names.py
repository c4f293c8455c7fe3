#!/usr/bin/env python3
"""Every shared name exists once: a component that spells out a label key, an API path, an
environment variable or a metric name that another component also uses, instead of taking the
constant from where it is defined, fails this check.

The names are read from the headers that define them (DEFINITIONS: every `inline constexpr
std::string_view kX = "..."` there), so a new constant is checked as soon as it exists. Names that
are ordinary words ("metrics", "master", "v1") would match unrelated text and are left out: a
name is checked when it holds a separator (`_ - . /`). Tests, fuzz targets and benchmarks may
spell names out (they check the values themselves).

Usage: shared_names.py REPO_ROOT
"""

import os
import re
import sys

DEFINITIONS = [
    "common/contract/include/taas/contract/env.h",
    "common/contract/include/taas/contract/job_secret.h",
    "common/contract/include/taas/contract/metric_names.h",
    "common/contract/include/taas/contract/ports.h",
    "common/tfjob/include/taas/tfjob/labels.h",
    "common/tfjob/include/taas/tfjob/tfjob.h",
]
# Paths are built by functions, not constants: no source may spell one out.
FORBIDDEN_LITERALS = [
    ("/apis/kubeflow.org", "common/tfjob/tfjob.cc",
     "build TFJob paths with tfjob::TFJobsPath / TFJobPath"),
]
SCANNED = ("common/", "operator/", "web-ui/server/", "launcher/", "trainer-runtime/")
SKIPPED = re.compile(r"(_test\.cc$|/fuzz[^/]*$|/fuzz/|/testing/|/testdata/)")
CONSTANT = re.compile(r'inline constexpr std::string_view (k\w+)\s*=\s*"([^"]+)"')


def sources(root):
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("build"))
            for name in sorted(files):
                path = os.path.relpath(os.path.join(folder, name), root)
                if path.endswith((".h", ".cc")) and not SKIPPED.search(path):
                    yield path


def shared_names(root):
    names = {}  # value -> (constant, defining header)
    for header in DEFINITIONS:
        with open(os.path.join(root, header)) as f:
            for constant, value in CONSTANT.findall(f.read()):
                if re.search(r"[-_./]", value):
                    names[value] = (constant, header)
    return names


def main():
    root = sys.argv[1]
    names = shared_names(root)
    failures = []
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            code = line.split("//", 1)[0]
            for literal in re.findall(r'"([^"\\]*(?:\\.[^"\\]*)*)"', code):
                if literal in names and path != names[literal][1]:
                    constant, header = names[literal]
                    failures.append(f"{path}:{number}: \"{literal}\" spelled out: use {constant} "
                                    f"({header})")
                for forbidden, home, fix in FORBIDDEN_LITERALS:
                    if forbidden in literal and path != home:
                        failures.append(f"{path}:{number}: \"{literal}\": {fix}")
    print(f"{len(names)} shared names checked in {sum(1 for _ in sources(root))} sources")
    for failure in failures:
        print(failure)
    if failures:
        print("shared names: FAILED")
        return 1
    print("shared names: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
