#!/usr/bin/env python3
"""Writes the TFRecord fixture that data_tfrecord_test reads back, with TensorFlow's own writer.

Run once (the files are committed; the tests never run TensorFlow):

    python3 -m venv /tmp/tf && /tmp/tf/bin/pip install tensorflow-cpu
    /tmp/tf/bin/python trainer-runtime/data/testdata/make_tfrecord_fixture.py

It writes, beside itself, tf_examples.tfrecord (plain) and tf_examples.tfrecord.gz
(TFRecordOptions(compression_type="GZIP")), each holding the same 5 tf.train.Examples. Example i
(0 to 4) has exactly these features, which the test states again:

    "floats": float_list [i + 0.5, -0.25 * i, 1e-3 * i]   (as float32)
    "ints":   int64_list [i, -i, 2**40 + i]
    "label":  int64_list [i % 3]
    "name":   bytes_list [b"example-<i>"]
    "pixels": bytes_list [bytes([i, i + 1, i + 2, 255 - i])]
"""
import pathlib

import tensorflow as tf

COUNT = 5
HERE = pathlib.Path(__file__).resolve().parent


def example(i):
    feature = {
        "floats": tf.train.Feature(float_list=tf.train.FloatList(value=[i + 0.5, -0.25 * i, 1e-3 * i])),
        "ints": tf.train.Feature(int64_list=tf.train.Int64List(value=[i, -i, 2**40 + i])),
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3])),
        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"example-%d" % i])),
        "pixels": tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes([i, i + 1, i + 2, 255 - i])])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def main():
    for name, options in (("tf_examples.tfrecord", None),
                          ("tf_examples.tfrecord.gz", tf.io.TFRecordOptions(compression_type="GZIP"))):
        with tf.io.TFRecordWriter(str(HERE / name), options=options) as writer:
            for i in range(COUNT):
                writer.write(example(i).SerializeToString())
        # TensorFlow reads back what it wrote, as a check of the script itself.
        read = list(tf.data.TFRecordDataset(str(HERE / name),
                                            compression_type="GZIP" if options else ""))
        assert len(read) == COUNT, name
        print(name, (HERE / name).stat().st_size, "bytes,", COUNT, "examples")


if __name__ == "__main__":
    main()
