"""Stock TensorBoard's event reader loads the event files we write: a known file from the
EventWriter, and the summaries a chief writes while it trains.

usage: tensorboard_reads_events_test.py WRITE_EVENTS_TOOL LINEAR_REGRESSION_TRAINER
"""
import os
import subprocess
import sys
import tempfile

from tensorboard.backend.event_processing import event_accumulator


def load(logdir):
    acc = event_accumulator.EventAccumulator(logdir, size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return acc


def known_file(tool):
    with tempfile.TemporaryDirectory(prefix="taas-tb-") as logdir:
        subprocess.run([tool, logdir], check=True)
        acc = load(logdir)
        tags = set(acc.Tags()["scalars"])
        expected = {"loss", "learning_rate", "examples_per_sec", "global_step_per_sec", "zero"}
        assert expected <= tags, f"scalar tags {tags} miss {expected - tags}"
        loss = acc.Scalars("loss")
        assert [e.step for e in loss] == [10, 20, 30, 40, 50], loss
        assert abs(loss[0].value - 1.0) < 1e-6 and abs(loss[4].value - 0.2) < 1e-6, loss
        # A scalar of 0 is written too (TensorFlow's Summary.Value keeps it in a oneof).
        assert [e.value for e in acc.Scalars("zero")] == [0.0] * 5
        assert acc.file_version == 2.0, acc.file_version
        histograms = acc.Histograms("dense/kernel")
        assert [e.step for e in histograms] == [10, 20, 30, 40, 50], histograms
        h = histograms[0].histogram_value
        assert (h.min, h.max, h.num, h.sum) == (-1.0, 2.0, 5.0, 2.0), h
        assert list(h.bucket) == [1.0, 2.0, 2.0], h  # [-1, 0), [0, 1), [1, 2]
    print("tensorboard read", len(loss), "loss points and", len(histograms), "histograms")


def chief_summaries(trainer):
    # Without TF_CONFIG the trainer is its own chief with an in-process PS.
    with tempfile.TemporaryDirectory(prefix="taas-tb-chief-") as logdir:
        env = dict(os.environ, TF_LOGDIR=logdir, TF_MAX_STEPS="60", TF_SAVE_SUMMARIES_STEPS="20",
                   TAAS_EVAL_ON_CHIEF="25")
        env.pop("TF_CONFIG", None)
        subprocess.run([trainer], check=True, env=env, stdout=subprocess.DEVNULL)
        acc = load(logdir)
        scalars = set(acc.Tags()["scalars"])
        assert {"loss", "learning_rate", "examples_per_sec", "global_step/sec"} <= scalars, scalars
        histograms = set(acc.Tags()["histograms"])
        assert {"linear/w", "linear/b"} <= histograms, histograms
        steps = [e.step for e in acc.Histograms("linear/w")]
        assert len(steps) >= 3 and steps == sorted(steps), steps
        assert all(e.histogram_value.num > 0 for e in acc.Histograms("linear/w"))
        # evaluate() on the chief (every 25 steps and at the end) is a run of its own.
        assert "accuracy" not in scalars, scalars
        evaluated = load(os.path.join(logdir, "eval_chief"))
        assert {"loss", "accuracy"} <= set(evaluated.Tags()["scalars"]), evaluated.Tags()
        eval_steps = [e.step for e in evaluated.Scalars("accuracy")]
        assert eval_steps == [25, 50, 60], eval_steps
    print("tensorboard read the chief's", len(steps), "histograms of linear/w and",
          len(eval_steps), "evaluations on the chief")


def main():
    known_file(sys.argv[1])
    chief_summaries(sys.argv[2])


if __name__ == "__main__":
    main()
