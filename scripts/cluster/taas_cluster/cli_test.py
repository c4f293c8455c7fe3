"""Tests of cli.py's argument checks: the messages the cluster tests rely on and the bounds."""

import contextlib
import io
import os
import unittest

from . import cli
from .report import Failure


class SplitOptions(unittest.TestCase):
    def test_options_anywhere_flags_and_the_rest_in_order(self):
        values, flags, rest = cli.split_options(
            ["ns", "--name", "n1", "--coscheduler", "pod", "--timeout", "5", "1"],
            ("--name", "--timeout"), ("--coscheduler",))
        self.assertEqual(values, {"--name": "n1", "--timeout": "5"})
        self.assertEqual(flags, {"--coscheduler"})
        self.assertEqual(rest, ["ns", "pod", "1"])

    def test_an_option_without_its_value(self):
        for args in (["--name"], ["--name", ""]):
            with self.assertRaisesRegex(Failure, "^--name needs a value$"):
                cli.split_options(args, ("--name",))


class ParseUp(unittest.TestCase):
    def test_defaults(self):
        name, request = cli.parse_up([])
        self.assertEqual(name, "default")
        self.assertEqual((request.nodes, request.gpus_per_node, request.apiserver_port,
                          request.owner_pid, request.coscheduler), (4, 8, 0, 0, False))

    def test_every_option(self):
        name, request = cli.parse_up(["--name", "t-1", "--nodes", "2", "--gpus-per-node", "4",
                                      "--apiserver-port", "23456", "--owner-pid",
                                      str(os.getpid()), "--coscheduler"])
        self.assertEqual(name, "t-1")
        self.assertEqual((request.nodes, request.gpus_per_node, request.apiserver_port,
                          request.owner_pid, request.coscheduler),
                         (2, 4, 23456, os.getpid(), True))

    def test_refusals(self):
        for args, message in (
                (["--nodes", "many"], "--nodes must be"),
                (["--nodes", "-1"], "--nodes must be"),
                (["--nodes", "100000"], "--nodes must be"),
                (["--gpus-per-node", "1.5"], "--gpus-per-node must be"),
                (["--apiserver-port", "70000"], "--apiserver-port must be a port number"),
                (["--owner-pid", "999999999"], "--owner-pid 999999999 is not a running process"),
                (["--owner-pid", "x"], "--owner-pid x is not a running process"),
                (["--name", "Bad"], "bad instance name 'Bad'"),
                (["extra"], "up: unknown argument 'extra'")):
            with self.assertRaisesRegex(Failure, message):
                cli.parse_up(args)


class ParsePodCommand(unittest.TestCase):
    def test_arguments(self):
        self.assertEqual(cli.parse_pod_command("finish-pod", ["--timeout", "2", "ns", "p", "137"]),
                         ("default", "ns", "p", 137, 2))

    def test_refusals(self):
        for args, message in ((["ns", "p"], "usage: taas-cluster finish-pod"),
                              (["ns", "p", "256"], "EXIT_CODE must be an integer 0..255"),
                              (["ns", "p", "x"], "EXIT_CODE must be"),
                              (["--timeout", "soon", "ns", "p", "1"], "--timeout must be"),
                              (["ns", "P", "1"], "bad pod name 'P'")):
            with self.assertRaisesRegex(Failure, message):
                cli.parse_pod_command("finish-pod", args)


class NodeCommand(unittest.TestCase):
    def test_arguments(self):
        self.assertEqual(cli.node_command("node-down", ["taas-node-1"]),
                         ("default", "taas-node-1"))
        self.assertEqual(cli.node_command("node-up", ["--name", "x", "taas-node-0"]),
                         ("x", "taas-node-0"))

    def test_refusals(self):
        for args, message in (([], "usage: taas-cluster node-down"),
                              (["a", "b"], "usage: taas-cluster node-down"),
                              (["Node/../x"], "bad node name"),
                              (["--name"], "--name needs a value")):
            with self.assertRaisesRegex(Failure, message):
                cli.node_command("node-down", args)


class Main(unittest.TestCase):
    def run_main(self, argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = cli.main(argv)
        return status, err.getvalue()

    def test_no_command_is_usage(self):
        status, err = self.run_main([])
        self.assertEqual(status, 2)
        self.assertTrue(err.startswith("usage: taas-cluster COMMAND"))

    def test_failures_exit_1_with_the_message_last(self):
        for argv, message in ((["no-such-command"], "unknown command 'no-such-command'"),
                              (["build", "extra"], "build takes no arguments")):
            status, err = self.run_main(argv)
            self.assertEqual(status, 1)
            self.assertTrue(err.endswith(f"taas-cluster: error: {message}\n"), err)
