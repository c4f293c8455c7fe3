"""Tests of the pure part of instance.py: when a CRD counts as established, from a CRD as kubectl
reads it (of any shape: right after the apply it has no conditions at all)."""

import unittest

from .instance import established


class Established(unittest.TestCase):
    def test_true_only_with_established_true(self):
        def crd(*conditions):
            return {"status": {"conditions": list(conditions)}}
        self.assertTrue(established(crd({"type": "NamesAccepted", "status": "True"},
                                        {"type": "Established", "status": "True"})))
        self.assertFalse(established(crd({"type": "Established", "status": "False"})))
        self.assertFalse(established(crd({"type": "NamesAccepted", "status": "True"})))

    def test_no_conditions_yet_or_any_other_shape(self):
        for crd in ({}, {"status": {}}, {"status": {"conditions": None}}, {"status": None},
                    {"status": {"conditions": "Established"}}, {"status": {"conditions": [7]}},
                    [], None, "crd"):
            self.assertFalse(established(crd), crd)


if __name__ == "__main__":
    unittest.main()
