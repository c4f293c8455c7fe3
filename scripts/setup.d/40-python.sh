# Python venv with stock TensorBoard, whose event reader checks the trainer runtime's event files
# in a test (trainer-runtime/summary). Lives at $TAAS_CACHE/venv; reinstalls nothing once there.
# shellcheck shell=bash
need_debian_packages python3 python3-venv
TAAS_VENV="$TAAS_CACHE/venv"
if ! "$TAAS_VENV/bin/python" -c 'import tensorboard.backend.event_processing.event_accumulator' \
  >/dev/null 2>&1; then
  log "creating $TAAS_VENV with tensorboard"
  /usr/bin/python3 -m venv "$TAAS_VENV" || die "cannot create the Python venv $TAAS_VENV"
  "$TAAS_VENV/bin/pip" install -q --disable-pip-version-check tensorboard ||
    die "pip install tensorboard failed (PyPI unreachable?)"
fi
