"""Multi-process tests of the trainer runtime through the local launcher, on 127.0.0.1.

Real PS, worker, chief and evaluator processes of the linear-regression test model
(trainer-runtime/runtime/testing) run under `taas run`; the launcher applies the TFJob restart
rules, so killing a replica exercises the same recovery as in Kubernetes.

usage: multiprocess_test.py BUILD_DIR SCENARIO
"""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

BUILD = os.path.abspath(sys.argv[1])
TAAS = os.path.join(BUILD, "launcher", "taas")
MODEL = os.path.join(BUILD, "trainer-runtime", "runtime", "linear-regression")

JOB = """
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: {name}
spec:
  tfReplicaSpecs:
{replicas}
"""

REPLICA = """    {type}:
      replicas: {count}
      restartPolicy: ExitCode
      template:
        spec:{grace}
          containers:
            - name: tensorflow
              image: taas/trainer:latest
              command: {command}
              args: {args}
"""


def job_yaml(name, types, args, command=("/opt/taas/bin/linear-regression",), grace=None):
    """`grace`: the pods' terminationGracePeriodSeconds (absent: Kubernetes' 30)."""
    grace_line = "" if grace is None else f"\n          terminationGracePeriodSeconds: {grace}"
    replicas = "".join(
        REPLICA.format(type=t, count=n, command=json.dumps(list(command)),
                       args=json.dumps(["--"] + args if args else []), grace=grace_line)
        for t, n in types)
    return JOB.format(name=name, replicas=replicas)


class Launch:
    """Runs `taas run` in the background, collecting its output lines (with every replica's lines
    on the console, --verbose, unless `verbose` is false)."""

    def __init__(self, tmp, name, types, env, args=(), flags=(), verbose=True, progress_secs=0):
        self.model_dir = os.path.join(tmp, name + "-model")
        path = os.path.join(tmp, name + ".yaml")
        with open(path, "w") as f:
            f.write(job_yaml(name, types, list(args)))
        cmd = [TAAS, "run", path, "--model-dir", self.model_dir,
               "--progress-secs", str(progress_secs)] + (["--verbose"] if verbose else [])
        base = {"TF_SAVE_CHECKPOINTS_SECS": "0", "TAAS_SAVE_CHECKPOINTS_STEPS": "50",
                "TF_SAVE_SUMMARIES_STEPS": "20", "TAAS_LOG_STEPS": "5",
                "TAAS_WAIT_TIMEOUT_SECS": "60", "TAAS_EVAL_INTERVAL_SECS": "0.2"}
        base.update(env)
        for k, v in base.items():
            cmd += ["--env", f"{k}={v}"]
        cmd += list(flags)
        self.lines = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def wait_for(self, pattern, timeout=60):
        deadline = time.time() + timeout
        regex = re.compile(pattern)
        while time.time() < deadline:
            for line in self.snapshot():
                m = regex.search(line)
                if m:
                    return m
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.05)
        self.dump()
        raise AssertionError(f"no line matching {pattern!r}")

    def pid_of(self, replica):
        pids = [int(m.group(1)) for m in
                (re.search(rf"started {replica} pid=(\d+)", l) for l in self.snapshot()) if m]
        assert pids, f"{replica} never started"
        return pids[-1]

    def finish(self, timeout=120):
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.dump()
            raise AssertionError("the launcher did not finish in time")
        self.reader.join()
        return code

    def dump(self):
        sys.stdout.write("\n".join(self.snapshot()[-200:]) + "\n")

    def count(self, pattern):
        return sum(1 for l in self.snapshot() if re.search(pattern, l))


def losses(lines, replica):
    return [float(m.group(1)) for m in
            (re.search(rf"^\[{replica}\] .*msg=training .* loss=([0-9.e+-]+)", l) for l in lines)
            if m]


def read_checkpoint(model_dir):
    """{name: [floats]} and the global step of the latest checkpoint (a safetensors file of
    float32 tensors, its step in the metadata)."""
    with open(os.path.join(model_dir, "checkpoint")) as f:
        latest = re.search(r'model_checkpoint_path: "([^"]+)"', f.read()).group(1)
    with open(os.path.join(model_dir, latest) + ".safetensors", "rb") as f:
        blob = f.read()
    length = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + length])
    data = blob[8 + length:]
    out = {}
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        begin, end = tensor["data_offsets"]
        out[name] = list(struct.unpack(f"<{(end - begin) // 4}f", data[begin:end]))
    return int(header["__metadata__"]["global_step"]), out


def check_trained(run, max_steps):
    code = run.finish()
    lines = run.snapshot()
    if code != 0:
        run.dump()
    assert code == 0, f"job exit code {code}"
    # The launcher's last word on the job is the console's last line: the chief's final step and
    # final metrics, from the report it left (TAAS_TERMINATION_MESSAGE_PATH).
    done = (rf"^\[taas\] job linear succeeded at step {max_steps}"
            rf"(: final .*|; its model reported no final metrics .*)"
            rf" \(model dir {re.escape(run.model_dir)}\)$")
    assert re.search(done, lines[-1]), f"the last line is not the job's result: {lines[-1]}"
    trained = losses(lines, "linear-worker-[01]")
    assert len(trained) >= 3, trained
    assert trained[-1] < 0.05 * trained[0], f"loss did not fall: {trained[0]} -> {trained[-1]}"
    step, values = read_checkpoint(run.model_dir)
    assert step == max_steps, step
    assert abs(values["linear/b"][0] - 2.0) < 0.05, values["linear/b"]
    files = os.listdir(run.model_dir)
    assert any(f.startswith("events.out.tfevents.") for f in files), files
    assert "TRAINING_DONE" in files, files
    return lines


def evaluated_steps(lines):
    """The global steps of the checkpoints the evaluator scored, in order."""
    return [int(m.group(1)) for m in
            (re.search(r"^\[linear-evaluator-0\] .*evaluated checkpoint.* global_step=(\d+)", l)
             for l in lines) if m]


def check_final_checkpoint_evaluated(run, lines, max_steps):
    """The job waited for its evaluator (tfjob::StatusOptions::evaluator_grace): it scored the
    final checkpoint and exited 0 before the job succeeded, rather than being stopped."""
    scored = evaluated_steps(lines)
    assert scored and scored[-1] == max_steps, scored
    assert run.count(r"^\[taas\] linear-evaluator-0 exited with code 0 ") == 1, run.dump()
    assert run.count(r"^\[taas\] training succeeded; the job waits for its evaluator") <= 1


def nice_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[16])  # field 19 of proc(5); the first after the name is field 3


