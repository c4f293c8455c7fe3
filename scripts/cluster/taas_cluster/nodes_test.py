"""Tests of the pure part of nodes.py: the status a dead kubelet leaves its node with."""

import unittest

from . import nodes


class NotReadyPatch(unittest.TestCase):
    def test_ready_false_as_of_now(self):
        conditions = nodes.not_ready_patch("2026-01-02T03:04:05Z")["status"]["conditions"]
        self.assertEqual(len(conditions), 1)
        ready = conditions[0]
        self.assertEqual((ready["type"], ready["status"]), ("Ready", "False"))
        self.assertEqual(ready["lastHeartbeatTime"], "2026-01-02T03:04:05Z")
        self.assertEqual(ready["lastTransitionTime"], "2026-01-02T03:04:05Z")


if __name__ == "__main__":
    unittest.main()
