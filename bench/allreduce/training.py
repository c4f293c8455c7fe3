"""Helper of training.sh: writes the TFJob manifests and reads the runs' logs into a table and
a scaling chart (SVG, standard library only).

usage: training.py manifest NAME PS WORKERS WORKER_BATCH
       training.py report WORK_DIR BATCH [CHART_PATH]
"""
import os
import re
import statistics
import sys

REPLICA = """    {type}:
      replicas: {count}
      restartPolicy: ExitCode
      template:
        spec:
          containers:
            - name: tensorflow
              image: taas/trainer:latest
              command: ["/opt/taas/bin/{command}"]
              args: ["--", "--batch_size={batch}"{args}]
"""


def manifest(name, ps, workers, batch, command="fashion-mnist-cnn", args=()):
    """Prints a TFJob of PS and workers running `command` with --batch_size and `args`."""
    extra = "".join(f', "{a}"' for a in args)
    replicas = [("PS", int(ps)), ("Worker", int(workers))]
    print("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: "
          f"{name}\nspec:\n  tfReplicaSpecs:")
    for rtype, count in replicas:
        if count:
            print(REPLICA.format(type=rtype, count=count, batch=batch, command=command,
                                 args=extra), end="")


def read_run(path):
    """Job examples/s (sum over workers of their mean after the first window), mean
    comm_fraction, and the chief's final test accuracy."""
    rates, comm, seen = {}, [], set()
    accuracy = None
    for line in open(path):
        m = re.search(r'msg="final test accuracy" .*accuracy=([0-9.]+)', line)
        if m:
            accuracy = float(m.group(1))
        if "msg=training " not in line or not re.search(r"role=(worker|chief)", line):
            continue
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        worker = fields["role"] + fields["index"]
        if worker not in seen:  # the first window includes start-up
            seen.add(worker)
            continue
        rates.setdefault(worker, []).append(float(fields["examples_per_sec"]))
        comm.append(float(fields["comm_fraction"]))
    if not rates:
        sys.exit(f"{path}: no progress lines after start-up; raise the steps")
    total = sum(statistics.mean(r) for r in rates.values())
    return total, statistics.mean(comm), accuracy


def svg_chart(series, batch, path):
    """Two panels: examples/s against workers, and against replicas per worker."""
    width, height, pad, top_pad = 720, 320, 50, 80
    panel = (width - 3 * pad) / 2
    top = max(v for _, points in series for _, v in points) * 1.15
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, (title, points) in enumerate(series):
        x0, y0 = pad + i * (panel + pad), height - pad
        xs = [x for x, _ in points]

        def px(x):
            return x0 + (xs.index(x) + 0.5) * panel / len(xs)

        def py(v):
            return y0 - v / top * (height - pad - top_pad)
        out.append(f'<text x="{x0 + panel / 2}" y="{top_pad - 12}" text-anchor="middle" '
                   f'font-weight="bold">{title}</text>')
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0 + panel}" y2="{y0}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{top_pad}" stroke="black"/>')
        for frac in (0.25, 0.5, 0.75, 1.0):
            v = top * frac / 1.15
            out.append(f'<text x="{x0 - 4}" y="{py(v) + 4}" text-anchor="end">{v:.0f}</text>')
            out.append(f'<line x1="{x0}" y1="{py(v)}" x2="{x0 + panel}" y2="{py(v)}" '
                       'stroke="#ddd"/>')
        ideal = points[0][1]
        for x, v in points:
            w = panel / len(xs) * 0.5
            out.append(f'<rect x="{px(x) - w / 2}" y="{py(v)}" width="{w}" height="{y0 - py(v)}" '
                       'fill="#4a7bb7"/>')
            out.append(f'<text x="{px(x)}" y="{py(v) - 4}" text-anchor="middle">{v:.0f}</text>')
            out.append(f'<text x="{px(x)}" y="{y0 + 16}" text-anchor="middle">{x}</text>')
            linear = ideal * x
            if linear <= top:
                out.append(f'<line x1="{px(x) - w / 2}" y1="{py(linear)}" x2="{px(x) + w / 2}" '
                           f'y2="{py(linear)}" stroke="#c44" stroke-dasharray="4 3"/>')
        out.append(f'<text x="{x0 + panel / 2}" y="{height - 12}" text-anchor="middle">'
                   f'{"workers (1 replica each)" if i == 0 else "replicas in 1 worker"}</text>')
    out.append(f'<text x="{pad}" y="18">examples/s, Fashion-MNIST CNN, batch {batch} and 1 thread '
               f'per replica; the replicas share {os.cpu_count()} cores</text>')
    out.append(f'<text x="{pad}" y="36" fill="#c44">dashed: linear scaling from 1 (beyond the '
               'chart where missing)</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def report(work, batch, chart):
    print(f"{'mode':<10} {'examples/s':>11} {'comm_fraction':>14} {'test accuracy':>14}")
    for name in ("allreduce", "ps-async", "ps-sync"):
        rate, comm, accuracy = read_run(os.path.join(work, name + ".log"))
        acc = f"{accuracy:.4f}" if accuracy is not None else "-"
        print(f"{name:<10} {rate:>11.0f} {comm:>14.3f} {acc:>14}")
    print("target: comm_fraction < 0.05 for all-reduce")
    workers = [(n, read_run(os.path.join(work, f"workers-{n}.log"))[0]) for n in (1, 2, 4)]
    replicas = [(1, workers[0][1])] + [
        (k, read_run(os.path.join(work, f"replicas-{k}.log"))[0]) for k in (2, 4)]
    print("scaling (examples/s; x: against 1):")
    for label, points in (("workers", workers), ("replicas per worker", replicas)):
        base = points[0][1]
        print(f"  {label:<20} " + "  ".join(f"{n}: {v:.0f} ({v / base:.2f}x)" for n, v in points))
    if chart:
        svg_chart([("all-reduce across workers", workers),
                   ("model replicas in one worker", replicas)], batch, chart)
        print(f"chart: {chart}")


if __name__ == "__main__":
    if sys.argv[1] == "manifest":
        manifest(*sys.argv[2:6])
    else:
        report(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "")
