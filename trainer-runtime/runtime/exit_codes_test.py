"""Exit codes of real trainer processes given bad models, data, configuration and checkpoints.

Each case runs a trainer binary once (a local run with its in-process PS, or an evaluator) and
asserts the class of its exit code (1..127 permanent, >= 128 transient, never abort's 134) and
that exactly one error line explains it: `msg="exiting: <cause>"` with the step, the exit code
and the error naming what failed.

usage: exit_codes_test.py BUILD_DIR
"""
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

BUILD = os.path.abspath(sys.argv[1])
FAULTY = os.path.join(BUILD, "trainer-runtime", "runtime", "faulty-model")
CNN = os.path.join(BUILD, "examples", "fashion-mnist-cnn", "fashion-mnist-cnn")
PERMANENT_MODEL = 3
PERMANENT_CONFIG = 2
TRANSIENT = 150
FAILURES = []


def run(binary, args, env_extra=None, timeout=120):
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("TF_") or k.startswith("TAAS_"))}
    env.update(env_extra or {})
    proc = subprocess.run([binary] + args, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def check(name, binary, args, code, cause, error, env=None):
    """Runs one case: exit `code`, one error line with `cause` in msg and `error` in it (a text,
    or a list of texts that must all be there)."""
    needed = [error] if isinstance(error, str) else error
    rc, out = run(binary, args, env)
    errors = [line for line in out.splitlines() if "level=error" in line]
    problems = []
    if rc != code:
        problems.append(f"exit code {rc}, expected {code}")
    if len(errors) != 1:
        problems.append(f"{len(errors)} error lines, expected 1")
    elif f'msg="exiting: {cause}' not in errors[0] or any(e not in errors[0] for e in needed) or \
            f"exit_code={code}" not in errors[0] or " step=" not in errors[0]:
        problems.append(f"error line lacks cause {cause!r} or error {error!r}")
    if problems:
        FAILURES.append(name)
        print(f"FAIL {name}: {'; '.join(problems)}\n{out[-3000:]}")
    else:
        print(f"ok   {name}: {errors[0][errors[0].find('msg='):][:220]}")


def faulty(tmp, name, fault, code, cause, error, steps=3, env=None):
    model_dir = os.path.join(tmp, name)
    check(name, FAULTY, [f"--max_steps={steps}", f"--model_dir={model_dir}", "--"] + fault,
          code, cause, error, env)


def train_ok(model_dir, steps, extra=()):
    rc, out = run(FAULTY, [f"--max_steps={steps}", f"--model_dir={model_dir}",
                           "--save_checkpoints_steps=1"] + list(extra))
    assert rc == 0, out


def evaluator_env(tmp):
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("ab" * 32 + "\n")
    return {"TF_CONFIG": json.dumps({"cluster": {"evaluator": ["127.0.0.1:1"]},
                                     "task": {"type": "evaluator", "index": 0}}),
            "TAAS_JOB_TOKEN_FILE": token, "TAAS_WAIT_TIMEOUT_SECS": "2",
            "TAAS_EVAL_INTERVAL_SECS": "0.1", "TF_SAVE_CHECKPOINTS_SECS": "0.5"}


def model_hooks(tmp):
    injected = "injected failure in "
    for hook, how, cause in [
            ("factory", "throw", "build_model failed"),
            ("factory", "int", "build_model failed"),
            ("build_model", "throw", "build_model failed"),
            ("build_model", "status", "build_model failed"),
            ("get_init_fn", "throw", "cannot initialise the parameter servers"),
            ("init_fn", "throw", "cannot initialise the parameter servers"),
            ("init_fn", "status", "cannot initialise the parameter servers"),
            ("train", "throw", "train() failed"),
            ("train", "int", "train() failed"),
            ("train", "status", "train() failed"),
            ("after_train", "throw", "after_train() failed")]:
        error = "not a std::exception" if how == "int" else injected + hook
        faulty(tmp, f"{hook}-{how}", [f"--fail={hook}", f"--how={how}"], PERMANENT_MODEL, cause,
               error)
    # A failure in a later step names that step.
    faulty(tmp, "train-at-step-3", ["--fail=train", "--fail_at=3"], PERMANENT_MODEL,
           "train() failed", "step=2", steps=10)
    model_dir = os.path.join(tmp, "evaluate")
    train_ok(model_dir, 2)
    # The evaluator stops at the first checkpoint it cannot score, whether evaluate() threw or
    # returned the error.
    for how in ("throw", "status"):
        check(f"evaluate-{how}", FAULTY,
              [f"--model_dir={model_dir}", "--", "--fail=evaluate", f"--how={how}"],
              PERMANENT_MODEL, "evaluate() failed", injected + "evaluate", evaluator_env(tmp))


def configuration(tmp):
    model_dir = os.path.join(tmp, "config")
    for name, args, env, error in [
            ("max-steps-text", [], {"TF_MAX_STEPS": "ten"}, "TF_MAX_STEPS"),
            ("keep-narrowing", ["--keep_checkpoints=4294967297"], {}, "--keep_checkpoints"),
            ("replicas-narrowing", [], {"TF_REPLICAS_TO_AGGREGATE": "4294967297"},
             "TF_REPLICAS_TO_AGGREGATE"),
            ("timeout-nan", [], {"TAAS_WAIT_TIMEOUT_SECS": "nan"}, "TAAS_WAIT_TIMEOUT_SECS"),
            ("timeout-huge", [], {"TAAS_WAIT_TIMEOUT_SECS": "1e300"}, "TAAS_WAIT_TIMEOUT_SECS"),
            ("tf-config-json", [], {"TF_CONFIG": "{"}, "TF_CONFIG"),
            ("tf-config-types", [], {"TF_CONFIG": '{"cluster": {"ps": [1]}, "task": []}'},
             "TF_CONFIG.cluster.ps[0]"),
            ("tf-config-index", [], {"TF_CONFIG": json.dumps(
                {"sparseCluster": {"ps": ["a:1"], "worker": {"99999999999": "b:2"}},
                 "task": {"type": "worker", "index": 99999999999}})}, "TF_CONFIG.task.index"),
            ("tf-config-port", [], {"TF_CONFIG": json.dumps(
                {"cluster": {"ps": ["a:70000"], "worker": ["b:1"]},
                 "task": {"type": "worker", "index": 0}})}, "TF_CONFIG.cluster.ps[0]")]:
        check(name, FAULTY, [f"--model_dir={model_dir}"] + args, PERMANENT_CONFIG,
              "invalid configuration", error, env)
    # A GPU asked for where none is visible (this binary has no CUDA device at all): permanent,
    # naming the setting, CUDA_VISIBLE_DEVICES and the fix.
    check("device-cuda-none", FAULTY, [f"--model_dir={model_dir}"], PERMANENT_CONFIG,
          "no device for the model replicas",
          'TAAS_DEVICE=cuda: no CUDA device is visible to this process '
          '(CUDA_VISIBLE_DEVICES=\\"\\")',
          {"TAAS_DEVICE": "cuda", "CUDA_VISIBLE_DEVICES": ""})


def corrupt_last_value(path):
    """Overwrites the last float of a checkpoint's data, which its checksum then refuses."""
    with open(path, "r+b") as f:
        f.seek(-4, os.SEEK_END)
        f.write(b"\xff\xff\xff\xff")


def checkpoints(tmp):
    # Every checkpoint corrupt: the chief refuses to start from scratch over them.
    model_dir = os.path.join(tmp, "ckpt-all-corrupt")
    train_ok(model_dir, 1)
    corrupt_last_value(os.path.join(model_dir, "model.ckpt-1.safetensors"))
    check("checkpoint-all-corrupt", FAULTY, ["--max_steps=4", f"--model_dir={model_dir}"],
          PERMANENT_MODEL, "cannot initialise the parameter servers", "model.ckpt-1")
    # A safetensors header whose data_offsets run far past the file.
    model_dir = os.path.join(tmp, "ckpt-overflow")
    train_ok(model_dir, 1)
    path = os.path.join(model_dir, "model.ckpt-1.safetensors")
    with open(path, "rb") as f:
        blob = f.read()
    length = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + length])
    first = next(name for name in header if name != "__metadata__")
    header[first]["data_offsets"][1] = 2 ** 62
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob[8 + length:])
    check("checkpoint-header-overflow", FAULTY, ["--max_steps=4", f"--model_dir={model_dir}"],
          PERMANENT_MODEL, "cannot initialise the parameter servers", "data_offsets")
    # The newest corrupt, an older one valid: training resumes from the older one.
    model_dir = os.path.join(tmp, "ckpt-fallback")
    train_ok(model_dir, 3)
    corrupt_last_value(os.path.join(model_dir, "model.ckpt-3.safetensors"))
    rc, out = run(FAULTY, ["--max_steps=5", f"--model_dir={model_dir}"])
    if rc != 0 or "skipping a checkpoint that does not verify" not in out or \
            "model.ckpt-2" not in out:
        FAILURES.append("checkpoint-fallback")
        print(f"FAIL checkpoint-fallback: rc {rc}\n{out[-3000:]}")
    else:
        print("ok   checkpoint-fallback: resumed from model.ckpt-2")
    # The evaluator, training over and its last checkpoint corrupt: permanent, not a wait.
    model_dir = os.path.join(tmp, "eval-corrupt")
    train_ok(model_dir, 1)
    corrupt_last_value(os.path.join(model_dir, "model.ckpt-1.safetensors"))
    check("evaluator-last-checkpoint-corrupt", FAULTY, [f"--model_dir={model_dir}"],
          PERMANENT_MODEL, "training is over but its last checkpoint does not verify",
          "model.ckpt-1", evaluator_env(tmp))
    # Training not over and the newest checkpoint corrupt: the wait stays bounded (it used to poll
    # forever) and its line says why nothing new could be evaluated.
    os.remove(os.path.join(model_dir, "TRAINING_DONE"))
    check("evaluator-newest-corrupt", FAULTY, [f"--model_dir={model_dir}"], TRANSIENT,
          "gave up waiting", "the newest does not verify", evaluator_env(tmp))
    # The evaluator with no checkpoint ever: a bounded wait, transient, saying what it awaited.
    check("evaluator-no-checkpoint", FAULTY, [f"--model_dir={os.path.join(tmp, 'empty')}"],
          TRANSIENT, "gave up waiting", "no new checkpoint", evaluator_env(tmp))


