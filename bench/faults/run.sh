#!/usr/bin/env bash
# The fault run: for a bounded time (default ten minutes), SIGKILLs random replicas of the local
# Fashion-MNIST CNN job under `taas run`, and the operator and the API server of a test control
# plane while TFJobs are created; prints jobs succeeded, duplicate pods seen, checkpoints lost and
# the longest stall (bench/faults/README.md). Not a test: it takes minutes and its figures go in
# the README.
# Usage: bench/faults/run.sh [--minutes N] [--only local|cluster] [--steps N] [--seed N]
# Builds what it runs into $TAAS_BUILD (default build/); the control plane comes from
# scripts/cluster/taas-cluster (built once, cached under ~/.cache/taas).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

taas_build taas fashion-mnist-cnn taas-operator >/dev/null
exec python3 "$TAAS_ROOT/bench/faults/fault_run.py" \
  --taas "$TAAS_BUILD/launcher/taas" \
  --operator "$TAAS_BUILD/operator/cmd/taas-operator" \
  --build-dir "$TAAS_BUILD" \
  --cluster "$TAAS_ROOT/scripts/cluster/taas-cluster" \
  --crd "$TAAS_ROOT/crds/kubeflow.org_tfjobs.yaml" \
  --job "$TAAS_ROOT/examples/fashion-mnist-cnn/job.yaml" \
  "$@"
