#!/usr/bin/env python3
"""taas's Fashion-MNIST models in PyTorch: the peers bench/gpu/run.sh measures taas against on
the same GPU, in the same run (bench/gpu/README.md).

--model=cnn (the built-in engine's CNN, the default) is the same model as `fashion-mnist-cnn`
(examples/fashion-mnist-models/models.cc): Conv32 3x3 - MaxPool 2 - Conv64 3x3 - MaxPool 2 - Conv64
3x3 - Flatten - Dense64 - Dense10, valid padding, ReLU, Glorot-uniform kernels and zero biases
(Keras's defaults, not PyTorch's); Adam with learning rate 1e-3, betas 0.9 and 0.999 and Keras's
epsilon 1e-7; softmax cross-entropy; the same batch, steps and data (the four IDX files, pixels
divided by 255); full float32 (TF32 off for convolutions and matrix products, as taas's CUDA engine
computes). What differs, on purpose: the training set lives on the GPU and each epoch is one random
permutation (taas shuffles through a 10,000-example buffer and copies each batch from the host);
PyTorch's Adam adds epsilon to sqrt(v) / sqrt(1 - beta2^t) where Keras adds it to sqrt(v) (a 1e-7
difference); PyTorch's own random initial values and order.

--model=resnet is the torch engine's ResNet-style CNN (examples/torch-models/models.cc) as
bench/torch/torch_peer.py defines it for the CPU benchmark (imported from there, or from beside
this file in the bundle), with PyTorch's own initialisers and the same Adam, in eager mode only.
It keeps PyTorch's default precision settings (full_float32 is the CNN's only): taas's torch engine
is LibTorch, the same library, which it leaves at the same defaults, so both compute alike.

Modes: `eager` (each step's kernels launched one by one, Adam's default implementation) and
`graphs` (the whole step, forward, backward and Adam with capturable=True, captured once in a
CUDA graph and replayed: PyTorch's fastest form of a small model's step).

Prints one JSON line: model, mode, device, steps, batch_size, examples_per_sec (the median of the
windows of --log_steps steps after the first, each ended by reading the loss, as taas's trainer
reads its loss every log_steps and bench/gpu/run.sh takes the median of its windows after the
first), accuracy (the test set's, after training), final_loss, secs, torch (its version).

Needs only the standard library and torch: the IDX reader below is plain Python, so it is
tested without torch (bench/gpu/torch_cnn_test.py).
"""
import argparse
import gzip
import json
import os
import zlib
import statistics
import struct
import sys
import time

# torch_peer.py (the ResNet): beside this file in the bundle, in bench/torch/ in the source tree.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "torch")]

# The IDX files of one split, as Debian's dataset-fashion-mnist names them.
SPLITS = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
IMAGES_MAGIC = 0x00000803  # unsigned bytes, 3 dimensions
LABELS_MAGIC = 0x00000801  # unsigned bytes, 1 dimension
MAX_BYTES = 1 << 30  # what one file may declare


class IdxError(ValueError):
    """A file that is not the IDX data it should be; the message names it."""


def read_idx(path, magic):
    """(dimensions, payload bytes) of an IDX file, gzip-compressed or plain."""
    try:
        opener = gzip.open if _is_gzip(path) else open
        with opener(path, "rb") as f:
            header = f.read(4)
            if len(header) < 4 or struct.unpack(">I", header)[0] != magic:
                raise IdxError(f"{path}: not an IDX file with magic {magic:#010x}")
            rank = magic & 0xFF
            dims = struct.unpack(f">{rank}I", _exactly(f, 4 * rank, path, "its dimensions"))
            size = 1
            for d in dims:
                size *= d
            if size > MAX_BYTES:
                raise IdxError(f"{path}: declares {size} bytes, more than {MAX_BYTES}")
            payload = _exactly(f, size, path, f"{size} bytes of data")
    except (OSError, EOFError, zlib.error) as e:
        raise IdxError(f"{path}: {e}") from e
    return dims, payload


def _is_gzip(path):
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _exactly(f, n, path, what):
    data = f.read(n)
    if len(data) != n:
        raise IdxError(f"{path}: truncated: {what} expected, {len(data)} bytes found")
    return data


def load_split(data_dir, split):
    """(count, rows, cols, pixels, labels) of one split; pixels and labels as bytes."""
    images_file, labels_file = SPLITS[split]
    (count, rows, cols), pixels = read_idx(os.path.join(data_dir, images_file), IMAGES_MAGIC)
    (labels_count,), labels = read_idx(os.path.join(data_dir, labels_file), LABELS_MAGIC)
    if labels_count != count:
        raise IdxError(f"{data_dir}: {split} has {count} images but {labels_count} labels")
    if any(label > 9 for label in labels):
        raise IdxError(f"{data_dir}: {split} has a label outside 0..9")
    return count, rows, cols, pixels, labels


def full_float32(torch):
    """No TF32 in matrix products and convolutions, as taas's CUDA engine computes: the newer
    per-backend precision setting where this PyTorch has it (mixing it with the older flags is
    refused by some versions), else the allow_tf32 flags."""
    matmul, conv = torch.backends.cuda.matmul, getattr(torch.backends.cudnn, "conv", None)
    if hasattr(matmul, "fp32_precision") and hasattr(conv, "fp32_precision"):
        matmul.fp32_precision = "ieee"
        conv.fp32_precision = "ieee"
    else:
        matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def build_model(torch, name="cnn"):
    if name == "resnet":
        import torch_peer  # imports torch: only here, so that the reader works without it
        return torch_peer.ResNet()
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3), nn.ReLU(),
        nn.Flatten(),
        nn.Linear(3 * 3 * 64, 64), nn.ReLU(),
        nn.Linear(64, 10))
    for layer in model:
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(layer.weight)  # Keras's glorot_uniform
            nn.init.zeros_(layer.bias)
    return model


