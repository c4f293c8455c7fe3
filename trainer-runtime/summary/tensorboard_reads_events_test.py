"""Stock TensorBoard's event reader loads the event files our EventWriter produces.

usage: tensorboard_reads_events_test.py WRITE_EVENTS_TOOL
"""
import subprocess
import sys
import tempfile

from tensorboard.backend.event_processing import event_accumulator


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="taas-tb-") as logdir:
        subprocess.run([tool, logdir], check=True)
        acc = event_accumulator.EventAccumulator(logdir, size_guidance={"scalars": 0})
        acc.Reload()
        tags = set(acc.Tags()["scalars"])
        expected = {"loss", "learning_rate", "examples_per_sec", "global_step_per_sec"}
        assert expected <= tags, f"scalar tags {tags} miss {expected - tags}"
        loss = acc.Scalars("loss")
        assert [e.step for e in loss] == [10, 20, 30, 40, 50], loss
        assert abs(loss[0].value - 1.0) < 1e-6 and abs(loss[4].value - 0.2) < 1e-6, loss
        assert acc.file_version == 2.0, acc.file_version
    print("tensorboard read", len(loss), "loss points")


if __name__ == "__main__":
    main()
