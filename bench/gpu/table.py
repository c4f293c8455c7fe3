#!/usr/bin/env python3
"""The one table bench/gpu/run.sh prints: every figure of a GPU proof run beside its target
(bench/gpu/README.md), read from the run's results folder:

  tests            "passed skipped failed failed-names" of the gpu tests
  taas-cpu, taas-gpu1, taas-gpus, taas-resnet1
                   "examples/s accuracy secs devices" of each taas run (taas-resnet1: the torch
                   engine's ResNet, fashion-mnist-torch, on one GPU)
  torch-eager.json, torch-graphs.json, torch-resnet-eager.json
                   torch_cnn.py's JSON line (the CNN eager and in CUDA graphs, the ResNet eager)
  gpu_bench.log    gpu_bench's `name: value unit (detail)` lines

A figure that is missing (a part skipped or failed) shows as n/a, and its target as not met.

  table.py RESULTS_DIR MACHINE GPUS STEPS CPU_STEPS BATCH_SIZE TOTAL_SECS
"""
import json
import os
import re
import sys

# The targets (bench/gpu/README.md, issue 29).
TORCH_EAGER_RATIO = 1.0  # taas examples/s over PyTorch eager's, at least
RESNET_EAGER_RATIO = 0.95  # the torch engine's ResNet over PyTorch eager's (issue 34), at least
ACCURACY_POINTS = 0.5  # |taas - PyTorch| test accuracy, in points, at most
CEILING_FACTOR = 1.5  # the kernels-only ceiling over taas's examples/s, at most
SCALING = 0.9  # all GPUs' examples/s over GPUs x one GPU's, at least
TOTAL_SECS = 480  # the whole run, at most


def read_fields(path, names):
    """The whitespace-separated fields of a one-line file as a dict, or {} when it is missing."""
    try:
        with open(path) as f:
            values = f.read().split()
    except OSError:
        return {}
    return dict(zip(names, values))


def number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def read_results(folder):
    results = {"tests": read_fields(os.path.join(folder, "tests"),
                                    ("passed", "skipped", "failed", "failures"))}
    for run in ("cpu", "gpu1", "gpus", "resnet1"):
        results[run] = read_fields(os.path.join(folder, f"taas-{run}"),
                                   ("rate", "accuracy", "secs", "devices"))
    for mode in ("eager", "graphs", "resnet-eager"):
        try:
            with open(os.path.join(folder, f"torch-{mode}.json")) as f:
                results[mode] = json.loads(f.read())
        except (OSError, ValueError):
            results[mode] = {}
    results["bench"] = {}
    try:
        with open(os.path.join(folder, "gpu_bench.log"), errors="replace") as f:
            for line in f:
                m = re.match(r"^(.+?): ([0-9.]+) (\S+)", line)
                if m:
                    results["bench"][m.group(1)] = float(m.group(2))
    except OSError:
        pass
    return results


def bench_figure(bench, prefix):
    for name, value in bench.items():
        if name.startswith(prefix):
            return value
    return None


def fmt(value, pattern="{:,.0f}"):
    return "n/a" if value is None else pattern.format(value)


def met(ok):
    return "n/a" if ok is None else ("yes" if ok else "NO")


