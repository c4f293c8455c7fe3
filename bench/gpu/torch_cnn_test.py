#!/usr/bin/env python3
"""bench/gpu/torch_cnn.py on the CPU: its IDX reader on small files made here (and on the real
test set when Debian's dataset-fashion-mnist is installed), its arguments, and, where torch is
importable, a few training steps on the CPU. The GPU machines run the rest (bench/gpu/run.sh)."""
import contextlib
import gzip
import importlib.util
import io
import json
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_cnn  # noqa: E402

DATASET = "/usr/share/datasets/fashion-mnist"


def idx(magic, dims, payload):
    return struct.pack(">I", magic) + struct.pack(f">{len(dims)}I", *dims) + payload


def write_split(folder, split, count, rows=28, cols=28, labels=None, compress=True):
    """A split of `count` images whose pixels and labels depend on the example's index."""
    images_file, labels_file = torch_cnn.SPLITS[split]
    pixels = bytes((i * 7 + j) % 256 for i in range(count) for j in range(rows * cols))
    labels = bytes(i % 10 for i in range(count)) if labels is None else labels
    opener = gzip.open if compress else open
    with opener(os.path.join(folder, images_file), "wb") as f:
        f.write(idx(torch_cnn.IMAGES_MAGIC, (count, rows, cols), pixels))
    with opener(os.path.join(folder, labels_file), "wb") as f:
        f.write(idx(torch_cnn.LABELS_MAGIC, (len(labels),), labels))
    return pixels, labels


class ReaderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = self.dir.name

    def test_reads_gzip_and_plain_files(self):
        for compress in (True, False):
            pixels, labels = write_split(self.path, "test", 5, 3, 2, compress=compress)
            count, rows, cols, got_pixels, got_labels = torch_cnn.load_split(self.path, "test")
            self.assertEqual((count, rows, cols), (5, 3, 2))
            self.assertEqual(got_pixels, pixels)
            self.assertEqual(got_labels, labels)

    def test_refuses_what_is_not_the_data_naming_the_file(self):
        images = os.path.join(self.path, torch_cnn.SPLITS["test"][0])
        cases = {
            "magic": idx(torch_cnn.LABELS_MAGIC, (3,), b"\0\0\0"),
            "truncated": idx(torch_cnn.IMAGES_MAGIC, (3, 2, 2), b"\0" * 11),
            "huge": idx(torch_cnn.IMAGES_MAGIC, (1 << 20, 1 << 10, 1 << 10), b""),
            "short header": b"\0\0",
        }
        for name, content in cases.items():
            with self.subTest(name), open(images, "wb") as f:
                f.write(content)
            with self.subTest(name), self.assertRaisesRegex(torch_cnn.IdxError, images):
                torch_cnn.read_idx(images, torch_cnn.IMAGES_MAGIC)

    def test_refuses_labels_that_do_not_match_the_images(self):
        write_split(self.path, "train", 4, labels=b"\0\1\2")
        with self.assertRaisesRegex(torch_cnn.IdxError, "4 images but 3 labels"):
            torch_cnn.load_split(self.path, "train")
        write_split(self.path, "train", 2, labels=b"\0\x0a")
        with self.assertRaisesRegex(torch_cnn.IdxError, "outside 0..9"):
            torch_cnn.load_split(self.path, "train")

    def test_corrupt_gzip_is_an_idx_error(self):
        write_split(self.path, "test", 2)
        labels = os.path.join(self.path, torch_cnn.SPLITS["test"][1])
        with open(labels, "r+b") as f:
            f.seek(12)
            f.write(b"garbage garbage garbage")
        with self.assertRaises(torch_cnn.IdxError):
            torch_cnn.load_split(self.path, "test")

    @unittest.skipUnless(os.path.isdir(DATASET), "dataset-fashion-mnist is not installed")
    def test_reads_the_real_test_set(self):
        count, rows, cols, pixels, labels = torch_cnn.load_split(DATASET, "test")
        self.assertEqual((count, rows, cols), (10000, 28, 28))
        self.assertEqual(len(pixels), 10000 * 28 * 28)
        self.assertEqual(sorted(set(labels)), list(range(10)))


class ArgumentsTest(unittest.TestCase):
    def test_graphs_need_cuda_and_the_cnn_and_counts_must_be_positive(self):
        for argv in (["--data_dir=x", "--mode=graphs", "--device=cpu"],
                     ["--data_dir=x", "--mode=graphs", "--model=resnet"],
                     ["--data_dir=x", "--model=vgg"],
                     ["--data_dir=x", "--steps=0"]):
            with self.subTest(argv), contextlib.redirect_stderr(io.StringIO()):
                with self.assertRaises(SystemExit):
                    torch_cnn.parse_args(argv)
        self.assertEqual(torch_cnn.parse_args(["--data_dir=x"]).steps, 3000)
        self.assertEqual(torch_cnn.parse_args(["--data_dir=x"]).model, "cnn")
        self.assertEqual(torch_cnn.parse_args(["--data_dir=x", "--model=resnet"]).model, "resnet")

    def test_finds_the_resnet_of_bench_torch(self):
        # The ResNet is torch_peer.py's, one definition for the CPU and the GPU peers.
        spec = importlib.util.find_spec("torch_peer")
        self.assertIsNotNone(spec, "torch_cnn.py's path holds no torch_peer.py")
        self.assertEqual(os.path.realpath(spec.origin), os.path.realpath(os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "torch", "torch_peer.py")))

    def test_a_missing_data_dir_is_a_clear_error(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(torch_cnn.main(["--data_dir=/nonexistent", "--device=cpu"]), 2)
        self.assertIn("/nonexistent", err.getvalue())


def torch_available():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(torch_available(), "torch is not installed here (the GPU machines have it)")
class CpuTrainingTest(unittest.TestCase):
    def test_a_few_steps_on_the_cpu_print_one_json_line(self):
        # The ResNet is bench/torch/torch_peer.py's, found from the source tree.
        for model in ("cnn", "resnet"):
            with self.subTest(model), tempfile.TemporaryDirectory() as path:
                write_split(path, "train", 64)
                write_split(path, "test", 20)
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    code = torch_cnn.main([f"--data_dir={path}", "--device=cpu", "--steps=6",
                                           "--batch_size=8", "--log_steps=2", f"--model={model}"])
                self.assertEqual(code, 0)
                result = json.loads(out.getvalue())
                self.assertEqual((result["model"], result["mode"], result["device"],
                                  result["steps"]), (model, "eager", "cpu", 6))
                self.assertGreater(result["examples_per_sec"], 0)
                self.assertTrue(0.0 <= result["accuracy"] <= 1.0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
