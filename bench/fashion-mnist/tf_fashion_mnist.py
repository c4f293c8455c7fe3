"""Trains one Fashion-MNIST model with TensorFlow 2 Keras and prints one JSON line.

The peer of fashion_mnist_bench.cc: same architecture, initialisers, optimizer, batch size and
data (read from the same IDX files), so examples/sec, peak RSS and accuracy compare directly.
"""
import argparse
import gzip
import json
import os
import resource
import struct
import sys
import time

import numpy as np


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, offset=16).reshape(count, rows, cols)
    return np.frombuffer(data, np.uint8, offset=8)


def load(data_dir, prefix):
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    return (images.astype(np.float32) / 255.0), labels.astype(np.int32)


def build(tf, model_name, steps_per_epoch, seed):
    layers = tf.keras.layers
    if model_name == "mlp":
        # TF's classic MNIST tutorial: l2_regularizer(1e-4) is 1e-4 * sum(w^2) / 2.
        reg = tf.keras.regularizers.l2(0.5e-4)
        init = lambda s: tf.keras.initializers.TruncatedNormal(stddev=0.1, seed=seed + s)
        model = tf.keras.Sequential([
            layers.Input((784,)),
            layers.Dense(500, activation="relu", kernel_initializer=init(1),
                         bias_initializer=tf.keras.initializers.Constant(0.1),
                         kernel_regularizer=reg),
            layers.Dense(10, kernel_initializer=init(2),
                         bias_initializer=tf.keras.initializers.Constant(0.1),
                         kernel_regularizer=reg),
        ])
        schedule = tf.keras.optimizers.schedules.ExponentialDecay(
            0.1, decay_steps=steps_per_epoch, decay_rate=0.99, staircase=True)
        optimizer = tf.keras.optimizers.SGD(schedule, use_ema=True, ema_momentum=0.99)
    else:
        model = tf.keras.Sequential([
            layers.Input((28, 28, 1)),
            layers.Conv2D(32, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(64, 3, activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(64, 3, activation="relu"),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(10),
        ])
        optimizer = tf.keras.optimizers.Adam(0.001, epsilon=1e-7)
    model.compile(optimizer=optimizer,
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model, optimizer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["mlp", "cnn"], default="cnn")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch_size", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data_dir", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    import tensorflow as tf
    tf.keras.utils.set_random_seed(args.seed)

    x_train, y_train = load(args.data_dir, "train")
    x_test, y_test = load(args.data_dir, "t10k")
    shape = (-1, 784) if args.model == "mlp" else (-1, 28, 28, 1)
    x_train, x_test = x_train.reshape(shape), x_test.reshape(shape)
    steps_per_epoch = (len(x_train) + args.batch_size - 1) // args.batch_size
    model, optimizer = build(tf, args.model, steps_per_epoch, args.seed)

    epoch_times = []

    class Timer(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            epoch_times.append(time.perf_counter() - self.start)
            print(f"tf {args.model} epoch {epoch + 1} loss {logs['loss']:.4f} "
                  f"train_accuracy {logs['accuracy']:.4f} seconds {epoch_times[-1]:.2f}",
                  file=sys.stderr)

    def cpu_seconds():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    start = time.perf_counter()
    cpu_start = cpu_seconds()
    history = model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
                        shuffle=True, verbose=0, callbacks=[Timer()])
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu_start
    if getattr(optimizer, "use_ema", False):
        optimizer.finalize_variable_values(model.trainable_variables)
    test_loss, test_accuracy = model.evaluate(x_test, y_test, batch_size=args.batch_size,
                                              verbose=0)
    examples = len(x_train) * args.epochs
    # Steady state leaves out the first epoch (graph tracing); with one epoch there is none.
    steady = (len(x_train) * (args.epochs - 1) / sum(epoch_times[1:])
              if args.epochs > 1 else examples / seconds)
    print(json.dumps({
        "impl": "tensorflow", "version": tf.__version__, "model": args.model,
        "batch_size": args.batch_size, "steps": steps_per_epoch * args.epochs,
        "train_seconds": round(seconds, 3),
        "examples_per_sec": round(examples / seconds, 1),
        "examples_per_sec_steady": round(steady, 1),
        "examples_per_cpu_sec": round(examples / cpu, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "final_loss": round(float(history.history["loss"][-1]), 4),
        "test_accuracy": round(float(test_accuracy), 4),
    }))


if __name__ == "__main__":
    main()
