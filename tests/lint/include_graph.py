#!/usr/bin/env python3
"""The include-graph check: the shape of the tree (docs/architecture.md) as rules that fail CI.

A *part* is a folder with a public `include/taas/<name>/` (the name is what others include). The
check reads every C++ source and header of the repository and every CMakeLists.txt, and fails on
  - a forbidden include edge: a file of one part including a header of a part (or of an outside
    library) that its rules exclude, and
  - a forbidden link edge: an executable whose link closure (target_link_libraries, transitively)
    reaches a library its rules exclude.
Edges the tree still has and an open issue removes are listed in KNOWN, each with that issue:
they are reported but do not fail, and a known edge that no longer exists fails, so the list
stays true and only shrinks.

Usage: include_graph.py REPO_ROOT [--print]   (--print lists every part's edges)
"""

import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh")
SKIP_DIRS = {".git", "node_modules", "dist", ".cache"}

# Outside libraries, by the include path prefix their headers have.
EXTERNAL = {
    "oneDNN": ("dnnl", "oneapi/dnnl"),
    "gRPC": ("grpcpp/", "grpc/"),
    "Boost": ("boost/",),
    "OpenSSL": ("openssl/",),
    "yaml-cpp": ("yaml-cpp/",),
    "CUDA": ("cuda", "cublas", "cudnn", "nccl"),
    "LibTorch": ("torch/", "ATen/", "c10/"),
}

# Folder prefixes (relative to the root) and what files under them may not include: part folders
# (prefixes) or outside libraries (names of EXTERNAL); optionally, folders under the prefix that
# the rule does not cover.
INCLUDE_RULES = [
    ("common/", ["kube/", "operator/", "trainer-runtime/", "launcher/", "web-ui/", "examples/"],
     "shared parts depend on nothing but each other"),
    ("trainer-runtime/", ["kube/", "operator/", "launcher/", "web-ui/"],
     "the runtime (and the SDK users build against) needs no Kubernetes client, operator, "
     "launcher or UI folder"),
    # The Kubernetes client is shared infrastructure below the operator and the UI server alike:
    # it knows API objects, not TFJobs, and nothing above it.
    ("kube/", ["common/tfjob/", "operator/", "web-ui/", "launcher/", "trainer-runtime/"],
     "the Kubernetes client is generic: it knows objects, not TFJob types, the operator or the UI"),
    ("operator/", ["trainer-runtime/", "launcher/"],
     "the operator knows TFJobs and Kubernetes, not the runtime or the launcher"),
    ("operator/controller/", ["web-ui/"],
     "the controller does not know the UI (only the operator binary may host it)"),
    ("launcher/", ["operator/", "kube/", "web-ui/server/kube/"],
     "the launcher is a local controller: no Kubernetes client, not even through the UI's"),
    ("web-ui/", ["operator/"],
     "the UI uses the Kubernetes client (kube/) and the TFJob rules (common/tfjob/), never the "
     "operator: arrows point down"),
    # The UI server proper sees jobs through its JobSource seam only. Not covered: its Kubernetes
    # side (kube/), the `taas-ui` binary that wires the two (main.cc), and the fuzz targets, which
    # drive the handlers over the Kubernetes side.
    ("web-ui/server/", ["kube/", "web-ui/server/kube/"],
     "the UI server reads jobs through its JobSource seam; only web-ui/server/kube/ knows Kubernetes",
     ["web-ui/server/kube/", "web-ui/server/main.cc", "web-ui/server/fuzz/"]),
    ("web-ui/server/", ["trainer-runtime/", "launcher/"],
     "the UI server reads jobs through its seam, not from the runtime or the launcher"),
    ("trainer-runtime/ps/", ["trainer-runtime/nn/", "oneDNN"],
     "the parameter server is part of the engine-agnostic core"),
    ("trainer-runtime/tensor/", ["trainer-runtime/nn/", "oneDNN"],
     "tensors know their device, not an engine: a CUDA engine plugs in beside nn/"),
    ("trainer-runtime/optim/", ["trainer-runtime/nn/", "oneDNN"], "core: the PS applies these"),
    ("trainer-runtime/runtime/", ["trainer-runtime/nn/", "oneDNN"],
     "core: the role drivers move tensors; the model's engine is the model's choice"),
    ("trainer-runtime/data/", ["trainer-runtime/nn/", "oneDNN"], "core"),
    ("trainer-runtime/checkpoint/", ["trainer-runtime/nn/", "oneDNN"], "core"),
    ("trainer-runtime/summary/", ["trainer-runtime/nn/", "oneDNN"], "core"),
    ("trainer-runtime/config/", ["trainer-runtime/nn/", "oneDNN"], "core"),
    ("trainer-runtime/metrics/", ["trainer-runtime/nn/", "oneDNN"], "core"),
    ("trainer-runtime/testing/", ["trainer-runtime/nn/", "oneDNN"],
     "core: a model's tests use these whatever its engine"),
    ("trainer-runtime/collective/", ["trainer-runtime/nn/", "oneDNN", "trainer-runtime/ps/"],
     "core: collectives move host floats; they share nothing with the parameter servers' wire"),
    # Only the CUDA device (trainer-runtime/cuda/) and the CUDA engine (trainer-runtime/nn/cuda/)
    # see CUDA; the rest of the runtime reaches them through the seams it registers
    # (taas/tensor/device.h), so a build without CUDA is the same code.
    ("trainer-runtime/", ["CUDA", "trainer-runtime/cuda/", "trainer-runtime/nn/cuda/"],
     "CUDA stays behind the GPU device and engine (issue 17), reached through taas/tensor/device.h",
     ["trainer-runtime/cuda/", "trainer-runtime/nn/cuda/", "trainer-runtime/torch/cuda/"]),
    # LibTorch is an engine, a leaf on the core like nn/ (issue 34): the core meets it only
    # through the variables, the state and taas/runtime/engine.h, never its headers.
    ("trainer-runtime/", ["LibTorch", "trainer-runtime/torch/"],
     "LibTorch is a model engine beside nn/: the core never includes it",
     ["trainer-runtime/torch/"]),
    ("trainer-runtime/nn/", ["LibTorch", "trainer-runtime/torch/"],
     "the two engines are independent: a model picks one"),
]

