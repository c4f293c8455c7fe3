"""Weights in and out through safetensors, with the stock PyPI reader and writer.

1. A PyTorch model's weights warm-start the example MLP: the file is written by
   safetensors.numpy.save_file in PyTorch's names and layouts (an nn.Linear(784, 500), ReLU,
   nn.Linear(500, 10) as fc1/fc2: weight [out, in]; PyTorch's own default initialisation,
   uniform in +-1/sqrt(fan_in)), which is what safetensors.torch.save_file writes for that
   module. taas (fashion-mnist-torch-weights) warm-starts its MLP from it with a name map and the
   kernels transposed and scores the Fashion-MNIST test set; numpy computes PyTorch's forward
   (x @ W.T + b) on the same images. Both must predict the same class for every image (but the
   few whose best two logits tie within the tolerance), with logits within 1e-5.
2. safetensors.numpy.load_file reads the checkpoint taas wrote of those variables: the same
   names, shapes, dtype and bit-identical values (the kernels are PyTorch's, transposed).
3. A file whose tensor has another shape is refused, naming the tensor, both shapes and the file.

Usage: torch_weights_test.py TOOL   (run by the venv's python: scripts/setup.d/40-python.sh)
"""
import gzip
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

TOOL = sys.argv[1]
TEST_IMAGES = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"
N = 10000  # the whole test set


def torch_linear(rng, inputs, outputs):
    """nn.Linear's default initialisation: weight and bias uniform in +-1/sqrt(in)."""
    bound = 1.0 / np.sqrt(inputs)
    weight = rng.uniform(-bound, bound, size=(outputs, inputs)).astype(np.float32)
    bias = rng.uniform(-bound, bound, size=(outputs,)).astype(np.float32)
    return weight, bias


def test_images():
    with gzip.open(TEST_IMAGES) as f:
        raw = f.read()
    return (np.frombuffer(raw, dtype=np.uint8, offset=16).reshape(-1, 784)[:N]
            .astype(np.float32) / np.float32(255.0))


def run(weights, out_dir):
    logits = os.path.join(out_dir, "logits.f32")
    model_dir = os.path.join(out_dir, "model")
    done = subprocess.run([TOOL, weights, logits, model_dir, str(N)], capture_output=True,
                          text=True, timeout=120)
    return done, logits, model_dir


def main():
    failures = []
    rng = np.random.default_rng(36)
    w1, b1 = torch_linear(rng, 784, 500)
    w2, b2 = torch_linear(rng, 500, 10)
    tensors = {"fc1.weight": w1, "fc1.bias": b1, "fc2.weight": w2, "fc2.bias": b2}
    with tempfile.TemporaryDirectory() as tmp:
        weights = os.path.join(tmp, "mlp.safetensors")
        save_file(tensors, weights)
        done, logits_path, model_dir = run(weights, tmp)
        if done.returncode != 0:
            print(f"FAIL the warm start from {weights}: exit {done.returncode}\n{done.stderr}")
            return 1

        # 1. The same predictions as PyTorch's forward pass.
        x = test_images()
        reference = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
        logits = np.fromfile(logits_path, dtype=np.float32).reshape(N, 10)
        worst = float(np.max(np.abs(logits - reference)))
        # Where the reference's best two classes are closer than the tolerance, float32 sums in
        # another order may pick either: a tie, not a different prediction.
        top2 = np.sort(reference, 1)[:, -2:]
        decided = top2[:, 1] - top2[:, 0] > 1e-5
        agree = np.argmax(logits, 1) == np.argmax(reference, 1)
        same = int(np.sum(agree[decided]))
        logits_ok = worst <= 1e-5 and same == int(np.sum(decided))
        if not logits_ok:
            failures.append(f"logits: max |taas - numpy| {worst:.3g}, "
                            f"{same}/{np.sum(decided)} same classes")
        print(f"{'ok  ' if logits_ok else 'FAIL'} logits of {N} test images: max |taas - numpy| "
              f"{worst:.3g}; {same} of the {np.sum(decided)} not tied within 1e-5 predict the "
              f"same class ({N - np.sum(decided)} tied, {int(np.sum(agree))}/{N} in all)")

        # 2. The checkpoint taas wrote, read by safetensors itself.
        checkpoint_failures = len(failures)
        path = os.path.join(model_dir, "model.ckpt-1.safetensors")
        loaded = load_file(path)
        expected = {"hidden/kernel": w1.T, "hidden/bias": b1, "logits/kernel": w2.T,
                    "logits/bias": b2}
        if sorted(loaded) != sorted(expected):
            failures.append(f"checkpoint names: {sorted(loaded)}")
        for name, want in expected.items():
            got = loaded.get(name)
            if got is None or got.dtype != np.float32 or got.shape != want.shape or \
                    got.view(np.uint32).tobytes() != np.ascontiguousarray(want).view(
                        np.uint32).tobytes():
                failures.append(f"checkpoint entry {name}: not bit-identical "
                                f"({None if got is None else (got.dtype, got.shape)})")
        with safe_open(path, framework="numpy") as f:
            metadata = f.metadata()
        if metadata.get("global_step") != "1" or "crc32c.hidden/kernel" not in metadata:
            failures.append(f"checkpoint metadata: {metadata}")
        print(f"{'ok  ' if len(failures) == checkpoint_failures else 'FAIL'} "
              f"safetensors.numpy.load_file reads "
              f"{path}: {len(loaded)} tensors, bit-identical")

        # 3. A tensor of another shape: refused, naming it, both shapes and the file.
        bad = os.path.join(tmp, "bad.safetensors")
        save_file(dict(tensors, **{"fc2.weight": np.zeros((10, 499), np.float32)}), bad)
        done, _, _ = run(bad, os.path.join(tmp, "bad"))
        want = (f"warm start: logits/kernel (as fc2.weight) does not fit: the model's has shape "
                f"[500, 10], file {bad} holds shape [10, 499] (transposed: [499, 10])")
        if done.returncode != 1 or want not in done.stderr:
            failures.append(f"the wrong shape: exit {done.returncode}, {done.stderr!r}")
        print(f"{'ok  ' if done.returncode == 1 and want in done.stderr else 'FAIL'} "
              f"a wrong shape is refused: {done.stderr.strip()}")
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