def idx(magic, dims, payload):
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


def write_split(data_dir, images, labels):
    os.makedirs(data_dir, exist_ok=True)
    for name, content in [("train-images-idx3-ubyte.gz", images),
                          ("train-labels-idx1-ubyte.gz", labels)]:
        with gzip.open(os.path.join(data_dir, name), "wb") as f:
            f.write(content)


def data(tmp):
    if not os.path.exists(CNN):
        print(f"skip data cases: {CNN} is not built")
        return
    n = 8
    good_images = idx(0x803, [n, 28, 28], bytes(n * 28 * 28))
    good_labels = idx(0x801, [n], bytes(range(n)))
    for name, images, labels, error in [
            ("idx-bad-magic", idx(0x1234, [n, 28, 28], bytes(n * 784)), good_labels,
             "bad IDX magic number"),
            ("idx-truncated", good_images[:-100], good_labels, "truncated"),
            ("idx-huge-count", idx(0x803, [2 ** 32 - 1, 28, 28], bytes(784)), good_labels,
             "image count"),
            ("idx-overflowing-sizes", idx(0x803, [65535, 65535, 65535], b""), good_labels,
             "train-images-idx3-ubyte.gz"),
            ("label-out-of-range", good_images, idx(0x801, [n], bytes([0] * (n - 1) + [10])),
             "label 10")]:
        data_dir = os.path.join(tmp, name)
        write_split(data_dir, images, labels)
        check(name, CNN, ["--max_steps=2", f"--model_dir={os.path.join(tmp, name + '-model')}",
                          "--", f"--data_dir={data_dir}", "--batch_size=4"],
              PERMANENT_MODEL, "build_model failed", error)
    # The model's own arguments are configuration numbers too: range-checked, never narrowed,
    # and refused as the runtime's flags are (taas/runtime/model_args.h), naming flag and value.
    for name, arg in [("arg-learning-rate-nan", "--learning_rate=nan"),
                      ("arg-seed-negative", "--seed=-1"),
                      ("arg-batch-size-huge", "--batch_size=99999999999999999999"),
                      ("arg-threads-text", "--threads=four"),
                      ("arg-unknown", "--bogus=1"),
                      ("arg-positional", "stray")]:
        flag, _, value = arg.partition("=")
        error = ([f"model arguments: {flag}: expected ", f"got {value}"] if value else
                 ["model arguments: stray: expected --name=value"])
        if flag == "--bogus":
            error = ["model arguments: --bogus: unknown option"]
        check(name, CNN, ["--max_steps=2", f"--model_dir={os.path.join(tmp, name)}", "--", arg],
              PERMANENT_MODEL, "build_model failed", error)


def main():
    tmp = tempfile.mkdtemp(prefix="taas-exit-codes-")
    try:
        model_hooks(tmp)
        configuration(tmp)
        checkpoints(tmp)
        data(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        print("FAILED:", ", ".join(FAILURES))
        sys.exit(1)
    print("all cases passed")


if __name__ == "__main__":
    main()