# What ships (the image's binaries, the examples' trainers through the library they all link, the
# SDK's libraries): none may reach the simulated device, the test device no job may name
# (trainer-runtime/sim_device/).
SHIPPED = ["taas", "taas-operator", "taas-ui", "taas_fashion_mnist_trainer",
           "linear-regression", "taas_shared"]

# Executables and the libraries their link closure may not reach.
LINK_RULES = [
    ("linear-regression", ["taas_nn", "DNNL::dnnl"],
     "a model without layers (every role: PS, worker, chief, evaluator) links no engine"),
    ("taas_ps_bench", ["taas_nn", "DNNL::dnnl", "taas_cuda"], "parameter servers link no engine"),
    ("taas", ["taas_kube", "OpenSSL::SSL", "OpenSSL::Crypto"],
     "`taas run` links no Kubernetes client and no TLS"),
    ("taas", ["taas_cuda", "taas::cudart"], "`taas run` starts processes; it needs no GPU"),
    ("taas", ["taas_torch", "taas::libtorch"], "`taas run` starts processes; it needs no engine"),
    ("taas_fashion_mnist_trainer", ["taas_torch", "taas::libtorch"],
     "the built-in engine's trainers do not carry LibTorch"),
    ("linear-regression", ["taas_torch", "taas::libtorch"], "a model without layers links no engine"),
    ("taas-ui", ["taas_controller"],
     "the UI server uses the Kubernetes client (kube/), not the operator's controller"),
]

LINK_RULES += [
    (binary, ["taas_sim_memory", "taas_sim_device"],
     "the simulated device is for tests: no shipped binary or library may contain it")
    for binary in SHIPPED
]

# Edges the tree has today and an open issue removes: (from, to, issue).
KNOWN = []