def as_tensors(torch, split, device):
    """Images as uint8 [n, 1, rows, cols] and labels as int64, on `device`."""
    count, rows, cols, pixels, labels = split
    images = torch.frombuffer(bytearray(pixels), dtype=torch.uint8).view(count, 1, rows, cols)
    targets = torch.frombuffer(bytearray(labels), dtype=torch.uint8).long()
    return images.to(device), targets.to(device)


class Batches:
    """Batches of the training set on its device, a fresh random permutation each epoch."""

    def __init__(self, torch, images, labels, batch_size, generator):
        self.torch, self.images, self.labels = torch, images, labels
        self.batch_size, self.generator = batch_size, generator
        self.order, self.next = None, len(labels)

    def __call__(self):
        if self.next + self.batch_size > len(self.labels):
            self.order = self.torch.randperm(len(self.labels), device=self.labels.device,
                                             generator=self.generator)
            self.next = 0
        index = self.order[self.next:self.next + self.batch_size]
        self.next += self.batch_size
        return self.images[index].float().div_(255.0), self.labels[index]


def train(torch, args, model, batches):
    """Trains for args.steps; returns (rates of the windows after the first, final loss)."""
    loss_fn = torch.nn.CrossEntropyLoss()
    graphs = args.mode == "graphs"
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7,
                                 capturable=graphs)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def eager_step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    step = eager_step
    done = 0
    if graphs:
        # PyTorch's whole-network capture: a few eager steps on a side stream (they count as
        # training steps), then one step captured and replayed on static input tensors.
        x, y = batches()
        static_x, static_y = x.clone(), y.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(min(3, args.steps)):
                eager_step(*batches())
                done += 1
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_fn(model(static_x), static_y)
            static_loss.backward()
            optimizer.step()

        def step(x, y):
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()
            return static_loss

    rates, loss, value = [], None, float("nan")
    sync()
    window_start, window_steps = time.perf_counter(), 0
    while done < args.steps:
        loss = step(*batches())
        done += 1
        window_steps += 1
        if window_steps == args.log_steps or done == args.steps:
            value = loss.item()  # waits for the device, as taas's log line does
            now = time.perf_counter()
            rates.append(window_steps * args.batch_size / (now - window_start))
            window_start, window_steps = now, 0
    return rates[1:] or rates or [0.0], value


def evaluate(torch, model, images, labels):
    model.eval()
    correct = 0
    with torch.no_grad():
        for begin in range(0, len(labels), 1000):
            x = images[begin:begin + 1000].float().div_(255.0)
            correct += (model(x).argmax(dim=1) == labels[begin:begin + 1000]).sum().item()
    model.train()
    return correct / max(1, len(labels))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data_dir", required=True, help="the four Fashion-MNIST IDX files")
    p.add_argument("--model", choices=("cnn", "resnet"), default="cnn")
    p.add_argument("--mode", choices=("eager", "graphs"), default="eager")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch_size", type=int, default=100)
    p.add_argument("--log_steps", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    if args.steps < 1 or args.batch_size < 1 or args.log_steps < 1:
        p.error("--steps, --batch_size and --log_steps must be at least 1")
    if args.mode == "graphs" and args.device != "cuda":
        p.error("--mode=graphs needs --device=cuda (CUDA graphs)")
    if args.mode == "graphs" and args.model != "cnn":
        p.error("--mode=graphs is measured for --model=cnn only (the ResNet's peer is eager)")
    return args


def main(argv):
    args = parse_args(argv)
    try:
        train_split = load_split(args.data_dir, "train")
        test_split = load_split(args.data_dir, "test")
    except IdxError as e:
        print(f"torch_cnn: {e}", file=sys.stderr)
        return 2
    if args.batch_size > train_split[0]:
        print(f"torch_cnn: --batch_size {args.batch_size} exceeds the {train_split[0]} training "
              "examples", file=sys.stderr)
        return 2
    import torch  # here, so that the reader above works without it
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_cnn: no CUDA device for PyTorch (torch.cuda.is_available() is False)",
              file=sys.stderr)
        return 2
    if args.model == "cnn":
        full_float32(torch)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model = build_model(torch, args.model).to(device)
    generator = torch.Generator(device=device)
    generator.manual_seed(args.seed)
    batches = Batches(torch, *as_tensors(torch, train_split, device), args.batch_size, generator)
    start = time.perf_counter()
    rates, final_loss = train(torch, args, model, batches)
    secs = time.perf_counter() - start
    accuracy = evaluate(torch, model, *as_tensors(torch, test_split, device))
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(json.dumps({"model": args.model, "mode": args.mode, "device": name, "steps": args.steps,
                      "batch_size": args.batch_size,
                      "examples_per_sec": round(statistics.median(rates), 1),
                      "accuracy": round(accuracy, 4), "final_loss": round(final_loss, 4),
                      "secs": round(secs, 1), "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
