"""The Go build of the control plane's binaries (etcd, the Kubernetes components, kubectl,
kwok) from the pinned module in scripts/cluster/build, through the Go module proxy, cached in
<cache>/k8s-<version>/bin with a stamp of go.mod and go.sum, so a changed pin rebuilds and an
unchanged one returns at once. Also finds the Go toolchain that the sibling build scripts
(scripts/cluster/{coscheduler,kueue,training-operator}) use, through `taas-cluster _go`."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .locks import FileLock
from .report import Failure, say, tail

K8S_VERSION = "v1.36.3"  # k8s.io/kubernetes; etcd and kwok versions are pinned in build/go.mod
# What `up` runs from the bin folder; `go build` names each after its package (go.mod's `tool`
# block), but etcd's main package is go.etcd.io/etcd/server/v3, so its "server" is renamed.
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl",
            "kwok")
MODULE_DIR = Path(__file__).resolve().parent.parent / "build"
# kwok's own default lifecycle stages, taken unmodified from the pinned kwok module: nodes get
# initialized and keep a fresh lease; bound pods turn Running; deleted pods are removed; pods
# owned by a Job complete.
KWOK_STAGES = ("node/fast/node-initialize.yaml",
               "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
               "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml")
KWOK_LOGS_CRD = "kustomize/crd/bases/kwok.x-k8s.io_logs.yaml"
BUILD_GOFLAGS = "-trimpath -buildvcs=false -mod=readonly"

# Bounds of each step. A cold compile took 31 min on 2 cores at load 10-19; these are far above
# what a healthy machine needs and only stop a hung step.
QUERY_TIMEOUT_S = 300
DOWNLOAD_TIMEOUT_S = 3600
COMPILE_TIMEOUT_S = 3 * 3600
OTHER_BUILD_TIMEOUT_S = DOWNLOAD_TIMEOUT_S + COMPILE_TIMEOUT_S
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


class Cache:
    """Where one version's build lives under the cache root."""

    def __init__(self, cache_root: Path):
        self.root = cache_root
        self.top = cache_root / f"k8s-{K8S_VERSION}"
        self.bin_dir = self.top / "bin"
        self.log = self.top / "build.log"
        self.lock = self.top / "build.lock"
        self.stages = self.bin_dir / "kwok-stages.yaml"
        self.logs_crd = self.bin_dir / "kwok-logs-crd.yaml"


# ----------------------------------------------------------------------------------------------
# pure parts

def build_stamp(go_mod: bytes, go_sum: bytes) -> str:
    """What the binaries were built from (sha256 of go.mod then go.sum, as `sha256sum` prints)."""
    return hashlib.sha256(go_mod + go_sum).hexdigest()


def required_go_minor(go_mod_text):
    """N of the module's `go 1.N[.P]` line, or None."""
    m = re.search(r"^go 1\.([0-9]+)", go_mod_text, re.MULTILINE)
    return int(m.group(1)) if m else None


def go_minor(goversion):
    """N of a `go env GOVERSION` answer such as go1.26.8, or None."""
    m = re.match(r"go1\.([0-9]+)", goversion)
    return int(m.group(1)) if m else None


def tool_packages(go_mod_text) -> list:
    """The packages of go.mod's `tool ( ... )` block, in order."""
    m = re.search(r"^tool \(\n(.*?)^\)", go_mod_text, re.MULTILINE | re.DOTALL)
    return [line.strip() for line in m.group(1).splitlines() if line.strip()] if m else []


def version_ldflags(version) -> str:
    """Stripped binaries that report `version` (vMAJOR.MINOR.PATCH), as a release build does."""
    major, minor = version.lstrip("v").split(".")[:2]
    v = "k8s.io/component-base/version"
    return (f"-s -w -X {v}.gitVersion={version} -X {v}.gitMajor={major} -X {v}.gitMinor={minor} "
            f"-X {v}.gitTreeState=clean")


def failed_packages(build_log_text) -> list:
    """The packages `go build` reported errors in (its `# package` lines), sorted, unique."""
    return sorted(set(re.findall(r"^# (\S+)", build_log_text, re.MULTILINE)))


# ----------------------------------------------------------------------------------------------
# the toolchain

