#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time from a scratch copy of its seed corpus (the
# repository's corpus is never written). A crash leaves its input in the scratch folder and is
# printed; add that file to the seed corpus so it stays a regression test.
# Usage: fuzz-run.sh FUZZER SEED_CORPUS SCRATCH SECONDS
set -euo pipefail
fuzzer=$1 seeds=$2 scratch=$3 seconds=$4
rm -rf "$scratch" && mkdir -p "$scratch/corpus" "$scratch/artifacts"
cp -r "$seeds"/. "$scratch/corpus/"
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$scratch/artifacts/" -print_final_stats=1 "$scratch/corpus"
