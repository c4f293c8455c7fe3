#!/usr/bin/env python3
"""Which ctest entries of a build tree run that tree's own executables, and whether a target
builds exactly those (scripts/lib/sanitize.sh; docs/development.md, "Where the time goes").

    tree_tests.py select BUILD LABEL          the LABEL tests worth running in a sanitizer tree
    tree_tests.py check BUILD LABEL TARGET    TARGET builds every executable the LABEL tests run
                                              from BUILD, and nothing else

`select` leaves out the tests whose program lies outside BUILD (python3, node, bash scripts):
they run no code the tree compiled, and the main build runs them already. A test ctest cannot
resolve (its executable was not built) is kept, so that it fails where it runs.
`check` reads the tests from ctest (`--show-only=json-v1`, after a build: ctest names an
executable only once it exists) and the target's inputs from ninja (`-t query`).
"""

import json
import os
import subprocess
import sys


def tree_files(command, build):
    """The files of `command` (a ctest command list) that lie inside the build folder `build`,
    relative to it: the program and any argument naming an existing file there (not an output
    folder a test makes, such as gpu_bundle's)."""
    prefix = os.path.join(os.path.realpath(build), "")
    out = []
    for i, word in enumerate(command):
        path = os.path.realpath(word) if os.path.isabs(word) else None
        if path and path.startswith(prefix) and (i == 0 or os.path.isfile(path)):
            out.append(os.path.relpath(path, prefix))
    return out


def labelled(tests_json, label):
    """(name, command) of the tests carrying `label`, from ctest's json-v1 document."""
    out = []
    for test in tests_json.get("tests", []):
        labels = []
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels = prop.get("value") or []
        if label in labels:
            out.append((test.get("name", "?"), test.get("command") or []))
    return out


def select(tests, build):
    """Names of the tests that run a file of `build` or whose program ctest did not find."""
    return [name for name, command in tests if not command or tree_files(command, build)]


def check(tests, built, build, label, target):
    """Problems (strings) between what `tests` run from `build` and `built`, what `target`
    builds (paths relative to `build`)."""
    problems = []
    run = set()
    for name, command in tests:
        if not command:
            problems.append(f"{label} test {name}: ctest finds no executable for it (not built): "
                            f"build {target}, or the tree, first")
            continue
        for path in tree_files(command, build):
            run.add(path)
            if path not in built:
                problems.append(f"{label} test {name} runs {path}, which {target} does not "
                                f"build: append its target to the list {target} is made of "
                                "(taas_add_test does for its tests; CMakeLists.txt)")
    if problems:
        return problems  # what the tests run is unknown until they are built
    for path in sorted(set(built) - run):
        problems.append(f"{target} builds {path}, which no {label} test runs: take it out of "
                        f"the list {target} is made of")
    return problems


def ninja_inputs(query_output):
    """The inputs `ninja -t query TARGET` lists for its node, as paths relative to the tree;
    lines before the node (a re-run of cmake, "Entering directory") are skipped."""
    inputs, reading = [], False
    for line in query_output.splitlines():
        if line.startswith("  input:"):
            reading = True
        elif line.startswith("  outputs:"):
            reading = False
        elif not line.startswith(" "):
            if inputs:
                break  # the next node's
        elif reading and line.strip():
            inputs.append(line.strip().lstrip("|").strip())
    return inputs


def ctest_tests(build, label):
    run = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1", "-L", label],
                         capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"ctest --show-only in {build} failed: {run.stderr.strip()}")
    return labelled(json.loads(run.stdout), label)


def main(argv):
    usage = ("usage: tree_tests.py select BUILD LABEL | "
             "tree_tests.py check BUILD LABEL TARGET [NINJA]")
    if len(argv) < 3 or argv[0] not in ("select", "check"):
        print(usage, file=sys.stderr)
        return 2
    mode, build, label = argv[:3]
    try:
        tests = ctest_tests(build, label)
        if mode == "select":
            if len(argv) != 3:
                print(usage, file=sys.stderr)
                return 2
            for name in select(tests, build):
                print(name)
            return 0
        if len(argv) not in (4, 5):
            print(usage, file=sys.stderr)
            return 2
        target = argv[3]
        ninja = argv[4] if len(argv) == 5 else "ninja"
        query = subprocess.run([ninja, "-C", build, "-t", "query", target],
                               capture_output=True, text=True)
        if query.returncode != 0:
            raise RuntimeError(f"ninja -t query {target} in {build} failed: "
                               f"{(query.stdout + query.stderr).strip()}")
    except (OSError, RuntimeError, ValueError) as e:
        print(f"tree_tests.py: {e}", file=sys.stderr)
        return 2
    built = ninja_inputs(query.stdout)
    problems = check(tests, built, build, label, target)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"{target} builds exactly the {len(built)} executables the {len(tests)} {label} tests "
          f"of {build} run from it")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