def scenario_async(tmp):
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2), ("Evaluator", 1)],
                 {"TF_MAX_STEPS": "300", "TAAS_EVALUATOR_NICE": "10", "TAAS_EVAL_ON_CHIEF": "end"},
                 args=["--step_ms=10"])
    # TAAS_EVALUATOR_NICE lowers the evaluator's priority alone (never above what it was started
    # with): on shared cores evaluation takes only what training leaves.
    ours = nice_of(os.getpid())
    evaluator_nice = max(10, ours)
    run.wait_for(rf"^\[linear-evaluator-0\] .*msg=starting .*nice={evaluator_nice}\b")
    assert nice_of(run.pid_of("linear-evaluator-0")) == evaluator_nice
    assert nice_of(run.pid_of("linear-worker-0")) == ours
    lines = check_trained(run, 300)
    assert run.count(r"^\[linear-worker-1\] .*msg=training") > 0
    # The console's last line names the chief's final evaluation (TAAS_EVAL_ON_CHIEF=end), the
    # job's result.
    assert re.search(r"^\[taas\] job linear succeeded at step 300: final accuracy \d\.\d{4}, "
                     r"loss \S+ \(model dir ", lines[-1]), lines[-1]
    # The evaluator followed the checkpoints, the final one included, and wrote its own
    # summaries under eval/.
    check_final_checkpoint_evaluated(run, lines, 300)
    assert os.listdir(os.path.join(run.model_dir, "eval"))
    ckpts = [f for f in os.listdir(run.model_dir) if f.endswith(".safetensors")]
    assert 1 <= len(ckpts) <= 5, ckpts  # keep-K (default 5)
    del lines


def scenario_eval_fails(tmp):
    """A chief whose final evaluation returns an error fails the job (exit 3), and the console's
    last line names the error, from the report the chief left, rather than "succeeded with no
    final metrics"."""
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)],
                 {"TF_MAX_STEPS": "50", "TAAS_EVAL_ON_CHIEF": "end"},
                 args=["--fail_evaluate=no held-out set in /data/test (give --test_dir)"])
    code = run.finish()
    lines = run.snapshot()
    assert code == 1, (code, run.dump())
    assert run.count(r"^\[taas\] linear-worker-0 exited with code 3 ") == 1, run.dump()
    assert re.search(r"^\[taas\] job linear failed at step 50: evaluate\(\) failed: no held-out "
                     r"set in /data/test \(give --test_dir\) \(model dir ", lines[-1]), lines[-1]


def scenario_sync(tmp):
    run = Launch(tmp, "linear", [("PS", 2), ("Worker", 2)],
                 {"TF_MAX_STEPS": "200", "TF_SYNC": "true", "TAAS_PARTITION_BYTES": "16"})
    lines = check_trained(run, 200)
    # Sync with all workers aggregating: every worker ran exactly max_steps steps, none dropped.
    for w in ("linear-worker-0", "linear-worker-1"):
        assert any(re.search(rf"^\[{w}\] .* step=200 global_step=200 .*dropped_pushes=0", l)
                   for l in lines), w


def scenario_sync_equals_single(tmp):
    """2 sync workers == 1 process with both sub-batches per step (same effective batch)."""
    steps = "60"
    # w is split over both lanes of the PS (TAAS_PS_LANES=2): each lane aggregates its half.
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)],
                 {"TF_MAX_STEPS": steps, "TF_SYNC": "true", "TAAS_PARTITION_BYTES": "16"},
                 args=["--optimizer=momentum"])
    assert run.finish() == 0
    _, dist = read_checkpoint(run.model_dir)
    single_dir = os.path.join(tmp, "single")
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    out = subprocess.run([MODEL, f"--max_steps={steps}", f"--model_dir={single_dir}",
                          "--", "--shards=2", "--optimizer=momentum"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    _, single = read_checkpoint(single_dir)
    for name in ("linear/w", "linear/b"):
        for a, b in zip(dist[name], single[name]):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (name, dist[name], single[name])
    assert dist["linear/w"] != [0.0] * 8


def scenario_clipped(tmp):
    """Clipping by global norm and per-variable weight decay on both strategies: a sync PS job of
    one worker (clipped on the worker before the push; w partitioned over both lanes, so the PS
    decays it by its variable's name, not its shards') equals one all-reduce process (clipped
    after the average), and differs from the same run unclipped."""
    steps = "40"
    args = ["--optimizer=adamw", "--clip=0.5", "--weight_decay=0.1", "--exclude=linear/b"]
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 1)],
                 {"TF_MAX_STEPS": steps, "TF_SYNC": "true", "TAAS_PARTITION_BYTES": "16"},
                 args=args)
    assert run.finish() == 0
    _, dist = read_checkpoint(run.model_dir)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}

    def single(name, model_args):
        model_dir = os.path.join(tmp, name)
        out = subprocess.run([MODEL, "--strategy=collective", f"--max_steps={steps}",
                              f"--model_dir={model_dir}", "--"] + model_args,
                             env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        return read_checkpoint(model_dir)[1]

    clipped = single("single", args)
    for name in ("linear/w", "linear/b"):
        for a, b in zip(dist[name], clipped[name]):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (name, dist[name], clipped[name])
    unclipped = single("unclipped", args[:1] + args[2:])
    assert any(abs(a - b) > 1e-3 for a, b in zip(unclipped["linear/w"], clipped["linear/w"])), \
        (unclipped["linear/w"], clipped["linear/w"])


def scenario_kill_worker(tmp):
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)],
                 {"TF_MAX_STEPS": "400", "TF_SYNC": "true"}, args=["--step_ms=10"])
    run.wait_for(r"^\[linear-worker-1\] .*msg=training .*global_step=([1-9]\d\d)")
    os.kill(run.pid_of("linear-worker-1"), signal.SIGKILL)
    run.wait_for(r"linear-worker-1 exited with code 137 \(restartPolicy ExitCode: restart\)")
    run.wait_for(r"started linear-worker-1 pid=\d+ .*\(restart 1\)")
    check_trained(run, 400)
    # The restarted worker rejoined and trained again.
    lines = run.snapshot()
    restart_at = max(i for i, l in enumerate(lines) if "started linear-worker-1" in l)
    assert any(re.search(r"^\[linear-worker-1\] .*msg=training", l)
               for l in lines[restart_at:]), "restarted worker never trained"


def scenario_kill_ps(tmp):
    # w is split over both lanes of the PS: the restarted PS comes back empty in both.
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)],
                 {"TF_MAX_STEPS": "800", "TAAS_PARTITION_BYTES": "16"}, args=["--step_ms=10"])
    run.wait_for(r"^\[linear-worker-0\] .*saved checkpoint.*global_step=(1|2)\d\d")
    os.kill(run.pid_of("linear-ps-0"), signal.SIGKILL)
    run.wait_for(r"linear-ps-0 exited with code 137")
    # The restarted PS refuses to serve until the chief restores it from the checkpoint.
    run.wait_for(r"^\[linear-worker-0\] .*lost its variables.*restoring", timeout=60)
    run.wait_for(r"^\[linear-worker-0\] .*restoring variables from checkpoint.*global_step=\d+")
    check_trained(run, 800)
    lines = run.snapshot()
    assert any("holds no variables yet" in l for l in lines), "no refusal seen"