def find_go(settings) -> str:
    """A Go toolchain new enough for build/go.mod: $TAAS_GO, `go` on PATH or /usr/local/go, else
    the toolchain module fetched from the Go module proxy into the cache."""
    want = required_go_minor((MODULE_DIR / "go.mod").read_text())
    if want is None:
        raise Failure(f"{MODULE_DIR / 'go.mod'} has no 'go 1.N' line")
    for candidate in (settings.go, shutil.which("go"), "/usr/local/go/bin/go"):
        if candidate and _executable(Path(candidate)):
            minor = go_minor(go_version(candidate))
            if minor is not None and minor >= want:
                return candidate
    return _fetch_toolchain(settings, want)


def go_version(go) -> str:
    try:
        return subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True,
                              timeout=QUERY_TIMEOUT_S).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _fetch_toolchain(settings, minor) -> str:
    # The Go toolchain is itself a module on the proxy (what GOTOOLCHAIN=auto downloads).
    machine = os.uname().machine
    arch = _GOARCH.get(machine)
    if arch is None:
        raise Failure(f"build step 'fetch Go toolchain' failed: no Go toolchain for {machine}; "
                      f"install Go >= 1.{minor} or set TAAS_GO")
    version = f"v0.0.1-go1.{minor}.0.linux-{arch}"
    root = settings.cache_root / "go-toolchain"
    dest = root / version
    if not _executable(dest / "bin" / "go"):
        say(f"no Go >= 1.{minor} found; fetching golang.org/toolchain@{version} from "
            f"{settings.goproxy}")
        root.mkdir(parents=True, exist_ok=True)
        archive = root / f"{version}.zip"
        _step("fetch Go toolchain", ["curl", "-fsSL", "-o", archive,
                                     f"{settings.goproxy}/golang.org/toolchain/@v/{version}.zip"],
              f"could not download golang.org/toolchain@{version}")
        unpacked = root / f"{version}.tmp"
        shutil.rmtree(unpacked, ignore_errors=True)
        unpacked.mkdir()
        _step("fetch Go toolchain", ["unzip", "-q", archive],
              f"could not unpack {archive} (is unzip installed?)", cwd=unpacked)
        shutil.rmtree(dest, ignore_errors=True)
        (unpacked / "golang.org" / f"toolchain@{version}").rename(dest)
        shutil.rmtree(unpacked)
        archive.unlink()
    return str(dest / "bin" / "go")


def _step(step, argv, failure, cwd=None):
    try:
        ok = subprocess.run([str(a) for a in argv], cwd=cwd, stdout=subprocess.DEVNULL,
                            timeout=DOWNLOAD_TIMEOUT_S).returncode == 0
    except FileNotFoundError:
        raise Failure(f"build step '{step}' failed: {argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise Failure(f"build step '{step}' did not finish within "
                      f"{DOWNLOAD_TIMEOUT_S // 60} min: {' '.join(map(str, argv))}") from None
    if not ok:
        raise Failure(f"build step '{step}' failed: {failure}")


# ----------------------------------------------------------------------------------------------
# the build

def binaries_ready(cache: Cache) -> bool:
    try:
        stamp = (cache.bin_dir / ".stamp").read_text().strip()
    except OSError:
        return False
    return stamp == _current_stamp() and all(_executable(cache.bin_dir / b) for b in BINARIES)


def build(settings) -> Path:
    """Builds the binaries, or reuses the cached ones; returns the bin folder. One build at a
    time per version: a second caller waits for the first and reuses its result."""
    cache = Cache(settings.cache_root)
    if not binaries_ready(cache):
        cache.top.mkdir(parents=True, exist_ok=True)
        with FileLock(cache.lock) as lock:
            if not lock.try_acquire():
                say(f"another taas-cluster build of {K8S_VERSION} is running; waiting for it")
                lock.acquire(OTHER_BUILD_TIMEOUT_S, f"another taas-cluster build of {K8S_VERSION}")
            if not binaries_ready(cache):
                _build_binaries(cache, find_go(settings))
    _ensure_stages(cache, settings)
    return cache.bin_dir


