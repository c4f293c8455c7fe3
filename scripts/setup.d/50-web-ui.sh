# Web UI (web-ui/, tests/web-ui/): Debian's Chromium for the browser tests (Playwright drives it;
# no browser is ever downloaded) and the front end's npm packages, installed exactly as
# web-ui/package-lock.json pins them. A second run does nothing. The main job (setup.sh
# --main-job) needs the packages, to build the UI the launcher serves, but no browser.
# shellcheck shell=bash
[ "${TAAS_SETUP_SCOPE:-all}" = main-job ] || need_debian_packages chromium
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  need_debian_packages nodejs npm
fi
# Vite 7 needs Node.js 20.19 or newer.
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
         process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
  die "the web UI build needs Node.js >= 20.19 (found $(node --version)); install a newer nodejs"
taas_webui="$TAAS_ROOT/web-ui"
if [ ! -f "$taas_webui/node_modules/.package-lock.json" ] ||
  [ "$taas_webui/package-lock.json" -nt "$taas_webui/node_modules/.package-lock.json" ]; then
  log "installing the web UI's npm packages (npm ci)"
  (cd "$taas_webui" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    die "npm ci in web-ui/ failed (npm registry unreachable?)"
fi
unset taas_webui