def rows(results, gpus, steps, cpu_steps, total_secs):
    """(figure, value, target, met) rows of the table."""
    t = results["tests"]
    out = []
    if t:
        failed = int(t.get("failed", "1"))
        tests = f"{t.get('passed')} passed, {t.get('skipped')} skipped, {failed} failed"
        if failed:
            tests += f" ({t.get('failures')})"
        out.append(("gpu tests", tests, "all pass", met(failed == 0 and int(t["passed"]) > 0)))
    else:
        out.append(("gpu tests", "not run", "all pass", "n/a"))
    taas = number(results["gpu1"].get("rate"))
    eager = number(results["eager"].get("examples_per_sec"))
    graphs = number(results["graphs"].get("examples_per_sec"))
    out += [
        (f"taas CNN, CPU, {cpu_steps} steps, examples/s", fmt(number(results["cpu"].get("rate"))),
         "", ""),
        (f"taas CNN, 1 GPU, {steps} steps, examples/s", fmt(taas), "", ""),
        ("PyTorch eager, 1 GPU, examples/s", fmt(eager), "", ""),
        ("PyTorch CUDA graphs, 1 GPU, examples/s", fmt(graphs), "", ""),
    ]
    for name, peer, target, required in (("eager", eager, TORCH_EAGER_RATIO, True),
                                         ("CUDA graphs", graphs, TORCH_EAGER_RATIO, False)):
        ratio = taas / peer if taas and peer else None
        out.append((f"taas / PyTorch {name}", fmt(ratio, "{:.2f}x"),
                    (">= " if required else "aim >= ") + f"{target:.1f}x",
                    met(None if ratio is None else ratio >= target)))
    accuracy = number(results["gpu1"].get("accuracy"))
    for name in ("eager", "graphs"):
        peer = number(results[name].get("accuracy"))
        gap = abs(accuracy - peer) * 100 if accuracy is not None and peer is not None else None
        out.append((f"test accuracy, taas / PyTorch {name}",
                    f"{fmt(accuracy, '{:.4f}')} / {fmt(peer, '{:.4f}')}",
                    f"within {ACCURACY_POINTS} points",
                    met(None if gap is None else gap <= ACCURACY_POINTS)))
    resnet = number(results["resnet1"].get("rate"))
    resnet_eager = number(results["resnet-eager"].get("examples_per_sec"))
    ratio = resnet / resnet_eager if resnet and resnet_eager else None
    out += [
        (f"taas ResNet (torch engine), 1 GPU, {steps} steps, examples/s", fmt(resnet), "", ""),
        ("PyTorch eager ResNet, 1 GPU, examples/s", fmt(resnet_eager), "", ""),
        ("taas ResNet / PyTorch eager ResNet", fmt(ratio, "{:.2f}x"),
         f">= {RESNET_EAGER_RATIO:.2f}x",
         met(None if ratio is None else ratio >= RESNET_EAGER_RATIO)),
        ("test accuracy, taas ResNet / PyTorch ResNet",
         f"{fmt(number(results['resnet1'].get('accuracy')), '{:.4f}')} / "
         f"{fmt(number(results['resnet-eager'].get('accuracy')), '{:.4f}')}", "", ""),
    ]
    ceiling = bench_figure(results["bench"], "CNN kernels-only ceiling")
    out.append(("cuDNN+cuBLAS kernels-only ceiling, examples/s", fmt(ceiling),
                f"taas >= ceiling / {CEILING_FACTOR}",
                met(None if not (ceiling and taas) else taas * CEILING_FACTOR >= ceiling)))
    if gpus > 1:
        every = number(results["gpus"].get("rate"))
        scaling = every / (gpus * taas) if every and taas else None
        out.append((f"taas CNN, {gpus} GPUs, examples/s (of linear)",
                    f"{fmt(every)} ({fmt(None if scaling is None else 100 * scaling, '{:.0f}%')})",
                    f">= {SCALING * 100:.0f}% of linear",
                    met(None if scaling is None else scaling >= SCALING)))
        out.append(("NCCL all-reduce 256 MiB, bus GB/s",
                     fmt(bench_figure(results["bench"], "NCCL all-reduce 256 MiB"), "{:.1f}"), "",
                     ""))
    out.append(("cuBLAS SGEMM 8192^3 FP32, TFLOP/s",
                fmt(bench_figure(results["bench"], "cuBLAS SGEMM 8192^3 FP32"), "{:.1f}"), "", ""))
    out.append(("the whole run, seconds", f"{total_secs}", f"< {TOTAL_SECS}",
                met(total_secs < TOTAL_SECS)))
    return out


def render(machine, table):
    widths = [max(len(str(row[i])) for row in table) for i in range(4)]
    lines = [f"GPU proof on {machine}"]
    for row in [("figure", "value", "target", "met")] + table:
        lines.append("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    return "\n".join(lines)


def main(argv):
    if len(argv) != 7:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    folder, machine = argv[0], argv[1]
    gpus, steps, cpu_steps, _, total = (int(x) for x in argv[2:])
    print(render(machine, rows(read_results(folder), gpus, steps, cpu_steps, total)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
