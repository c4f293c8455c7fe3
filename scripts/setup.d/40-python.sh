# Python venv with the stock readers our files are checked against in tests: TensorBoard's event
# reader (trainer-runtime/summary) and safetensors' (PyPI `safetensors`, with numpy, which
# TensorBoard already pulls: checkpoints and warm starts, trainer-runtime/checkpoint and
# examples/fashion-mnist-models). Lives at $TAAS_CACHE/venv; installs only what it lacks, so an
# existing venv made before a package was added gets that package alone (a small wheel: seconds).
# shellcheck shell=bash
need_debian_packages python3 python3-venv
TAAS_VENV="$TAAS_CACHE/venv"
if [ ! -x "$TAAS_VENV/bin/python" ]; then
  log "creating $TAAS_VENV"
  /usr/bin/python3 -m venv "$TAAS_VENV" || die "cannot create the Python venv $TAAS_VENV"
fi
# Each package with the module that proves it is there.
for wanted in "tensorboard tensorboard.backend.event_processing.event_accumulator" \
  "safetensors safetensors.numpy"; do
  read -r package module <<<"$wanted"
  if ! "$TAAS_VENV/bin/python" -c "import $module" >/dev/null 2>&1; then
    log "installing $package into $TAAS_VENV"
    "$TAAS_VENV/bin/pip" install -q --disable-pip-version-check "$package" ||
      die "pip install $package failed (PyPI unreachable?)"
  fi
done
