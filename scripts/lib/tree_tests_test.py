"""Tests of tree_tests.py on a small tree: which tests a sanitizer tree runs, and the check that a
target builds exactly the executables its labelled tests run (both ways of getting it wrong)."""

import os
import tempfile
import unittest
from pathlib import Path

import tree_tests

NINJA_QUERY = """\
[1/2] Re-running CMake...
taas_unit_tests:
  input: phony
    common/base/taas_base_test
    || web-ui/server/taas-ui-api-types
  outputs:
    all
"""


class TreeTestsTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.build = Path(tmp.name) / "build"
        for exe in ("common/base/taas_base_test", "web-ui/server/taas-ui-api-types",
                    "kube/taas_kube_test"):
            (self.build / exe).parent.mkdir(parents=True, exist_ok=True)
            (self.build / exe).write_text("")
        (self.build / "gpu-bundle").mkdir()
        b = str(self.build)
        self.json = {"tests": [
            {"name": "taas_base_test", "command": [f"{b}/common/base/taas_base_test"],
             "properties": [{"name": "LABELS", "value": ["unit"]}]},
            {"name": "web_ui_api_types",
             "command": [f"{b}/web-ui/server/taas-ui-api-types", "--check", "/src/api_types.ts"],
             "properties": [{"name": "LABELS", "value": ["unit"]}, {"name": "TIMEOUT",
                                                                     "value": 30}]},
            # A script test: runs nothing the tree compiled (its output folder is no file).
            {"name": "taas_cluster_ports", "command": ["/usr/bin/python3", "-m", "x",
                                                       f"{b}/gpu-bundle"],
             "properties": [{"name": "LABELS", "value": ["unit", "lint"]}]},
            # A script writing into the tree (gpu_bundle): its output folder, made or not yet,
            # is nothing to build.
            {"name": "gpu_bundle", "command": ["/src/bundle.sh", f"{b}/gpu-bundle",
                                               f"{b}/not-made-yet"],
             "properties": [{"name": "LABELS", "value": ["unit"]}]},
            {"name": "cluster_smoke", "command": ["/usr/bin/bash", f"{b}/kube/taas_kube_test"],
             "properties": [{"name": "LABELS", "value": ["cluster"]}]},
            {"name": "no_labels", "command": ["/bin/true"]},
        ]}

    def unit(self):
        return tree_tests.labelled(self.json, "unit")

    def test_labelled(self):
        self.assertEqual([name for name, _ in self.unit()],
                         ["taas_base_test", "web_ui_api_types", "taas_cluster_ports",
                          "gpu_bundle"])
        self.assertEqual(tree_tests.labelled({}, "unit"), [])

    def test_select_leaves_out_programs_outside_the_tree(self):
        self.assertEqual(tree_tests.select(self.unit(), str(self.build)),
                         ["taas_base_test", "web_ui_api_types"])
        # An executable ctest could not find is kept, so that it fails where it runs.
        self.assertEqual(tree_tests.select([("unbuilt", [])], str(self.build)), ["unbuilt"])

    def test_ninja_inputs(self):
        self.assertEqual(tree_tests.ninja_inputs(NINJA_QUERY),
                         ["common/base/taas_base_test", "web-ui/server/taas-ui-api-types"])
        self.assertEqual(tree_tests.ninja_inputs("garbage\n"), [])

    def test_exact_list_passes(self):
        built = tree_tests.ninja_inputs(NINJA_QUERY)
        self.assertEqual(tree_tests.check(self.unit(), built, str(self.build), "unit",
                                          "taas_unit_tests"), [])

    def test_unit_test_whose_executable_is_not_built_fails(self):
        problems = tree_tests.check(self.unit(), ["common/base/taas_base_test"],
                                    str(self.build), "unit", "taas_unit_tests")
        self.assertEqual(len(problems), 1)
        self.assertIn("web_ui_api_types runs web-ui/server/taas-ui-api-types", problems[0])
        self.assertIn("taas_unit_tests does not build", problems[0])

    def test_target_building_more_than_the_tests_run_fails(self):
        built = tree_tests.ninja_inputs(NINJA_QUERY) + ["kube/taas_kube_test"]
        problems = tree_tests.check(self.unit(), built, str(self.build), "unit",
                                    "taas_unit_tests")
        self.assertEqual(problems, ["taas_unit_tests builds kube/taas_kube_test, which no unit "
                                    "test runs: take it out of the list taas_unit_tests is "
                                    "made of"])

    def test_unbuilt_tree_says_so(self):
        problems = tree_tests.check([("taas_base_test", [])], ["common/base/taas_base_test"],
                                    str(self.build), "unit", "taas_unit_tests")
        self.assertEqual(len(problems), 1)
        self.assertIn("finds no executable", problems[0])

    def test_tree_through_a_symlink(self):
        link = self.build.parent / "link"
        os.symlink(self.build, link)
        self.assertEqual(tree_tests.tree_files([f"{link}/common/base/taas_base_test"],
                                               str(self.build)),
                         ["common/base/taas_base_test"])
        self.assertEqual(tree_tests.tree_files(["relative/path", "-x"], str(self.build)), [])


if __name__ == "__main__":
    unittest.main()
