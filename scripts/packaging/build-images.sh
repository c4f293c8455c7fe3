#!/usr/bin/env bash
# Builds the repository's Dockerfile without a Docker engine or registry: buildah (vfs storage,
# chroot isolation) from a Debian bookworm base image made here with debootstrap. See
# docs/install.md "Building the images without Docker".
#
#   scripts/packaging/build-images.sh --smoke     a tiny Dockerfile: does buildah work here at all?
#   scripts/packaging/build-images.sh [--target operator|trainer|builder]... [--context DIR]
#                                     [--build-arg NAME=VALUE]...
#                                                 the real images (context: default the repository)
#   scripts/packaging/build-images.sh --from-build BUILD_DIR [--target ...]
#                                                 only the runtime stages, from binaries already
#                                                 built on this machine (minutes, not an hour):
#                                                 the Dockerfile's stages from runtime-base on,
#                                                 fed by stage-install.sh run here
#   scripts/packaging/build-images.sh --test      ctest entry (label slow): skipped (exit 77)
#                                                 unless TAAS_SLOW_TESTS=1; builds both images
#                                                 and checks them
#
# Images land in buildah's storage under $TAAS_CACHE/buildah (tags localhost/taas/operator:dev,
# localhost/taas/trainer:dev); `buildah --root ... push IMAGE docker-archive:x.tar` exports one.
# Timings of each step are printed at the end.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

mode=build
targets=()
context=""
from_build=""
build_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) mode=smoke ;;
    --test) mode=test ;;
    --target)
      targets+=("$2")
      shift
      ;;
    --context)
      context="$(cd "$2" && pwd)"
      shift
      ;;
    --from-build)
      from_build="$(cd "$2" && pwd)"
      shift
      ;;
    --build-arg)
      build_args+=(--build-arg "$2")
      shift
      ;;
    *) die "unknown argument $1 (see the header of $0)" ;;
  esac
  shift
done
if [ "$mode" = test ] && [ "${TAAS_SLOW_TESTS:-0}" != 1 ]; then
  echo "skipped: the full image build takes most of an hour; run with TAAS_SLOW_TESTS=1"
  exit 77
