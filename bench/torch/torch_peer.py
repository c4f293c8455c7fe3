"""The PyTorch peer of bench/torch: the ResNet-style CNN of examples/torch-models/models.cc trained
on Fashion-MNIST in one process (--mode single) or with DistributedDataParallel over gloo on
127.0.0.1 (--mode ddp, --workers processes); prints one JSON line.

The same model, data (the IDX files, /255 floats), batch per replica, steps and update (Adam 0.001,
epsilon 1e-7 as taas's optimizer) as the taas job. Like taas's all-reduce, every replica reads its
own shard and BatchNorm statistics stay each replica's own after the start (broadcast_buffers
False); the first replica evaluates the test set at the end. examples_per_sec leaves out the first
--log_steps steps (start-up), as the taas side leaves out its first progress window, and sums the
replicas' rates.
"""
import argparse
import gzip
import json
import os
import queue
import socket
import struct
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn import functional as F


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = bytearray(f.read())
    magic, count = struct.unpack(">II", data[:8])
    if magic == 0x803:
        return torch.frombuffer(data, dtype=torch.uint8, offset=16).view(count, 1, 28, 28)
    return torch.frombuffer(data, dtype=torch.uint8, offset=8).long()


def load(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    return images.float() / 255.0, labels


class ResidualBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 16, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(16)
        self.stage1 = ResidualBlock(16, 16, 1)
        self.stage2 = ResidualBlock(16, 32, 2)
        self.stage3 = ResidualBlock(32, 64, 2)
        self.head = nn.Linear(64, 10)

    def forward(self, images):
        x = F.relu(self.stem_bn(self.stem(images)))
        x = self.stage3(self.stage2(self.stage1(x)))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def accuracy(model, images, labels):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(labels), 1000):
            correct += (model(images[i:i + 1000]).argmax(1) == labels[i:i + 1000]).sum().item()
    return correct / len(labels)


def train(rank, args, port, results):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    distributed = args.mode == "ddp"
    if distributed:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=args.workers)
    images, labels = load(args.data_dir, "train")
    shard = torch.arange(rank, len(labels), args.workers if distributed else 1)
    model = ResNet()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, eps=1e-7)
    generator = torch.Generator().manual_seed(args.seed * 1000 + rank)
    order, position = shard[torch.randperm(len(shard), generator=generator)], 0
    model.train()
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        if position + args.batch > len(order):
            order, position = shard[torch.randperm(len(shard), generator=generator)], 0
        batch = order[position:position + args.batch]
        position += args.batch
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(images[batch]), labels[batch]).backward()
        optimizer.step()
        if step == args.log_steps:
            start = time.perf_counter()
    rate = (args.steps - args.log_steps) * args.batch / (time.perf_counter() - start)
    total = torch.tensor([rate], dtype=torch.float64)
    if distributed:
        dist.all_reduce(total)  # the sum of the ranks' rates
    if rank == 0:
        test_images, test_labels = load(args.data_dir, "t10k")
        module = model.module if distributed else model
        results.put({"impl": "pytorch-" + args.mode, "workers": args.workers,
                     "examples_per_sec": total.item(),
                     "accuracy": accuracy(module, test_images, test_labels)})
    if distributed:
        dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["single", "ddp"], required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--log_steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    if args.steps <= args.log_steps:
        parser.error(f"--steps={args.steps}: must exceed --log_steps={args.log_steps}")
    if args.mode == "single":
        args.workers = 1
    context = mp.get_context("spawn")
    results = context.Queue()
    processes = []
    if args.mode == "single":
        train(0, args, 0, results)
    else:
        port = free_port()
        processes = [context.Process(target=train, args=(rank, args, port, results))
                     for rank in range(args.workers)]
        for p in processes:
            p.start()
    # Before join (a process exits only once its queue is drained), without hanging on a dead one.
    while True:
        try:
            result = results.get(timeout=5)
            break
        except queue.Empty:
            if processes and not any(p.is_alive() for p in processes):
                raise SystemExit("every DDP process exited without a result")
    for p in processes:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"DDP process exited with {p.exitcode}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