def scenario_kill_chief(tmp):
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)],
                 {"TF_MAX_STEPS": "600"}, args=["--step_ms=10"])
    m = run.wait_for(r"^\[linear-worker-0\] .*saved checkpoint.*global_step=(\d+)")
    os.kill(run.pid_of("linear-worker-0"), signal.SIGKILL)
    run.wait_for(r"linear-worker-0 exited with code 137")
    m = run.wait_for(r"^\[linear-worker-0\] .*restoring variables from checkpoint.*"
                     r"global_step=(\d+)")
    assert int(m.group(1)) >= 50
    check_trained(run, 600)


def scenario_stall(tmp):
    """Issue 37: a PS frozen (SIGSTOP) for FREEZE_SECS with a stall threshold of STALL_SECS: the
    workers log whom they wait for and since when, the progress line, the chief's metrics page
    and the UI's job say so, and the job completes once the PS resumes (SIGCONT)."""
    import urllib.request
    stall_secs, freeze_secs = 2, 8  # the lines come at 2, 4 and 8 s of the freeze
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)],
                 {"TF_MAX_STEPS": "600", "TAAS_STALL_SECS": str(stall_secs)},
                 args=["--step_ms=10"], progress_secs=1, flags=["--ui-port", "0"])
    ui = run.wait_for(r"^\[taas\] UI: (http://127\.0\.0\.1:\d+)/#token=([A-Za-z0-9]+)$")
    chief_metrics = int(run.wait_for(r"started linear-worker-0 .*metrics_port=(\d+)").group(1))
    run.wait_for(r"^\[linear-worker-0\] .*msg=training .*global_step=([1-9]\d\d)")
    ps = run.pid_of("linear-ps-0")
    frozen_at = time.time()
    os.kill(ps, signal.SIGSTOP)
    try:
        # The progress line says it instead of the rate, within a second or two of the threshold.
        line = run.wait_for(r"^\[taas\] step \d+/600 .*  (stalled (\d+)s, waiting on ps-0)  ",
                            timeout=freeze_secs)
        assert "examples/s" not in line.string and "left" not in line.string, line.string
        shown = time.time() - frozen_at
        run.wait_for(r"^\[linear-worker-[01]\] .*level=warning msg=\"waiting on a peer\" "
                     r".*peer=ps-0 since=\d{4}-\d\d-\d\dT[\d:]+Z waited_secs=", timeout=2)
        # The metric: the stall now, whom it waits for, and the stalled seconds so far.
        page = urllib.request.urlopen(f"http://127.0.0.1:{chief_metrics}/metrics",
                                      timeout=5).read().decode()
        now = re.search(r'^taas_stall_seconds\{peer="ps-0"\} ([\d.]+)$', page, re.M)
        total = re.search(r"^taas_stalled_seconds_total ([\d.]+)$", page, re.M)
        assert now and float(now.group(1)) >= stall_secs, page
        assert re.search(r"^# TYPE taas_stalled_seconds_total counter$", page, re.M), page
        assert total and float(total.group(1)) >= float(now.group(1)), page
        # The UI's job (its progress: status.progress merged with its own scrape of the replicas).
        def ui_stall():
            req = urllib.request.Request(ui.group(1) + "/api/v1/namespaces/default/tfjobs/linear",
                                         headers={"Authorization": "Bearer " + ui.group(2)})
            progress = json.loads(urllib.request.urlopen(req, timeout=5).read())["job"]["progress"]
            return progress if progress and progress.get("stall") else None
        deadline = frozen_at + freeze_secs
        progress = None
        while progress is None and time.time() < deadline:
            progress = ui_stall()
            time.sleep(0.2)
        assert progress, "the UI never showed the stall"
        assert re.fullmatch(r"stalled \d+s, waiting on ps-0", progress["stall"]), progress
        assert progress["examplesPerSecond"] is None and progress["etaSeconds"] is None, progress
        time.sleep(max(0.0, deadline - time.time()))
    finally:
        os.kill(ps, signal.SIGCONT)
    run.wait_for(r"^\[linear-worker-[01]\] .*msg=\"the peer answered: the stall is over\" "
                 r".*peer=ps-0 waited_secs=([\d.]+)")
    check_trained(run, 600)
    lines = run.snapshot()
    # Again with backoff, not on every tick: at most the 2, 4 and 8 s lines per worker.
    for w in ("linear-worker-0", "linear-worker-1"):
        n = sum(1 for l in lines if l.startswith(f"[{w}]") and "waiting on a peer" in l)
        assert 1 <= n <= 3, (w, n)
    # After the PS resumed the line shows the rate again.
    stalled_at = max(i for i, l in enumerate(lines) if l.startswith("[taas] step") and "stalled" in l)
    after = [l for l in lines[stalled_at + 1:] if l.startswith("[taas] step")]
    assert all("stalled" not in l for l in after), after
    print(f"stall shown on the progress line {shown:.1f} s into a {freeze_secs} s freeze "
          f"(threshold {stall_secs} s)")


