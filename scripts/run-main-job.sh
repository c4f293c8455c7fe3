#!/usr/bin/env bash
# Sets up, builds and runs the main job: the distributed Fashion-MNIST TFJob under the local
# launcher (one process per replica, each with the TF_CONFIG the operator would inject).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

# Only what this job needs: the tests' tools (Kubernetes, Chromium, ...) and the tests themselves
# are for ./scripts/test.sh.
"$TAAS_ROOT/scripts/setup.sh" --main-job
main_job_targets=(taas fashion-mnist-cnn)
# The web UI's bundle, when its npm packages are there (the target exists only then).
[ -f "$TAAS_ROOT/web-ui/node_modules/.package-lock.json" ] && main_job_targets+=(web-ui-dist)
taas_build "${main_job_targets[@]}"

exec "$TAAS_BUILD/launcher/taas" run "$TAAS_ROOT/examples/fashion-mnist-cnn/job.yaml" "$@"