def walk(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            yield os.path.relpath(os.path.join(folder, name), root)


def find_parts(root):
    """Maps each `taas/<name>` include prefix to the folder (with a trailing /) that holds it."""
    parts = {}
    for path in walk(root):
        m = re.match(r"(.+)/include/taas/([^/]+)/", path)
        if m:
            parts.setdefault(m.group(2), m.group(1) + "/")
    return parts


INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def include_edges(root, parts):
    """(file, included target) for every include of a part or of an outside library."""
    edges = []
    for path in walk(root):
        if not path.endswith(SOURCE_SUFFIXES):
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for header in INCLUDE.findall(text):
            m = re.match(r"taas/([^/]+)/", header)
            if m and m.group(1) in parts:
                edges.append((path, parts[m.group(1)]))
                continue
            for library, prefixes in EXTERNAL.items():
                if header.startswith(prefixes):
                    edges.append((path, library))
    return edges


def cmake_link_graph(root):
    """target -> set of direct link items, with `taas::x` aliases resolved."""
    aliases, links = {}, {}
    for path in walk(root):
        if os.path.basename(path) != "CMakeLists.txt":
            continue
        with open(os.path.join(root, path)) as f:
            text = re.sub(r"#[^\n]*", "", f.read())
        for name, target in re.findall(r"add_library\(\s*(\S+)\s+ALIAS\s+(\S+)\s*\)", text):
            aliases[name] = target
        for body in re.findall(r"target_link_libraries\(([^)]*)\)", text):
            words = body.split()
            items = [w for w in words[1:] if w not in ("PUBLIC", "PRIVATE", "INTERFACE")]
            links.setdefault(words[0], set()).update(items)
    return {t: {aliases.get(i, i) for i in items} for t, items in links.items()}


def closure(graph, target):
    seen, stack = set(), [target]
    while stack:
        for item in graph.get(stack.pop(), ()):
            if item not in seen:
                seen.add(item)
                stack.append(item)
    return seen


def private_reaches(root):
    """(file, header) for every quoted include that climbs out of its folder (`../x/y.h`): another
    part's private header, which that part may change at will; parts are reached through their
    public `include/` only."""
    reaches = []
    for path in walk(root):
        if path.endswith(SOURCE_SUFFIXES):
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                reaches += [(path, h) for h in INCLUDE.findall(f.read()) if ".." in h.split("/")]
    return reaches


def violations(root):
    parts = find_parts(root)
    found = []  # (from, to, why, detail)
    for path, header in private_reaches(root):
        found.append((path, header, "a part is reached through its public include/ only", path))
    for path, target in include_edges(root, parts):
        for prefix, forbidden, why, *excepted in INCLUDE_RULES:
            if any(path.startswith(e) for e in (excepted[0] if excepted else [])):
                continue
            for banned in forbidden:
                if path.startswith(prefix) and target.startswith(banned):
                    found.append((prefix, banned, why, path))
    graph = cmake_link_graph(root)
    for executable, forbidden, why in LINK_RULES:
        reached = closure(graph, executable)
        for library in forbidden:
            if library in reached:
                found.append((executable, library, why, f"{executable} links"))
    return parts, graph, found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--print", action="store_true")
    args = parser.parse_args()
    parts, graph, found = violations(args.root)
    if args.print:
        edges = {}
        for path, target in include_edges(args.root, parts):
            owner = max((p for p in parts.values() if path.startswith(p)), key=len, default="-")
            if owner != target:
                edges.setdefault(owner, set()).add(target)
        for owner in sorted(edges):
            print(f"{owner} -> {', '.join(sorted(edges[owner]))}")
        print(f"taas links: {', '.join(sorted(closure(graph, 'taas')))}")

    known = {(a, b): issue for a, b, issue in KNOWN}
    failures, seen_known = [], set()
    for source, target, why, detail in found:
        if (source, target) in known:
            seen_known.add((source, target))
            print(f"known  {detail} -> {target} (issue {known[(source, target)]})")
        else:
            failures.append(f"FORBIDDEN {detail} -> {target}: {why}")
    for edge, issue in known.items():
        if edge not in seen_known:
            failures.append(f"GONE {edge[0]} -> {edge[1]} is listed in KNOWN (issue {issue}) but "
                            "no longer exists: remove it from KNOWN in tests/lint/include_graph.py")
    print(f"{len(parts)} parts, {len(found)} forbidden edges found, {len(found) - len(failures)} "
          f"known", flush=True)
    for failure in failures:
        print(failure)
    if failures:
        print("include graph: FAILED (docs/architecture.md says what depends on what)")
        return 1
    print("include graph: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
