#!/usr/bin/env bash
# Sets up, builds and runs the main job: the distributed Fashion-MNIST TFJob under the local
# launcher (one process per replica, each with the TF_CONFIG the operator would inject).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$TAAS_ROOT/scripts/lib/build.sh"

"$TAAS_ROOT/scripts/setup.sh"
taas_build

launcher="$TAAS_BUILD/launcher/taas"
job="$TAAS_ROOT/examples/fashion-mnist-cnn/job.yaml"
if [ ! -x "$launcher" ] || [ ! -f "$job" ]; then
  log "the local launcher (launcher) and the Fashion-MNIST example are not built yet;"
  log "setup and build succeeded. Run ./scripts/test.sh to run the tests that exist."
  exit 0
fi
exec "$launcher" run "$job" "$@"