def scenario_bad_config(tmp):
    env = dict(os.environ)
    env["TF_CONFIG"] = '{"cluster":{"ps":["nohost"],"worker":["127.0.0.1:1"]},' \
                       '"task":{"type":"worker","index":0}}'
    out = subprocess.run([MODEL], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out
    assert "TF_CONFIG.cluster.ps[0]" in out.stdout, out.stdout
    env["TF_CONFIG"] = '{"cluster":{"ps":["127.0.0.1:1"],"worker":["127.0.0.1:2"]},' \
                       '"task":{"type":"worker","index":5}}'
    out = subprocess.run([MODEL], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "TF_CONFIG.task.index" in out.stdout, out.stdout


def token_env(tmp, chief):
    """The job's token files for a replica started without the launcher (what `taas run` and the
    operator give every replica; the chief token only to the chief and the PS)."""
    env = {}
    for name, var in (("job-token", "TAAS_JOB_TOKEN_FILE"), ("chief-token", "TAAS_CHIEF_TOKEN_FILE")):
        if name == "chief-token" and not chief:
            continue
        path = os.path.join(tmp, name)
        if not os.path.exists(path):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
                f.write(os.urandom(32).hex() + "\n")
        env[var] = path
    return env


def scenario_unreachable_ps(tmp):
    env = dict(os.environ)
    env.update(token_env(tmp, chief=True))
    env["TF_CONFIG"] = '{"cluster":{"ps":["127.0.0.1:9"],"worker":["127.0.0.1:10"]},' \
                       '"task":{"type":"worker","index":0}}'
    env["TAAS_WAIT_TIMEOUT_SECS"] = "2"
    env["TF_LOGDIR"] = os.path.join(tmp, "m")
    start = time.time()
    out = subprocess.run([MODEL], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 150, (out.returncode, out.stdout)  # kExitTransient
    assert "parameter servers unreachable" in out.stdout and "127.0.0.1:9" in out.stdout, out
    assert out.stdout.count("waiting for parameter servers") == 1, out.stdout  # one line
    assert time.time() - start < 30


def scenario_warm_start(tmp):
    """The init fn runs only when the job has no checkpoint; an own checkpoint wins."""
    model_dir = os.path.join(tmp, "model")
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}

    def run(steps, bias):
        out = subprocess.run([MODEL, f"--max_steps={steps}", f"--model_dir={model_dir}",
                              "--", "--lr=0", f"--init_bias={bias}"],
                             env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    first = run(1, 5)
    assert "the init fn ran (warm start)" in first and "msg=\"warm start\"" in first, first
    assert read_checkpoint(model_dir)[1]["linear/b"] == [5.0]
    second = run(2, 7)
    assert "restoring variables from checkpoint" in second, second
    assert "it wins over the init fn" in second and "msg=\"warm start\"" not in second, second
    step, values = read_checkpoint(model_dir)
    assert step == 2 and values["linear/b"] == [5.0], (step, values)


def free_ports(n):
    import socket
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def scenario_sync_peer_lost(tmp):
    """Without a launcher to restart it, a lost sync worker makes the chief give up (no hang)."""
    ps, w0, w1 = free_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{w0}", f"127.0.0.1:{w1}"]}
    procs = {}
    for kind, index in (("ps", 0), ("worker", 0), ("worker", 1)):
        env = dict(os.environ)
        env.update(token_env(tmp, chief=(kind, index) != ("worker", 1)))
        env.update({"TF_CONFIG": json.dumps({"cluster": cluster,
                                             "task": {"type": kind, "index": index}}),
                    "TF_SYNC": "true", "TF_MAX_STEPS": "100000", "TAAS_WAIT_TIMEOUT_SECS": "2",
                    "TF_LOGDIR": os.path.join(tmp, "model"), "TAAS_LOG_STEPS": "50"})
        procs[(kind, index)] = subprocess.Popen([MODEL, "--", "--step_ms=5"], env=env,
                                                stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT, text=True)
    try:
        chief = procs[("worker", 0)]
        lines = []
        while not any("global_step=100" in l for l in lines):
            line = chief.stdout.readline()
            assert line, "\n".join(lines)
            lines.append(line)
        procs[("worker", 1)].kill()
        start = time.time()
        code = chief.wait(timeout=60)
        rest = chief.stdout.read()
        assert code == 150, (code, rest)
        assert "gave up waiting" in rest, rest
        assert time.time() - start < 30
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()


def scenario_fenced(tmp):
    """Issue 37: a replica cut off from its job (SIGSTOP, as a node partitioned away leaves its
    pod) is replaced by a newer incarnation (TAAS_REPLICA_INCARNATION, as the operator numbers the
    pod it creates); when the old process comes back, the PS refuses it and it exits fenced
    instead of training beside its replacement, while the job completes."""
    ps, w0, w1 = free_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{w0}", f"127.0.0.1:{w1}"]}
    procs, lines, readers = {}, {}, []

    def start(key, incarnation):
        kind, index = key[0], key[1]
        env = dict(os.environ)
        env.update(token_env(tmp, chief=(kind, index) != ("worker", 1)))
        env.update({"TF_CONFIG": json.dumps({"cluster": cluster,
                                             "task": {"type": kind, "index": index}}),
                    "TF_MAX_STEPS": "2000", "TAAS_WAIT_TIMEOUT_SECS": "30",
                    "TAAS_REPLICA_INCARNATION": str(incarnation),
                    "TF_LOGDIR": os.path.join(tmp, "model"), "TAAS_LOG_STEPS": "20"})
        proc = subprocess.Popen([MODEL, "--", "--step_ms=5"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        procs[key], lines[key] = proc, []
        reader = threading.Thread(target=lambda: [lines[key].append(l.rstrip("\n"))
                                                  for l in proc.stdout], daemon=True)
        reader.start()
        readers.append(reader)

    def wait_line(key, pattern, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for line in list(lines[key]):
                if re.search(pattern, line):
                    return line
            time.sleep(0.05)
        raise AssertionError(f"{key}: no line matching {pattern!r}:\n" + "\n".join(lines[key]))

    try:
        for key, incarnation in ((("ps", 0), 1), (("worker", 0), 1), (("worker", 1, "old"), 1)):
            start(key, incarnation)
        old = ("worker", 1, "old")
        wait_line(old, r"msg=training .*global_step=")
        procs[old].send_signal(signal.SIGSTOP)  # cut off: its node left the cluster
        new = ("worker", 1, "new")
        start(new, 2)  # the operator's replacement, one incarnation up
        wait_line(new, r"msg=training .*global_step=")
        procs[old].send_signal(signal.SIGCONT)  # the node comes back
        code = procs[old].wait(timeout=30)
        wait_line(old, r"exiting: fenced")
        said = [l for l in lines[old] if "exiting: fenced" in l]
        assert code == 4, (code, "\n".join(lines[old][-20:]))  # kExitFenced
        assert len(said) == 1 and "exit_code=4" in said[0], said
        assert "worker-1 incarnation 1 is fenced: incarnation 2 of worker-1 joined since" \
            in said[0], said
        # The old process trained no step after it came back (its first call was refused).
        resumed_at = max(i for i, l in enumerate(lines[old]) if "global_step=" in l) \
            if any("global_step=" in l for l in lines[old]) else -1
        assert resumed_at < lines[old].index(said[0])
        for key in (("worker", 0), new, ("ps", 0)):
            assert procs[key].wait(timeout=90) == 0, (key, "\n".join(lines[key][-30:]))
        wait_line(("ps", 0), r"refused an older incarnation of a replica")
        assert any(re.search(r"msg=training .*global_step=(19\d\d|2000)", l)
                   for l in lines[("worker", 0)] + lines[new]), "the job did not reach 2000"
        print("fenced: the old worker-1 exited 4; the job completed at step 2000")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
            p.wait()


def scenario_sigterm_startup(tmp):
    """Issue 37: SIGTERM while a replica still waits for its peers at start-up (the parameter
    servers; the all-reduce ring's neighbours) ends the wait at once, not at its deadline: nothing
    was trained, so nothing is saved, and the replica exits with the transient code."""
    for name, cluster in (("ps", {"ps": ["127.0.0.1:%d" % free_ports(1)[0]],
                                  "worker": ["127.0.0.1:%d" % free_ports(1)[0]]}),
                          ("ring", {"worker": ["127.0.0.1:%d" % p for p in free_ports(2)]})):
        model_dir = os.path.join(tmp, name + "-model")
        env = dict(os.environ)
        env.update(token_env(tmp, chief=True))
        env.update({"TF_CONFIG": json.dumps({"cluster": cluster,
                                             "task": {"type": "worker", "index": 0}}),
                    "TAAS_WAIT_TIMEOUT_SECS": "60", "TF_LOGDIR": model_dir})
        proc = subprocess.Popen([MODEL], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        lines = []
        reader = threading.Thread(target=lambda: [lines.append(l.rstrip("\n"))
                                                  for l in proc.stdout], daemon=True)
        reader.start()
        waiting = "waiting for parameter servers" if name == "ps" else \
            "waiting for the next rank of the all-reduce ring"
        deadline = time.time() + 30
        while not any(waiting in l for l in list(lines)) and time.time() < deadline:
            time.sleep(0.05)
        assert any(waiting in l for l in lines), (name, "\n".join(lines))
        time.sleep(0.5)  # well into the wait
        signalled = time.time()
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError(f"{name}: SIGTERM did not end the start-up wait")
        took = time.time() - signalled
        reader.join()
        said = [l for l in lines if "exiting: terminated by SIGTERM" in l]
        assert code == 150, (name, code, "\n".join(lines))
        assert len(said) == 1 and "nothing to save yet" in said[0] and "exit_code=150" in said[0], \
            (name, said, "\n".join(lines))
        assert took < 2, (name, took)
        assert not os.path.exists(os.path.join(model_dir, "checkpoint")), name
        print(f"{name}: SIGTERM during the start-up wait ended it {took:.2f} s later, exit 150")


def scenario_restart_after_done(tmp):
    """A replica started again after its job finished (the chief killed between its last steps and
    its exit, restarted under ExitCode) ends at once: the parameter servers are gone for good."""
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 1)], {"TF_MAX_STEPS": "60"})
    assert run.finish() == 0, run.dump()
    env = dict(os.environ)
    env.update(token_env(tmp, chief=True))
    env["TF_CONFIG"] = '{"cluster":{"ps":["127.0.0.1:9"],"worker":["127.0.0.1:10"]},' \
                       '"task":{"type":"worker","index":0}}'
    env["TAAS_WAIT_TIMEOUT_SECS"] = "2"
    env["TF_LOGDIR"] = run.model_dir
    env["TF_MAX_STEPS"] = "60"
    again = subprocess.run([MODEL], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, (again.returncode, again.stdout)
    assert "training already finished: nothing to do" in again.stdout, again.stdout
    assert "waiting for parameter servers" not in again.stdout, again.stdout
    # More steps than were trained: it resumes, so it needs the parameter servers.
    env["TF_MAX_STEPS"] = "120"
    more = subprocess.run([MODEL], env=env, capture_output=True, text=True, timeout=60)
    assert more.returncode == 150 and "parameter servers unreachable" in more.stdout, more.stdout


def scenario_bad_manifest(tmp):
    path = os.path.join(tmp, "bad.yaml")
    with open(path, "w") as f:
        f.write(job_yaml("linear", [("Worker", -1)], []))
    out = subprocess.run([TAAS, "run", path], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out
    assert "spec.tfReplicaSpecs.Worker.replicas" in out.stderr + out.stdout, out

    # A command whose executable is nowhere: the error says where the launcher looked, and the
    # job leaves no model dir behind.
    renamed = job_yaml("renamed", [("Worker", 1)], []).replace(
        "/opt/taas/bin/linear-regression", "/opt/taas/bin/renamed-model")
    with open(path, "w") as f:
        f.write(renamed)
    model_dir = os.path.join(tmp, "never-made")
    out = subprocess.run([TAAS, "run", path, "--model-dir", model_dir, "--no-ui"],
                         capture_output=True, text=True, timeout=30)
    said = out.stderr + out.stdout
    assert out.returncode == 2, out
    assert "no executable named renamed-model in" in said, said
    assert f"the launcher's build tree {BUILD} (and below)" in said, said
    assert "--bin-dir DIR or TAAS_BIN_PATH=DIR[:DIR...]" in said, said
    assert not os.path.exists(model_dir), f"{model_dir} made for a job that could not start"

    # The same job runs once TAAS_BIN_PATH names a folder holding the executable.
    bins = os.path.join(tmp, "bins")
    os.makedirs(bins)
    os.symlink(MODEL, os.path.join(bins, "renamed-model"))
    env = dict(os.environ, TAAS_BIN_PATH=bins)
    out = subprocess.run([TAAS, "run", path, "--model-dir", model_dir, "--no-ui",
                          "--env", "TF_MAX_STEPS=20"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out
    assert f"using {bins}/renamed-model for /opt/taas/bin/renamed-model" in out.stdout, out


def scenario_console(tmp):
    """Without --verbose the console holds the launcher's own lines and a progress line per
    interval; each replica's output is in <model dir>/logs/<replica>.log, and a replica that fails
    shows its last lines there too."""
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)], {"TF_MAX_STEPS": "20000"},
                 verbose=False, progress_secs=0.3)
    code = run.finish()
    lines = run.snapshot()
    assert code == 0, run.dump()
    logs = os.path.join(run.model_dir, "logs")
    assert f"[taas] each replica's output: {logs}/<replica>.log (--verbose shows it here too)" \
        in lines, run.dump()
    assert not [l for l in lines if l.startswith("[linear-")], run.dump()
    assert any(re.match(r"^\[taas\] step \d+/20000 \(\d+%\)  (about \S+ left  )?loss \S+  \d+ examples/s", l)
               for l in lines), run.dump()
    # The last line of the view holds the final step the chief recorded.
    final = [l for l in lines if l.startswith("[taas] step ")][-1]
    assert re.match(r"^\[taas\] step 20000/20000 \(100%\)  loss .*  0/3 replicas running$", final), \
        run.dump()
    for replica in ("linear-ps-0", "linear-worker-0", "linear-worker-1"):
        with open(os.path.join(logs, replica + ".log")) as f:
            text = f.read()
        assert "msg=training" in text or replica == "linear-ps-0", (replica, text[-2000:])
        assert text.endswith("\n") and "msg=starting" in text, (replica, text[-2000:])

    broken = Launch(tmp, "broken", [("Worker", 1)], {"TAAS_STRATEGY": "bogus"}, verbose=False)
    assert broken.finish() == 1, broken.dump()
    broken.wait_for(r"^\[taas\] the last lines of broken-worker-0 \(all of them: "
                    + re.escape(os.path.join(broken.model_dir, "logs", "broken-worker-0.log")))
    broken.wait_for(r"^\[broken-worker-0\] .*TAAS_STRATEGY")


# --- What a replica leaves running ---------------------------------------------------------------

def proc_stat(pid):
    """(state, process group) of a process, None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[2])


def runs(pid):
    """Whether a process runs (a zombie has ended: it holds nothing)."""
    stat = proc_stat(pid)
    return stat is not None and stat[0] not in "ZX"


def group_runs(group):
    return any(runs(int(p)) for p in os.listdir("/proc")
               if p.isdigit() and (proc_stat(int(p)) or ("", 0))[1] == group)


class ShellJob:
    """`taas run` of one Worker running `script` under /bin/sh (no UI, no progress view); the
    script's background child writes its pid to `self.pidfile`."""

    def __init__(self, tmp, name, script, grace=None):
        self.pidfile = os.path.join(tmp, name + ".pid")
        path = os.path.join(tmp, name + ".yaml")
        with open(path, "w") as f:
            f.write(job_yaml(name, [("Worker", 1)], [],
                             command=("/bin/sh", "-c", script.format(pidfile=self.pidfile)),
                             grace=grace))
        self.proc = subprocess.Popen(
            [TAAS, "run", path, "--no-ui", "--progress-secs", "0",
             "--model-dir", os.path.join(tmp, name + "-model")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def child(self, timeout=30):
        """The background child's pid, once the script wrote it."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with open(self.pidfile) as f:
                    text = f.read()
                if text.endswith("\n"):
                    return int(text)
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"no pid in {self.pidfile}")

    def finish(self, timeout=60):
        out, _ = self.proc.communicate(timeout=timeout)
        replica = int(re.search(r"started \S+-worker-0 pid=(\d+)", out).group(1))
        return self.proc.returncode, out, replica


def check_nothing_left(child, replica, out):
    """The replica's background child and every process of the replica's group are gone; ends
    the child if not, so that a failed check leaves nothing behind either."""
    left = runs(child)
    if left:
        os.kill(child, signal.SIGKILL)
    assert not left, f"the replica's background child {child} outlived `taas run`:\n{out}"
    assert not group_runs(replica), f"a process of the replica's group {replica} is left:\n{out}"


def scenario_leftovers(tmp):
    """A replica's end takes what it left running with it, as a container's does, whether the job
    succeeds or fails: `sleep 120 &` is gone when `taas run` returns."""
    for name, code in (("leftovers-ok", 0), ("leftovers-fail", 1)):
        job = ShellJob(tmp, name, "sleep 120 & echo $! > {pidfile}; exit " + str(code))
        child = job.child()
        returncode, out, replica = job.finish()
        check_nothing_left(child, replica, out)
        assert returncode == code, (returncode, out)
        assert f"{name}-worker-0 exited with code {code}" in out, out


def scenario_interrupted(tmp):
    """SIGTERM ends `taas run` with 143, SIGINT (Ctrl-C) with 130, as a shell reports a process
    that either signal ended; every process of the replicas is gone by then, a background child
    that ignores SIGTERM too (SIGKILL after the pod's grace, terminationGracePeriodSeconds)."""
    grace = 2
    for name, sig, script in (
            ("term", signal.SIGTERM, "sleep 120 & echo $! > {pidfile}; wait"),
            ("int", signal.SIGINT, "trap '' TERM; sleep 120 & echo $! > {pidfile}; wait")):
        job = ShellJob(tmp, name, script, grace=grace)
        child = job.child()
        signalled = time.time()
        job.proc.send_signal(sig)
        returncode, out, replica = job.finish()
        took = time.time() - signalled
        check_nothing_left(child, replica, out)
        assert returncode == 128 + sig, (returncode, out)
        said = f"[taas] interrupted by {signal.Signals(sig).name}: stopping every replica"
        assert said in out, out
        if name == "int":  # the shell ignores SIGTERM: killed once its grace is over
            assert f"[taas] {name}-worker-0 killed: its grace of {grace} s is over" in out, out
            assert grace <= took < grace + 5, took


def sigterm_resume(tmp, types, sync=False):
    """Issue 37: SIGTERM to the whole job under `taas run` (as Kueue's preemption or a drain ends
    every pod). No periodic checkpoint (both periods 0): the chief saves the job's state at the
    step in flight, every replica exits with the transient code, and a second `taas run` with the
    same --model-dir resumes from that step, re-doing at most one log interval's steps."""
    log_steps, workers = 5, dict(types)["Worker"]
    env = {"TF_MAX_STEPS": "1500", "TF_SAVE_CHECKPOINTS_SECS": "0",
           "TAAS_SAVE_CHECKPOINTS_STEPS": "0", "TAAS_LOG_STEPS": str(log_steps),
           "TF_SYNC": str(sync).lower()}
    replicas = [f"linear-{t.lower()}-{i}" for t, n in types for i in range(n)]
    run = Launch(tmp, "linear", types, env, args=["--step_ms=10"])
    run.wait_for(r"^\[linear-worker-0\] .*msg=training .*global_step=([3-9]\d\d)")
    assert not os.path.exists(os.path.join(run.model_dir, "checkpoint")), "a periodic checkpoint"
    signalled = time.time()
    run.proc.send_signal(signal.SIGTERM)
    code = run.finish(timeout=40)
    took = time.time() - signalled
    lines = run.snapshot()
    assert code == 128 + signal.SIGTERM, (code, run.dump())
    assert re.fullmatch(r"\[taas\] job linear interrupted; to resume it from its last checkpoint: "
                        rf"taas run \S+linear\.yaml --model-dir {re.escape(run.model_dir)}",
                        lines[-1]), lines[-1]
    # Every replica ended on the signal with the transient code, within its grace.
    for replica in replicas:
        assert run.count(rf"^\[{replica}\] .*level=warning msg=\"exiting: terminated by SIGTERM\" "
                         rf".*exit_code=150 transient=true") == 1, (replica, run.dump())
        assert run.count(rf"^\[taas\] {replica} exited with code 150 after \d+ ms of its 30 s "
                         rf"grace$") == 1, (replica, run.dump())
    saved = run.wait_for(r"^\[linear-worker-0\] .*msg=\"checkpoint on termination saved\" "
                         r".*global_step=(\d+) save_secs=([\d.e-]+) since_signal_secs=([\d.e-]+)")
    step = int(saved.group(1))
    if "PS" in dict(types):
        assert run.count(r"^\[linear-ps-0\] .*msg=\"terminating: done waiting\" "
                         r".*outcome=\"the chief saved the job's state\"") == 1, run.dump()
        # The job's step when it ended: the PS's, after the workers' last pushes.
        ended = int(run.wait_for(r"^\[linear-ps-0\] .*msg=\"terminating: done waiting\" "
                                 r".*global_step=(\d+)").group(1))
    else:  # all-reduce: every replica stops after the same step
        ended = max(int(m.group(1)) for m in (re.search(
            r"^\[linear-worker-\d\] .*msg=\"terminating: the step in flight is done\" "
            r".*global_step=(\d+)", l) for l in lines) if m)
    checkpoint_step, _ = read_checkpoint(run.model_dir)
    assert checkpoint_step == step, (checkpoint_step, step)
    redone = ended - step
    assert 0 <= redone <= log_steps * workers, (ended, step)

    again = Launch(tmp, "linear", types, env, args=["--step_ms=1"])
    again.wait_for(rf"^\[linear-worker-0\] .*restoring variables from checkpoint.* global_step={step}\b")
    first = int(again.wait_for(r"^\[linear-worker-[01]\] .*msg=training .*global_step=(\d+)")
                .group(1))
    assert step < first <= step + 2 * log_steps * workers, (step, first)
    assert again.finish() == 0, again.dump()
    resumed = again.snapshot()
    assert re.search(r"^\[taas\] job linear succeeded at step 1500", resumed[-1]), resumed[-1]
    assert read_checkpoint(again.model_dir)[0] == 1500
    # Trained values came back, not the initial ones: the resumed loss starts where it ended.
    before, after = losses(lines, "linear-worker-[01]"), losses(resumed, "linear-worker-[01]")
    assert after[0] < 0.05 * before[0], (before[0], after[0])
    print(f"SIGTERM at global step ~{ended}: checkpoint at {step} saved in "
          f"{float(saved.group(2)):.3f} s ({float(saved.group(3)):.3f} s after the signal), "
          f"taas run ended {took:.1f} s after it; steps re-done on resume: {redone}")


def scenario_sigterm_resume(tmp):
    sigterm_resume(tmp, [("PS", 1), ("Worker", 2), ("Evaluator", 1)])


def scenario_sync_sigterm_resume(tmp):
    """Synchronous: a worker trains on after its signal until the PS ends, so the chief's step
    in flight never waits for a worker that left."""
    sigterm_resume(tmp, [("PS", 1), ("Worker", 2)], sync=True)


def scenario_allreduce_sigterm_resume(tmp):
    sigterm_resume(tmp, [("Worker", 2)])


def scenario_plain_command(tmp):
    """The final-metrics warning is for taas trainers only: a job whose replica runs a plain
    command succeeds without it, while a trainer that started (its runtime creates the termination
    message file) and ended without a report still warns."""
    job = ShellJob(tmp, "plain", "exit 0")
    returncode, out, _ = job.finish()
    assert returncode == 0, (returncode, out)
    assert "[taas] job plain succeeded" in out, out
    assert "final metrics are unknown" not in out, out

    # The trainer under a shell that kills it once it started and then succeeds in its place.
    script = (MODEL + " -- --step_ms=100 & "
              "while [ ! -e \"$TAAS_TERMINATION_MESSAGE_PATH\" ]; do sleep 0.05; done; "
              "kill -9 $!; exit 0")
    job = ShellJob(tmp, "trainer-without-report", script)
    returncode, out, _ = job.finish()
    assert returncode == 0, (returncode, out)
    assert ("warning: the job's final metrics are unknown: no report in " in out and
            "its trainer started but left none" in out), out


# --- All-reduce training (no PS) ----------------------------------------------------------------


def final_parameters(lines, replica):
    """The `final parameters` line each worker's after_train logs: its w and b as printed."""
    for l in lines:
        m = re.search(rf"^\[{replica}\] .*msg=\"final parameters\" .*w=\"([^\"]+)\" b=(\S+)", l)
        if m:
            return m.group(1), m.group(2)
    raise AssertionError(f"{replica} logged no final parameters")


def scenario_allreduce(tmp):
    """Workers and an evaluator, no PS: every worker ends with the same variables."""
    run = Launch(tmp, "linear", [("Worker", 3), ("Evaluator", 1)], {"TF_MAX_STEPS": "300",
                 "TAAS_CHECK_VARIABLES_STEPS": "25"}, args=["--step_ms=5"])
    run.wait_for(r"^\[linear-worker-1\] .*msg=starting .*strategy=collective")
    run.wait_for(r'^\[linear-worker-0\] .*all-reduce group formed" .*replicas_in_sync=3')
    lines = check_trained(run, 300)
    finals = {final_parameters(lines, f"linear-worker-{w}") for w in range(3)}
    assert len(finals) == 1, finals
    assert run.count(r"^\[linear-worker-2\] .*msg=training") > 0
    check_final_checkpoint_evaluated(run, lines, 300)  # worker 0's success starts the wait
    assert run.count("hold variables whose checksum differs") == 0
    # The chief reports no final metrics of its own: the job's result is the evaluator's score of
    # the final checkpoint (job_report::JobResult), as train_and_evaluate's is.
    assert run.count(r"^\[linear-evaluator-0\] .*msg=\"final metrics\" .*global_step=300") == 1
    assert re.search(r"^\[taas\] job linear succeeded at step 300: final accuracy \d\.\d{4}, "
                     r"loss \S+ \(model dir ", lines[-1]), lines[-1]


def allreduce_checkpoint(tmp, name, workers, replicas, steps, args):
    env = {"TF_MAX_STEPS": steps, "TAAS_REPLICAS_PER_WORKER": str(replicas),
           "TAAS_ALLREDUCE_BUCKET_BYTES": "16"}  # w (32 bytes) split over buckets
    run = Launch(tmp, name, [("Worker", workers)], env, args=args)
    assert run.finish() == 0, run.dump()
    return read_checkpoint(run.model_dir)[1], run.snapshot()


def scenario_allreduce_equals_single(tmp):
    """2 workers x 2 replicas, 1 worker x 4 replicas and 1 process with 4 sub-batches per step
    train the same model (the same samples each step, averaged): K replicas at batch B/K update
    like one replica at batch B."""
    steps, args = "60", ["--optimizer=momentum"]
    two_by_two, _ = allreduce_checkpoint(tmp, "linear", 2, 2, steps, args)
    one_by_four, _ = allreduce_checkpoint(tmp, "linearfour", 1, 4, steps, args)
    single_dir = os.path.join(tmp, "single")
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    out = subprocess.run([MODEL, f"--max_steps={steps}", f"--model_dir={single_dir}",
                          "--", "--shards=4"] + args,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    _, single = read_checkpoint(single_dir)
    for dist in (two_by_two, one_by_four):
        for name in ("linear/w", "linear/b"):
            for a, b in zip(dist[name], single[name]):
                assert abs(a - b) <= 1e-5 * max(1.0, abs(b)), (name, dist[name], single[name])
    assert single["linear/w"] != [0.0] * 8


def scenario_allreduce_deterministic(tmp):
    """The same job twice: bit-identical variables, on every worker."""
    first, lines = allreduce_checkpoint(tmp, "linear", 3, 1, "80", ["--optimizer=adam"])
    again, _ = allreduce_checkpoint(tmp, "linearagain", 3, 1, "80", ["--optimizer=adam"])
    assert first == again, (first, again)
    assert len({final_parameters(lines, f"linear-worker-{w}") for w in range(3)}) == 1


def scenario_allreduce_kill_worker(tmp):
    """A worker lost mid-run: the others notice, exit transient, and the whole job resumes from
    the chief's last checkpoint (what MultiWorkerMirroredStrategy users expect)."""
    run = Launch(tmp, "linear", [("Worker", 2)], {"TF_MAX_STEPS": "600"}, args=["--step_ms=10"])
    run.wait_for(r"^\[linear-worker-0\] .*saved checkpoint.*global_step=(1|2)\d\d")
    killed_at = time.time()
    os.kill(run.pid_of("linear-worker-1"), signal.SIGKILL)
    run.wait_for(r"linear-worker-1 exited with code 137 \(restartPolicy ExitCode: restart\)")
    run.wait_for(r"linear-worker-0 exited with code 150 \(restartPolicy ExitCode: restart\)",
                 timeout=30)
    assert time.time() - killed_at < 20, "the chief took too long to notice"
    m = run.wait_for(r"^\[linear-worker-1\] .*start state received from the chief.*"
                     r"global_step=([1-9]\d+)")
    run.wait_for(r"^\[linear-worker-0\] .*restoring variables from checkpoint")
    check_trained(run, 600)
    assert int(m.group(1)) >= 100


def scenario_allreduce_bad_config(tmp):
    """A strategy that contradicts TF_CONFIG is a configuration error naming both."""
    env = dict(os.environ)
    env.update(token_env(tmp, chief=True))
    env["TF_CONFIG"] = '{"cluster":{"worker":["127.0.0.1:10","127.0.0.1:11"]},' \
                       '"task":{"type":"worker","index":0}}'
    env["TAAS_STRATEGY"] = "parameter_server"
    out = subprocess.run([MODEL], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out
    assert "TAAS_STRATEGY=parameter_server: contradicts TF_CONFIG.cluster" in out.stdout, out


def final_state(lines, replica):
    """The `final state` line a worker's after_train logs with --state: label_mean, frozen."""
    for l in lines:
        m = re.search(rf"^\[{replica}\] .*msg=\"final state\" .*"
                      r"label_mean=\"?([0-9.e+-]+)\"? frozen=\"?([0-9.e+-]+)\"?", l)
        if m:
            return m.group(1), m.group(2)
    raise AssertionError(f"{replica} logged no final state")


def check_state(run, lines, steps):
    """The state that is not trained (--frozen=7: the chief's init fn sets linear/frozen): every
    worker started from the chief's, each kept its own running statistics, and the chief's is the
    one its checkpoint holds and the evaluator sees."""
    chief, other = final_state(lines, "linear-worker-0"), final_state(lines, "linear-worker-1")
    assert chief[1] == other[1] == "7.000000", (chief, other)
    assert chief[0] != other[0], (chief, other)  # each replica's own batches
    step, values = read_checkpoint(run.model_dir)
    assert step == steps, step
    assert f"{values['linear/label_mean'][0]:.6f}" == chief[0], (values, chief)
    assert values["linear/frozen"] == [7.0], values
    assert "linear/label_mean/slot_0" not in values, values  # no optimizer slots
    scored = [l for l in lines
              if re.search(rf"^\[linear-evaluator-0\] .*evaluated checkpoint.* global_step={steps}\b", l)]
    assert scored, run.dump()
    assert f"label_mean={chief[0]}" in scored[-1] and "frozen=7.000000" in scored[-1], scored[-1]
    return values


def scenario_allreduce_state(tmp):
    """All-reduce with state: the start broadcast brings the chief's to the other worker."""
    run = Launch(tmp, "linear", [("Worker", 2), ("Evaluator", 1)], {"TF_MAX_STEPS": "200"},
                 args=["--frozen=7"])
    lines = check_trained(run, 200)
    check_state(run, lines, 200)
    finals = {final_parameters(lines, f"linear-worker-{w}") for w in range(2)}
    assert len(finals) == 1, finals


def scenario_ps_state(tmp):
    """PS sync with state: a worker pulls the chief's once, state is never pushed (the job is
    bit-identical run twice, its variables those of a job without state)."""
    env = {"TF_MAX_STEPS": "200", "TF_SYNC": "true", "TAAS_PARTITION_BYTES": "16"}
    run = Launch(tmp, "linear", [("PS", 2), ("Worker", 2), ("Evaluator", 1)], env,
                 args=["--frozen=7"])
    lines = check_trained(run, 200)
    values = check_state(run, lines, 200)
    assert run.count(r"^\[linear-worker-1\] .*state pulled from the parameter servers") == 1
    assert run.count(r"^\[linear-worker-0\] .*state pulled from the parameter servers") == 0
    again = Launch(tmp, "linearagain", [("PS", 2), ("Worker", 2)], env, args=["--frozen=7"])
    assert again.finish() == 0, again.dump()
    assert read_checkpoint(again.model_dir)[1] == values
    plain = Launch(tmp, "linearplain", [("PS", 2), ("Worker", 2)], env)
    assert plain.finish() == 0, plain.dump()
    _, without = read_checkpoint(plain.model_dir)
    assert {k: v for k, v in values.items() if k in without} == without


def scenario_ps_state_reset(tmp):
    """A restarted PS: the chief restores it with its own state from the checkpoint, and the
    other worker pulls the state again, once."""
    run = Launch(tmp, "linear", [("PS", 1), ("Worker", 2)], {"TF_MAX_STEPS": "800"},
                 args=["--step_ms=10", "--frozen=7"])
    run.wait_for(r"^\[linear-worker-0\] .*saved checkpoint.*global_step=(1|2)\d\d")
    os.kill(run.pid_of("linear-ps-0"), signal.SIGKILL)
    run.wait_for(r"linear-ps-0 exited with code 137")
    run.wait_for(r"^\[linear-worker-0\] .*restoring variables from checkpoint.*global_step=\d+")
    lines = check_trained(run, 800)
    pulled = run.count(r"^\[linear-worker-1\] .*state pulled from the parameter servers")
    assert pulled == 2, run.dump()
    assert final_state(lines, "linear-worker-1")[1] == "7.000000"


def scenario_settings_disagree(tmp):
    # The Chief and Worker specs disagree on TF_MAX_STEPS (a TFJob has no job-level env): `taas
    # run` says so once, at start, before any replica runs; the job still runs (the chief's value
    # is the parameter servers': the worker stops with it).
    steps = {"Chief": "20", "Worker": "30"}
    yaml = job_yaml("disagree", [("PS", 1), ("Chief", 1), ("Worker", 1)], [])
    for replica_type, value in steps.items():
        head = f"    {replica_type}:\n"
        start = yaml.index(head)
        at = yaml.index("              args:", start)
        yaml = (yaml[:at] + "              env:\n                - name: TF_MAX_STEPS\n"
                f"                  value: \"{value}\"\n" + yaml[at:])
    path = os.path.join(tmp, "disagree.yaml")
    with open(path, "w") as f:
        f.write(yaml)
    base = ["--no-ui", "--progress-secs", "0", "--env", "TF_SAVE_CHECKPOINTS_SECS=0"]
    out = subprocess.run([TAAS, "run", path, "--model-dir", os.path.join(tmp, "m")] + base,
                         capture_output=True, text=True, timeout=120)
    lines = (out.stdout + out.stderr).splitlines()
    assert out.returncode == 0, out
    warnings = [i for i, line in enumerate(lines) if "replica specs disagree" in line]
    assert len(warnings) == 1, lines
    line = lines[warnings[0]]
    assert 'TF_MAX_STEPS (Chief "20", Worker "30")' in line, line
    assert "set each alike in every replica spec" in line, line
    first_replica = next(i for i, line in enumerate(lines) if "each replica's output" in line)
    assert warnings[0] < first_replica, lines

    # --env gives every replica one value: no warning (the job cannot start here, which the
    # warning would have come before).
    missing = yaml.replace("/opt/taas/bin/linear-regression", "/opt/taas/bin/absent-model")
    with open(path, "w") as f:
        f.write(missing)
    out = subprocess.run([TAAS, "run", path, "--env", "TF_MAX_STEPS=20"] + base,
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out
    assert "no executable named absent-model" in out.stdout + out.stderr, out
    assert "disagree" not in out.stdout + out.stderr, out
    out = subprocess.run([TAAS, "run", path] + base, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2, out
    assert "replica specs disagree" in out.stdout + out.stderr, out


def main():
    scenario = sys.argv[2]
    with tempfile.TemporaryDirectory(prefix=f"taas-mp-{scenario}-") as tmp:
        globals()["scenario_" + scenario](tmp)
    print("ok", scenario)


if __name__ == "__main__":
    main()
