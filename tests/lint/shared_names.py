#!/usr/bin/env python3
"""Every shared name exists once: a component that spells out a label key, an API path, an
environment variable, a metric name, a port or an exit code that another component also uses,
instead of taking the constant from where it is defined, fails this check.

The names are read from the headers that define them (DEFINITIONS: every `inline constexpr
std::string_view kX = "..."` there), so a new constant is checked as soon as it exists. Names that
are ordinary words ("metrics", "master", "v1") would match unrelated text and are left out: a
name is checked when it holds a separator (`_ - . /`). Numbers (`inline constexpr int kX = N`)
are checked in code outside comments and string literals when they have three digits or more and
are not a power of two (those are also ordinary sizes). Tests, fuzz targets and benchmarks may
spell names out (they check the values themselves).

Usage: shared_names.py REPO_ROOT
"""

import os
import re
import sys

DEFINITIONS = [
    "common/contract/include/taas/contract/env.h",
    "common/contract/include/taas/contract/exit_codes.h",
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
SCANNED = ("common/", "kube/", "operator/", "web-ui/server/", "launcher/", "trainer-runtime/")
SKIPPED = re.compile(r"(_test\.cc$|/fuzz[^/]*$|/fuzz/|/testing/|/testdata/)")
CONSTANT = re.compile(r'inline constexpr std::string_view (k\w+)\s*=\s*"([^"]+)"')
NUMBER = re.compile(r"inline constexpr int (k\w+)\s*=\s*(\d+);")
STRING_LITERAL = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"')


def sources(root):
    for top in SCANNED:
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("build"))
            for name in sorted(files):
                path = os.path.relpath(os.path.join(folder, name), root)
                if path.endswith((".h", ".cc")) and not SKIPPED.search(path):
                    yield path


def shared_names(root):
    """(names, numbers): value -> (constant, defining header)."""
    names, numbers = {}, {}
    for header in DEFINITIONS:
        with open(os.path.join(root, header)) as f:
            text = f.read()
        for constant, value in CONSTANT.findall(text):
            if re.search(r"[-_./]", value):
                names[value] = (constant, header)
        for constant, value in NUMBER.findall(text):
            n = int(value)
            if n >= 100 and n & (n - 1) != 0:
                numbers[value] = (constant, header)
    return names, numbers


def main():
    root = sys.argv[1]
    names, numbers = shared_names(root)
    failures = []
    for path in sources(root):
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            code = line.split("//", 1)[0]
            for number_text in re.findall(r"\b\d+\b", STRING_LITERAL.sub('""', code)):
                if number_text in numbers and path != numbers[number_text][1]:
                    constant, header = numbers[number_text]
                    failures.append(f"{path}:{number}: {number_text} spelled out: use {constant} "
                                    f"({header})")
            for literal in STRING_LITERAL.findall(code):
                if literal in names and path != names[literal][1]:
                    constant, header = names[literal]
                    failures.append(f"{path}:{number}: \"{literal}\" spelled out: use {constant} "
                                    f"({header})")
                for forbidden, home, fix in FORBIDDEN_LITERALS:
                    if forbidden in literal and path != home:
                        failures.append(f"{path}:{number}: \"{literal}\": {fix}")
    print(f"{len(names)} shared names and {len(numbers)} numbers checked in {sum(1 for _ in sources(root))} sources")
    for failure in failures:
        print(failure)
    if failures:
        print("shared names: FAILED")
        return 1
    print("shared names: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
