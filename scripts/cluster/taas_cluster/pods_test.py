"""Tests of the pure parts of pods.py: the status patches of finish-pod and restart-container,
built from a pod as kubectl reads it (of any shape), and the CRI log line."""

import json
import os
import tempfile
import unittest

from . import pods
from .report import Failure

NOW = "2026-01-02T03:04:05Z"


def pod(*containers, statuses=None, phase="Running"):
    return {"spec": {"containers": [{"name": n, "image": f"img/{n}"} for n in containers]},
            "status": {"phase": phase, "containerStatuses": statuses or []}}


class MainContainer(unittest.TestCase):
    def test_tensorflow_else_the_first(self):
        self.assertEqual(pods.main_container(["sidecar", "tensorflow"]), "tensorflow")
        self.assertEqual(pods.main_container(["trainer", "sidecar"]), "trainer")
        self.assertEqual(pods.main_container([]), "")


class FinishPatch(unittest.TestCase):
    def test_failed_with_the_main_containers_code(self):
        patch = pods.finish_patch(pod("sidecar", "tensorflow"), 137, NOW)["status"]
        self.assertEqual(patch["phase"], "Failed")
        codes = {s["name"]: s["state"]["terminated"]["exitCode"]
                 for s in patch["containerStatuses"]}
        self.assertEqual(codes, {"sidecar": 0, "tensorflow": 137})
        main = patch["containerStatuses"][1]["state"]["terminated"]
        self.assertEqual(main, {"exitCode": 137, "reason": "Error", "startedAt": NOW,
                                "finishedAt": NOW})
        ready = [c for c in patch["conditions"] if c["type"] == "Ready"][0]
        self.assertEqual((ready["status"], ready["reason"]), ("False", "PodFailed"))

    def test_succeeded_on_zero(self):
        patch = pods.finish_patch(pod("tensorflow"), 0, NOW)["status"]
        self.assertEqual(patch["phase"], "Succeeded")
        self.assertEqual(patch["containerStatuses"][0]["state"]["terminated"]["reason"],
                         "Completed")
        self.assertEqual([c["type"] for c in patch["conditions"]],
                         ["PodScheduled", "Initialized", "Ready", "ContainersReady"])

    def test_termination_message_on_the_main_container(self):
        message = '{"globalStep":6000,"finalMetrics":{"accuracy":0.9087}}'
        patch = pods.finish_patch(pod("sidecar", "tensorflow"), 0, NOW, message)["status"]
        messages = {s["name"]: s["state"]["terminated"].get("message")
                    for s in patch["containerStatuses"]}
        self.assertEqual(messages, {"sidecar": None, "tensorflow": message})
        patch = pods.finish_patch(pod("tensorflow"), 0, NOW)["status"]
        self.assertNotIn("message", patch["containerStatuses"][0]["state"]["terminated"])

    def test_message_file_read_as_the_kubelet_reads_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "termination-log")
            with open(path, "wb") as f:
                f.write(b"\xff" + b"x" * 10000)
            message = pods.read_message(path)
            self.assertEqual(len(message), pods.MAX_MESSAGE_BYTES)  # cut, as the kubelet cuts
            self.assertTrue(message.startswith("\ufffd"))
            with self.assertRaisesRegex(Failure, "--message-file .*missing"):
                pods.read_message(os.path.join(tmp, "missing"))

    def test_names_that_need_escaping_stay_data(self):
        hostile = {"spec": {"containers": [{"name": 'a"},{"x', "image": "i\\\n"}]}}
        patch = json.loads(json.dumps(pods.finish_patch(hostile, 1, NOW)))
        self.assertEqual(patch["status"]["containerStatuses"][0]["name"], 'a"},{"x')


class RestartPatch(unittest.TestCase):
    def test_main_container_restarts_in_place(self):
        before = pod("tensorflow", "sidecar", statuses=[
            {"name": "tensorflow", "restartCount": 2}, {"name": "sidecar", "restartCount": 5}])
        patch = pods.restart_patch(before, 3, NOW)["status"]
        self.assertEqual(patch["phase"], "Running")
        main, side = patch["containerStatuses"]
        self.assertEqual(main["restartCount"], 3)
        self.assertEqual(main["lastState"]["terminated"]["exitCode"], 3)
        self.assertEqual(main["state"], {"running": {"startedAt": NOW}})
        self.assertEqual(side["restartCount"], 5)
        self.assertNotIn("lastState", side)

    def test_missing_or_hostile_counts_start_at_zero(self):
        for statuses in ([], [{"name": "tensorflow", "restartCount": "7"}],
                         [{"name": "tensorflow", "restartCount": -4}],
                         [{"name": "tensorflow", "restartCount": True}], [None, 3]):
            patch = pods.restart_patch(pod("tensorflow", statuses=statuses), 1, NOW)
            self.assertEqual(patch["status"]["containerStatuses"][0]["restartCount"], 1, statuses)


class HostilePods(unittest.TestCase):
    def test_any_shape_gives_no_containers(self):
        for hostile in (None, [], {"spec": None}, {"spec": {"containers": "x"}},
                        {"spec": {"containers": [None, 5, {"name": 3}, {"name": ""}]}}):
            self.assertEqual(pods.containers(hostile), [], hostile)
            self.assertEqual(pods.finish_patch(hostile, 1, NOW)["status"]["containerStatuses"],
                             [])

    def test_phase(self):
        self.assertEqual(pods.phase(pod(phase="Pending")), "Pending")
        for hostile in (None, {}, {"status": None}, {"status": {"phase": 3}}):
            self.assertEqual(pods.phase(hostile), "without a phase")


class CriLine(unittest.TestCase):
    def test_nanosecond_timestamp(self):
        self.assertEqual(pods.cri_line("step 1 loss 0.5", 1_767_323_045_000_000_007),
                         "2026-01-02T03:04:05.000000007Z stdout F step 1 loss 0.5\n")


class ObjectNames(unittest.TestCase):
    def test_kubernetes_names_pass(self):
        for name in ("default", "job-worker-0", "a.b", "x"):
            pods.check_object_name("pod", name)

    def test_other_names_are_refused(self):
        for name in ("", "../etc", "A", "-a", "a-", "a/b", "a_b", "x" * 254):
            with self.assertRaisesRegex(Failure, "bad pod name"):
                pods.check_object_name("pod", name)
