# Test control plane (scripts/cluster/taas-cluster, a Python program): the tools it and its
# tests run, then the Kubernetes, etcd and kwok binaries, built once from the Go module proxy and
# cached under $TAAS_CACHE/k8s-<version>/bin (a cached build returns at once).
# shellcheck shell=bash
need_debian_packages python3 openssl curl iproute2 util-linux unzip
"$TAAS_ROOT/scripts/cluster/taas-cluster" build >/dev/null ||
  die "building the test control plane failed (see the message above)"
