# scheduler-plugins' coscheduler, the gang scheduler `taas-cluster up --coscheduler` runs beside
# the default scheduler (tests/cluster/gang_test.py): built once from its Go module through our
# scripts/cluster/coscheduler-build/go.mod and cached under $TAAS_CACHE/coscheduler-<version>/bin
# (a cached build returns at once). Cold: see docs/test-cluster.md, "Coscheduler".
# shellcheck shell=bash
"$TAAS_ROOT/scripts/cluster/coscheduler" build >/dev/null ||
  die "building the coscheduler failed (see the message above)"