def _build_binaries(cache: Cache, go):
    started = time.monotonic()
    staging = cache.top / "bin.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    cache.log.write_text("")
    say(f"building Kubernetes {K8S_VERSION}, etcd and kwok with {go_version(go)} "
        f"(log: {cache.log})")
    say("step 1/2: downloading Go modules")
    if not _logged(cache, "download Go modules", [go, "mod", "download"], DOWNLOAD_TIMEOUT_S):
        print(tail(cache.log, 20), end="", file=sys.stderr)
        raise Failure("build step 'download Go modules' failed; the failing module is named "
                      "above (module@version)")
    say("step 2/2: compiling (cold: ~10 minutes on 2 idle cores, more when busy; later builds "
        "reuse the Go cache)")
    # One invocation, so the binaries share every compiled package.
    packages = tool_packages((MODULE_DIR / "go.mod").read_text())
    if not packages:
        raise Failure(f"build step 'compile' failed: {MODULE_DIR / 'go.mod'} lists no tools")
    compile_argv = [go, "build", "-p", "2", "-ldflags", version_ldflags(K8S_VERSION),
                    "-o", f"{staging}/", *packages]
    if not _logged(cache, "compile", compile_argv, COMPILE_TIMEOUT_S):
        raise _compile_failure(cache, go)
    if (staging / "server").exists():
        (staging / "server").rename(staging / "etcd")
    for binary in BINARIES:
        if not _executable(staging / binary):
            raise Failure(f"build step 'compile' produced no {binary} binary (log: {cache.log})")
    (staging / ".stamp").write_text(_current_stamp() + "\n")
    shutil.rmtree(cache.bin_dir, ignore_errors=True)
    staging.rename(cache.bin_dir)
    say(f"built in {time.monotonic() - started:.0f} s: {cache.bin_dir}")


def _logged(cache: Cache, step, argv, timeout_s) -> bool:
    """Runs a build step under `nice` in the module folder, its output appended to the log."""
    env = {**os.environ, "GOFLAGS": BUILD_GOFLAGS}
    with open(cache.log, "ab") as log:
        try:
            return subprocess.run(["nice", "-n", "10", *map(str, argv)], cwd=MODULE_DIR, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=timeout_s).returncode == 0
        except subprocess.TimeoutExpired:
            raise Failure(f"build step '{step}' did not finish within {timeout_s // 60} min "
                          f"(full log: {cache.log})") from None


def _compile_failure(cache: Cache, go) -> Failure:
    """Names the packages, and their modules, that failed to compile."""
    named = []
    for package in failed_packages(cache.log.read_text(errors="replace")):
        module = _go_query(go, ["list", "-f", "{{with .Module}}{{.Path}}@{{.Version}}{{end}}",
                                package], BUILD_GOFLAGS)
        named.append(f"{package} (module {module})" if module else package)
    print(tail(cache.log, 30), end="", file=sys.stderr)
    where = f" in package {', '.join(named)}" if named else ""
    return Failure(f"build step 'compile' failed{where} (full log: {cache.log})")


def _ensure_stages(cache: Cache, settings):
    """Writes kwok-stages.yaml and kwok's Logs CRD (kwok-logs-crd.yaml) beside the binaries."""
    if _non_empty(cache.stages) and _non_empty(cache.logs_crd):
        return
    kwok = _go_query(find_go(settings), ["list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok"],
                     "-mod=readonly")
    if not kwok:
        raise Failure("build step 'kwok stages' failed: cannot locate the sigs.k8s.io/kwok module")
    stages = []
    for stage in KWOK_STAGES:
        path = Path(kwok, "kustomize/stage", stage)
        if not path.is_file():
            raise Failure(f"build step 'kwok stages' failed: {path} is missing")
        stages.append(path.read_text() + "---\n")
    crd = Path(kwok, KWOK_LOGS_CRD)
    if not crd.is_file():
        raise Failure(f"build step 'kwok stages' failed: kwok's Logs CRD is missing in {kwok}")
    _write_atomically(cache.logs_crd, crd.read_text())
    _write_atomically(cache.stages, "".join(stages))


def _go_query(go, args, goflags) -> str:
    """The trimmed output of `go ARGS` in the module folder, or "" when it fails."""
    try:
        p = subprocess.run([go, *args], cwd=MODULE_DIR, env={**os.environ, "GOFLAGS": goflags},
                           capture_output=True, text=True, timeout=QUERY_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return ""
    return p.stdout.strip() if p.returncode == 0 else ""


def _current_stamp() -> str:
    return build_stamp((MODULE_DIR / "go.mod").read_bytes(), (MODULE_DIR / "go.sum").read_bytes())


def _write_atomically(path: Path, text):
    staging = path.with_name(f"{path.name}.tmp{os.getpid()}")
    staging.write_text(text)
    os.replace(staging, path)


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _non_empty(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False
