# Kubeflow's training-operator, the peer of tests/conformance and bench/operator: built once from
# its Go module (the last v1 release the Go proxy serves) and cached under
# $TAAS_CACHE/training-operator-<version>/bin (a cached build returns at once). Cold: 134 s on
# 2 otherwise idle cores after the control plane's build (scripts/cluster/training-operator).
# shellcheck shell=bash
"$TAAS_ROOT/scripts/cluster/training-operator" build >/dev/null ||
  die "building Kubeflow's training-operator failed (see the message above)"
