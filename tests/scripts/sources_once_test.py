"""Each source file is compiled once per build tree: a file that two targets compile (a binary and
its test, a fuzzer and its corpus replay) is work a library or an object library they share would
save, in every tree and again under each sanitizer. Checks the build tree given as the first
argument (its compile_commands.json) and a fuzz tree configured here (clang, ASan+UBSan,
TAAS_FUZZ), where the fuzzers and their replays are."""

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

BUILD = SOURCE = None


def object_of(command):
    """The object a compile command writes (after -o), or ? (CMake 3.25 writes no "output")."""
    words = command.split()
    return words[words.index("-o") + 1] if "-o" in words[:-1] else "?"


def compiled_twice(compile_commands):
    """{source: [object, ...]} for each source compiled more than once."""
    objects = collections.defaultdict(list)
    for entry in compile_commands:
        source = os.path.normpath(os.path.join(entry.get("directory", ""), entry["file"]))
        objects[source].append(entry.get("output") or object_of(entry.get("command", "")))
    return {source: outs for source, outs in objects.items() if len(outs) > 1}


def describe(twice):
    return "\n".join(f"{source} is compiled {len(outs)} times: {', '.join(outs)}; make it a "
                     "library the targets share" for source, outs in sorted(twice.items()))


class SourcesOnceTest(unittest.TestCase):
    def test_helper_finds_a_second_compile(self):
        commands = [{"directory": "/b", "file": "/s/a.cc", "output": "x.dir/a.cc.o"},
                    {"directory": "/b", "file": "../s/a.cc", "command": "c++ -o y.dir/a.cc.o"},
                    {"directory": "/b", "file": "/s/b.cc"}]
        self.assertEqual(compiled_twice(commands), {"/s/a.cc": ["x.dir/a.cc.o", "y.dir/a.cc.o"]})

    def test_this_tree(self):
        commands = json.loads((Path(BUILD) / "compile_commands.json").read_text())
        self.assertGreater(len(commands), 0)
        twice = compiled_twice(commands)
        self.assertFalse(twice, describe(twice))

    def test_fuzz_tree(self):
        if not shutil.which("clang++"):
            self.skipTest("no clang++ (scripts/setup.d/15-sanitizers.sh installs it)")
        with tempfile.TemporaryDirectory() as tree:
            subprocess.run(["cmake", "-S", SOURCE, "-B", tree, "-G", "Ninja",
                            "-DCMAKE_CXX_COMPILER=clang++", "-DTAAS_WERROR=OFF",
                            "-DTAAS_WITH_CUDA=OFF", "-DTAAS_SANITIZE=address;undefined",
                            "-DTAAS_FUZZ=ON"], check=True, capture_output=True)
            commands = json.loads((Path(tree) / "compile_commands.json").read_text())
        self.assertTrue(any("fuzz_" in entry["file"] for entry in commands))
        twice = compiled_twice(commands)
        self.assertFalse(twice, describe(twice))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: sources_once_test.py BUILD_DIR SOURCE_DIR [unittest arguments]")
    BUILD, SOURCE = sys.argv.pop(1), sys.argv.pop(1)
    unittest.main()