fi
[ ${#targets[@]} -gt 0 ] || targets=(trainer operator)
context="${context:-$TAAS_ROOT}"

need_debian_packages buildah debootstrap
STORE="$TAAS_CACHE/buildah"
RUNROOT="${TMPDIR:-/tmp}/taas-buildah-run-$(id -u)"
mkdir -p "$STORE" "$RUNROOT"
BUILDAH=(buildah --storage-driver vfs --root "$STORE/storage" --runroot "$RUNROOT")
bah() { "${BUILDAH[@]}" "$@"; }
BASE=localhost/taas-base:bookworm
timings=()
timed() { # LABEL COMMAND...   (returns the command's status)
  local label="$1" start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  timings+=("$label: $((SECONDS - start)) s$([ $rc -eq 0 ] || echo " (failed, status $rc)")")
  return $rc
}

# The base image: a minimal bookworm root file system from the configured Debian mirror (the
# one apt uses), cached as a tarball and imported once into buildah's storage.
base_image() {
  if bah inspect --type image "$BASE" >/dev/null 2>&1; then return 0; fi
  local tarball="$TAAS_CACHE/images/debian-bookworm-minbase.tar"
  if [ ! -f "$tarball" ]; then
    local mirror
    mirror="$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1)"
    mirror="${mirror:-http://deb.debian.org/debian}"
    log "debootstrap bookworm from $mirror"
    local rootfs
    rootfs="$(mktemp -d "${TMPDIR:-/tmp}/taas-rootfs.XXXXXX")"
    nice debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 ||
      die "debootstrap failed; see $rootfs.log"
    # What the official slim image also does: no apt caches, no docs.
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/usr/share/doc/*
    printf 'Types: deb\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$mirror" >"$rootfs/etc/apt/sources.list.d/debian.sources"
    rm -f "$rootfs/etc/apt/sources.list"
    mkdir -p "$(dirname "$tarball")"
    tar -C "$rootfs" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$rootfs" "$rootfs.log"
  fi
  log "importing the base image $BASE"
  local ctr mnt
  ctr="$(bah from scratch)"
  mnt="$(bah mount "$ctr")"
  tar -C "$mnt" --numeric-owner -xf "$tarball"
  bah umount "$ctr" >/dev/null
  bah config --cmd /bin/bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  bah commit --quiet "$ctr" "$BASE" >/dev/null
  bah rm "$ctr" >/dev/null
}

bud() { # TARGET TAG CONTEXT DOCKERFILE  (TARGET "" builds the last stage)
  local target=()
  [ -z "$1" ] || target=(--target "$1")
  nice "${BUILDAH[@]}" bud --isolation chroot --layers --build-arg "BASE_IMAGE=$BASE" \
    "${build_args[@]}" "${target[@]}" -t "$2" -f "$4" "$3"
}

# Runs COMMAND inside IMAGE (chroot isolation: no container runtime needed).
run_in() { # IMAGE COMMAND...
  local image="$1" ctr out rc=0
  shift
  ctr="$(bah from --quiet "$image")"
  out="$(bah run --isolation chroot "$ctr" -- "$@" 2>&1)" || rc=$?
  bah rm "$ctr" >/dev/null
  printf '%s\n' "$out"
  return $rc
}

timed "base image (debootstrap + import)" base_image || die "making the base image failed"

if [ "$mode" = smoke ]; then
  dir="$(mktemp -d "${TMPDIR:-/tmp}/taas-smoke.XXXXXX")"
  trap 'rm -rf "$dir"' EXIT
  echo hello >"$dir/hello.txt"
  cat >"$dir/Dockerfile" <<'EOF'
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE} AS build
RUN echo built >/built.txt
FROM ${BASE_IMAGE}
COPY --from=build /built.txt /opt/smoke/
COPY hello.txt /opt/smoke/
RUN useradd --uid 10001 smoke
USER 10001
EOF
  timed "smoke image" bud "" localhost/taas/smoke:dev "$dir" "$dir/Dockerfile" >"$dir/bud.log" 2>&1 ||
    die "buildah bud failed: $(tail -n 20 "$dir/bud.log")"
  out="$(run_in localhost/taas/smoke:dev sh -c 'id -u; cat /opt/smoke/built.txt /opt/smoke/hello.txt')"
  [ "$out" = $'10001\nbuilt\nhello' ] || die "smoke image is wrong: $out"
  bah rmi localhost/taas/smoke:dev >/dev/null
  log "buildah works here: ${timings[*]}"
  exit 0
fi

dockerfile="$context/Dockerfile"
if [ -n "$from_build" ]; then
  # A context holding only the staged files, and the Dockerfile with its builder and staging
  # stages replaced by one that copies them in.
  prebuilt="$(mktemp -d "${TMPDIR:-/tmp}/taas-prebuilt.XXXXXX")"
  trap 'rm -rf "$prebuilt"' EXIT
  # The LibTorch the build was configured with, whose libraries its torch trainer loads.
  torch_root="$(sed -n 's/^TAAS_TORCH_ROOT:PATH=//p' "$from_build/CMakeCache.txt")"
  timed "stage-install from $from_build" env TAAS_TORCH_LIB_ROOT="$torch_root" \
    "$TAAS_ROOT/scripts/packaging/stage-install.sh" "$from_build" "$prebuilt/out" ||
    die "stage-install.sh failed"
  {
    echo 'ARG BASE_IMAGE=debian:bookworm-slim'
    echo 'FROM ${BASE_IMAGE} AS staging'
    echo 'COPY out/ /out/'
    sed -n '/^FROM .* AS runtime-base$/,$p' "$TAAS_ROOT/Dockerfile"
  } >"$prebuilt/Dockerfile"
  context="$prebuilt"
  dockerfile="$prebuilt/Dockerfile"
fi
for target in "${targets[@]}"; do
  timed "image $target" bud "$target" "localhost/taas/$target:dev" "$context" "$dockerfile" ||
    die "building the $target image failed (${timings[*]})"
done

# Checks of the built images (after --test and --from-build).
if [ "$mode" = test ] || [ -n "$from_build" ]; then
  trainer_binaries="${TAAS_TRAINER_BINARIES:-fashion-mnist-cnn fashion-mnist-mlp fashion-mnist-to-tfrecord taas}"
  failures=0
  expect() { # DESCRIPTION COMMAND...
    local what="$1"
    shift
    if "$@" >/dev/null 2>&1; then echo "ok: $what"; else
      echo "FAILED: $what"
      failures=$((failures + 1))
    fi
  }
  for target in "${targets[@]}"; do
    image="localhost/taas/$target:dev"
    expect "$target runs as uid 10001" [ "$(bah inspect --format '{{.OCIv1.Config.User}}' "$image")" = 10001:10001 ]
    expect "$target has no compiler" run_in "$image" sh -c '! command -v g++ && ! command -v cc && ! command -v cmake && [ ! -d /usr/include/c++ ]'
    expect "$target has no apt lists" run_in "$image" sh -c '[ -z "$(ls /var/lib/apt/lists | grep -v lock | grep -v partial)" ]'
  done
  if [[ " ${targets[*]} " == *" trainer "* ]]; then
    for binary in $trainer_binaries; do
      expect "trainer has /opt/taas/bin/$binary" run_in localhost/taas/trainer:dev test -x "/opt/taas/bin/$binary"
    done
    expect "trainer's binaries find every library" run_in localhost/taas/trainer:dev sh -c '! ldd /opt/taas/bin/* | grep -q "not found"'
    expect "trainer has Fashion-MNIST" run_in localhost/taas/trainer:dev test -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
  fi
  if [[ " ${targets[*]} " == *" operator "* ]]; then
    expect "operator has operator, UI and assets" run_in localhost/taas/operator:dev sh -c 'test -x /opt/taas/bin/taas-operator && test -x /opt/taas/bin/taas-ui && test -f /opt/taas/share/web-ui/index.html'
    expect "operator's binaries find every library" run_in localhost/taas/operator:dev sh -c '! ldd /opt/taas/bin/* | grep -q "not found"'
    expect "taas-ui runs as the image's user (--help)" run_in localhost/taas/operator:dev /opt/taas/bin/taas-ui --help
    expect "taas-operator runs (--help)" run_in localhost/taas/operator:dev /opt/taas/bin/taas-operator --help
  fi
  printf '%s\n' "${timings[@]}"
  bah images --format '{{.Name}}:{{.Tag}} {{.Size}}' | grep '^localhost/taas/' || true
  [ "$failures" -eq 0 ] || die "$failures image check(s) failed"
  echo "image checks passed"
  exit 0
fi
printf '%s\n' "${timings[@]}"
