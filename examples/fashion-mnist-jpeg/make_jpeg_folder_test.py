#!/usr/bin/env python3
"""make-fashion-mnist-jpeg writes the first N images of each split as JPEG files in the class
folder of their IDX label, named by their index. Usage: make_jpeg_folder_test.py TOOL"""
import gzip
import os
import subprocess
import sys
import tempfile

SOURCE = "/usr/share/datasets/fashion-mnist"
LIMIT = 40


def labels(split):
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(SOURCE, prefix + "-labels-idx1-ubyte.gz")) as f:
        return list(f.read()[8:8 + LIMIT])


def main():
    tool = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([tool, "--out", out, "--limit", str(LIMIT), "--quality", "90"], check=True)
        for split in ("train", "test"):
            classes = sorted(os.listdir(os.path.join(out, split)))
            assert len(classes) == 10 and classes[0] == "0_tshirt_top", classes
            assert classes[9] == "9_ankle_boot", classes
            for index, label in enumerate(labels(split)):
                path = os.path.join(out, split, classes[label], "%05d.jpg" % index)
                with open(path, "rb") as f:
                    assert f.read(3) == b"\xff\xd8\xff", path + " is not a JPEG"
            files = sum(len(os.listdir(os.path.join(out, split, c))) for c in classes)
            assert files == LIMIT, "%s: %d files, expected %d" % (split, files, LIMIT)
        bad = subprocess.run([tool, "--out", out, "--quality", "0"], capture_output=True, text=True)
        assert bad.returncode == 1 and "quality must be in [1, 100], got 0" in bad.stderr, bad.stderr
    print("ok: %d images a split in their label's folder; a bad quality refused" % LIMIT)


if __name__ == "__main__":
    main()
