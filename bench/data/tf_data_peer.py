"""tf.data on the same TFRecord file and options as taas_data_throughput_bench (bench/data/run.sh):
TFRecordDataset + map(parse, num_parallel_calls=threads) + shuffle + batch + prefetch, with
TensorFlow's own thread pools limited to `threads`. Prints examples/s as the C++ side does."""
import argparse
import os
import resource
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

SHUFFLE, BATCH, PREFETCH = 10000, 100, 2  # taas_data_throughput_bench's kShuffle, kBatch, kPrefetch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--read", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    features = {"image": tf.io.FixedLenFeature([784], tf.float32),
                "label": tf.io.FixedLenFeature([], tf.int64)}

    def parse(record):
        example = tf.io.parse_single_example(record, features)
        return example["image"], example["label"]

    options = tf.data.Options()
    options.threading.private_threadpool_size = args.threads
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_begin = usage.ru_utime + usage.ru_stime
    begin = time.perf_counter()
    examples = 0
    for epoch in range(args.epochs):
        dataset = (tf.data.TFRecordDataset(args.read)
                   .map(parse, num_parallel_calls=args.threads)
                   .shuffle(SHUFFLE, seed=epoch)
                   .batch(BATCH)
                   .prefetch(PREFETCH)
                   .with_options(options))
        for images, _ in dataset:
            examples += int(images.shape[0])
    seconds = time.perf_counter() - begin
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"examples {examples} seconds {seconds:.3f} "
          f"cpu_seconds {usage.ru_utime + usage.ru_stime - cpu_begin:.3f} "
          f"examples_per_second {examples / seconds:.0f}")


if __name__ == "__main__":
    main()
