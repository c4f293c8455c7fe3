# Helm, for the chart tests (tests/packaging): built once from the Go module proxy at a pinned
# version and cached as $TAAS_CACHE/helm-<version>/helm (a cached build returns at once).
# shellcheck shell=bash
need_debian_packages python3 python3-yaml # the chart tests read rendered YAML
TAAS_HELM_VERSION=v3.21.4
TAAS_HELM="$TAAS_CACHE/helm-$TAAS_HELM_VERSION/helm"
export TAAS_HELM_VERSION TAAS_HELM
if ! "$TAAS_HELM" version --short 2>/dev/null | grep -q "^$TAAS_HELM_VERSION"; then
  taas_go=""
  for candidate in "${TAAS_GO:-}" "$(command -v go || true)" /usr/local/go/bin/go \
    "$TAAS_CACHE"/go-toolchain/*/bin/go; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      taas_go="$candidate"
      break
    fi
  done
  [ -n "$taas_go" ] ||
    die "building helm needs Go (none in TAAS_GO, PATH, /usr/local/go or $TAAS_CACHE/go-toolchain)"
  log "building helm $TAAS_HELM_VERSION from the Go module proxy (a few minutes, once)"
  rm -rf "$TAAS_CACHE/helm-$TAAS_HELM_VERSION.tmp"
  mkdir -p "$TAAS_CACHE/helm-$TAAS_HELM_VERSION.tmp"
  # As helm's Makefile does: the Kubernetes version `helm template` and `helm lint` assume is
  # the minor of the client-go that helm's go.mod requires (else helm says v1.20).
  taas_helm_mod="$(cd "$TAAS_CACHE" && GOTOOLCHAIN=auto GOFLAGS=-mod=mod "$taas_go" mod download \
    -json "helm.sh/helm/v3@$TAAS_HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')" ||
    die "downloading helm $TAAS_HELM_VERSION failed (Go module proxy unreachable?)"
  taas_k8s_minor="$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$taas_helm_mod")"
  [ -n "$taas_k8s_minor" ] || die "cannot find the client-go version in $taas_helm_mod"
  taas_ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$TAAS_HELM_VERSION"
  for taas_pkg in pkg/lint/rules pkg/chartutil; do
    taas_ldflags+=" -X helm.sh/helm/v3/$taas_pkg.k8sVersionMajor=1"
    taas_ldflags+=" -X helm.sh/helm/v3/$taas_pkg.k8sVersionMinor=$taas_k8s_minor"
  done
  # GOTOOLCHAIN=auto fetches a newer Go from the proxy if helm's go.mod asks for one.
  (cd "$TAAS_CACHE" && GOTOOLCHAIN=auto CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    GOBIN="$TAAS_CACHE/helm-$TAAS_HELM_VERSION.tmp" nice -n 10 "$taas_go" install -trimpath \
    -ldflags "$taas_ldflags" "helm.sh/helm/v3/cmd/helm@$TAAS_HELM_VERSION") ||
    die "building helm $TAAS_HELM_VERSION failed (Go module proxy unreachable?)"
  rm -rf "$TAAS_CACHE/helm-$TAAS_HELM_VERSION"
  mv "$TAAS_CACHE/helm-$TAAS_HELM_VERSION.tmp" "$TAAS_CACHE/helm-$TAAS_HELM_VERSION"
  unset taas_go candidate taas_helm_mod taas_k8s_minor taas_ldflags taas_pkg
fi
