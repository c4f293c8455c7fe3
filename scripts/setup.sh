#!/usr/bin/env bash
# Installs everything taas needs to build, run and test. Idempotent: a second run installs nothing.
# Each component owns one fragment under scripts/setup.d/, run in name order.
#
#   scripts/setup.sh              everything: what the tests need too (Kubernetes from source,
#                                 sanitizers, Python tools, Chromium, packaging tools)
#   scripts/setup.sh --main-job   only what the main job needs (run-main-job.sh): the C++
#                                 toolchain, libraries and dataset, and the web UI's npm packages
#                                 for the UI the launcher serves
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

# The fragments the main job needs; each fragment reads TAAS_SETUP_SCOPE to leave out what only
# the tests use.
main_job_fragments=(10-toolchain 50-web-ui)
case "${1:-}" in
  "") TAAS_SETUP_SCOPE=all ;;
  --main-job) TAAS_SETUP_SCOPE=main-job ;;
  *) die "usage: scripts/setup.sh [--main-job]" ;;
esac
export TAAS_SETUP_SCOPE
# Its phase markers (scripts/lib/common.sh): `setup` and `setup/<fragment>`, or
# `setup-main-job/...` for the main job's, so a log of both commands names each once.
setup_phase=setup
[ "$TAAS_SETUP_SCOPE" = main-job ] && setup_phase=setup-main-job
phase_start "$setup_phase"

for fragment in "$TAAS_ROOT"/scripts/setup.d/*.sh; do
  name="$(basename "$fragment" .sh)"
  if [ "$TAAS_SETUP_SCOPE" = main-job ] && [[ ! " ${main_job_fragments[*]} " =~ " $name " ]]; then
    continue
  fi
  phase_start "$setup_phase/$name"
  # shellcheck source=/dev/null
  source "$fragment"
  phase_end "$setup_phase/$name"
done
log "setup complete ($TAAS_SETUP_SCOPE)"
phase_end "$setup_phase"
