# Kueue, the job queueing controller of tests/kueue and docs/install.md ("Queueing with Kueue"):
# built once from its Go module and cached under $TAAS_CACHE/kueue-<version>/bin (a cached build
# returns at once). Cold: 309 s on 2 otherwise idle cores after the control
# plane's build (scripts/cluster/kueue).
# shellcheck shell=bash
"$TAAS_ROOT/scripts/cluster/kueue" build >/dev/null ||
  die "building Kueue failed (see the message above)"
