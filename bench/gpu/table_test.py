#!/usr/bin/env python3
"""bench/gpu/table.py on results folders made here: every figure against its target, and the
parts a run skipped or failed shown as not met rather than as passed."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import table  # noqa: E402


def write(folder, name, text):
    with open(os.path.join(folder, name), "w") as f:
        f.write(text)


def by_figure(rows):
    return {row[0]: row[1:] for row in rows}


class TableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = self.dir.name

    def full_run(self):
        write(self.path, "tests", "5 0 0 -\n")
        write(self.path, "taas-cpu", "9000 0.8512 40 cpu\n")
        write(self.path, "taas-gpu1", "60000 0.9050 30 cuda:0_NVIDIA_H100\n")
        write(self.path, "taas-gpus", "220000 0.9040 31 cuda:0,cuda:1\n")
        write(self.path, "torch-eager.json",
              json.dumps({"examples_per_sec": 50000.0, "accuracy": 0.9080}) + "\n")
        write(self.path, "torch-graphs.json",
              json.dumps({"examples_per_sec": 80000.0, "accuracy": 0.9120}) + "\n")
        write(self.path, "taas-resnet1", "19000 0.9210 25 cuda:0_NVIDIA_H100\n")
        write(self.path, "torch-resnet-eager.json",
              json.dumps({"examples_per_sec": 20000.0, "accuracy": 0.9190}) + "\n")
        write(self.path, "gpu_bench.log",
              "device 0: NVIDIA H100 80GB HBM3, sm_90\n"
              "cuBLAS SGEMM 8192^3 FP32: 51.20 TFLOP/s (76.5% of 66.9 TFLOP/s peak)\n"
              "CNN kernels-only ceiling at batch 100: 80000.00 examples/s (1.2 ms ...)\n"
              "NCCL all-reduce 256 MiB on 4 GPUs bus bandwidth: 350.50 GB/s (...)\n")

    def test_a_full_run_against_every_target(self):
        self.full_run()
        rows = by_figure(table.rows(table.read_results(self.path), 4, 3000, 300, 250))
        self.assertEqual(rows["gpu tests"], ("5 passed, 0 skipped, 0 failed", "all pass", "yes"))
        self.assertEqual(rows["taas / PyTorch eager"], ("1.20x", ">= 1.0x", "yes"))
        self.assertEqual(rows["taas / PyTorch CUDA graphs"], ("0.75x", "aim >= 1.0x", "NO"))
        self.assertEqual(rows["test accuracy, taas / PyTorch eager"][2], "yes")  # 0.3 points
        self.assertEqual(rows["test accuracy, taas / PyTorch graphs"][2], "NO")  # 0.7 points
        self.assertEqual(rows["cuDNN+cuBLAS kernels-only ceiling, examples/s"][2], "yes")
        self.assertEqual(rows["taas ResNet (torch engine), 1 GPU, 3000 steps, examples/s"][0],
                         "19,000")
        self.assertEqual(rows["taas ResNet / PyTorch eager ResNet"], ("0.95x", ">= 0.95x", "yes"))
        self.assertEqual(rows["test accuracy, taas ResNet / PyTorch ResNet"][0], "0.9210 / 0.9190")
        self.assertEqual(rows["taas CNN, 4 GPUs, examples/s (of linear)"],
                         ("220,000 (92%)", ">= 90% of linear", "yes"))
        self.assertEqual(rows["NCCL all-reduce 256 MiB, bus GB/s"][0], "350.5")
        self.assertEqual(rows["cuBLAS SGEMM 8192^3 FP32, TFLOP/s"][0], "51.2")
        self.assertEqual(rows["the whole run, seconds"], ("250", "< 480", "yes"))
        text = table.render("NVIDIA H100 x4", table.rows(table.read_results(self.path), 4, 3000,
                                                         300, 250))
        self.assertTrue(text.startswith("GPU proof on NVIDIA H100 x4\nfigure"))

    def test_missing_and_failed_parts_are_not_met(self):
        write(self.path, "tests", "3 0 2 nn_cuda_engine_test,trainer_cuda_nccl_test\n")
        write(self.path, "taas-gpu1", "60000 n/a 30 cuda:0\n")
        rows = by_figure(table.rows(table.read_results(self.path), 1, 3000, 300, 600))
        self.assertEqual(rows["gpu tests"][2], "NO")
        self.assertIn("nn_cuda_engine_test", rows["gpu tests"][0])
        self.assertEqual(rows["taas / PyTorch eager"], ("n/a", ">= 1.0x", "n/a"))
        self.assertEqual(rows["test accuracy, taas / PyTorch eager"][2], "n/a")
        self.assertEqual(rows["taas ResNet / PyTorch eager ResNet"], ("n/a", ">= 0.95x", "n/a"))
        self.assertEqual(rows["the whole run, seconds"][2], "NO")
        self.assertNotIn("NCCL all-reduce 256 MiB, bus GB/s", rows)  # one GPU

    def test_a_resnet_below_its_target_is_not_met(self):
        write(self.path, "taas-resnet1", "18900 0.92 25 cuda:0\n")
        write(self.path, "torch-resnet-eager.json", json.dumps({"examples_per_sec": 20000.0}))
        rows = by_figure(table.rows(table.read_results(self.path), 1, 3000, 300, 200))
        self.assertEqual(rows["taas ResNet / PyTorch eager ResNet"], ("0.94x", ">= 0.95x", "NO"))

    def test_usage(self):
        self.assertEqual(table.main([]), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
