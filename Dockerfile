# taas images, built from Debian bookworm (docs/install.md):
#
#   builder   the repository's own setup script and CMake build, as in the README
#   operator  taas-operator, taas-ui and the web UI assets            (--target operator)
#   trainer   runtime shared libraries + example trainers in /opt/taas/bin, the LibTorch one
#             included, with LibTorch's libraries in /opt/taas/torch/lib (--target trainer)
#   trainer-cuda  the same trainers built with CUDA, and the CUDA libraries they load (cuDNN,
#             cuBLAS, NCCL, the CUDA runtime, NVRTC) in /opt/taas/cuda/lib: nothing else of
#             the toolkit; the driver comes from the node (--target trainer-cuda)
#   sdk       compiler, the -dev packages, the installed taas SDK in /opt/taas and LibTorch in
#             /opt/libtorch (for `taas new --engine torch`), to build a model FROM (--target sdk;
#             examples/custom-model/Dockerfile builds FROM sdk and runs FROM trainer)
#
#   docker build --target operator -t taas/operator:0.1.0 .
#   docker build --target trainer  -t taas/trainer:0.1.0 .
#   docker build --target trainer-cuda -t taas/trainer-cuda:0.1.0 .
#   docker build --target sdk      -t taas/sdk:0.1.0 .
#   buildah bud --layers --target trainer -t taas/trainer:0.1.0 .   # daemonless, same file
#
# Runtime images (operator, trainer) hold no compiler, no headers and no package manager caches, and run as the
# unprivileged user taas (uid 10001). Their shared libraries are the Debian runtime packages the
# built binaries link, found by scripts/packaging/runtime-packages.sh in the builder, so the
# list never goes stale.
ARG BASE_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS builder
ENV DEBIAN_FRONTEND=noninteractive \
    TAAS_CACHE=/var/cache/taas \
    TAAS_BUILD=/src/taas/build
WORKDIR /src/taas
# The whole tree first: setup fragments may read component files (e.g. web-ui/package.json).
COPY . .
# The README's setup script, less the fragments that only tests need (the test control plane,
# Helm) and the CUDA wheels (builder-cuda's): they are removed from this copy of the tree before
# it runs. LibTorch (46-libtorch) stays, for the torch engine and its trainer; it downloads with
# the Python venv of 40-python (whose TensorBoard, for a test, comes along: a few MB).
ARG TAAS_SETUP_SKIP="30-kubernetes 45-cuda 60-packaging"
RUN for fragment in $TAAS_SETUP_SKIP; do rm -f "scripts/setup.d/$fragment.sh"; done \
 && scripts/setup.sh
# (bash explicitly: the OCI image format has no SHELL instruction.)
RUN bash -euo pipefail -c 'source scripts/lib/common.sh; source scripts/lib/build.sh; taas_build'

# ---------------------------------------------------------------------------------------------
# What the runtime stages copy: binaries (stripped), web UI, runtime package list.
FROM builder AS staging
RUN TAAS_TORCH_LIB_ROOT="$(bash -c 'source scripts/lib/common.sh; echo "$TAAS_TORCH_DIR"')" \
    scripts/packaging/stage-install.sh "$TAAS_BUILD" /out
# The SDK (sdk/CMakeLists.txt): headers, libraries, CMake package, pkg-config file, launcher and
# template. Its files find each other by relative paths, so it moves to /opt/taas as it is.
RUN cmake --install "$TAAS_BUILD" --prefix /out/sdk
# LibTorch's C++ parts for the sdk image, where the package finds them through TAAS_TORCH_ROOT.
RUN bash -c 'source scripts/lib/common.sh; mkdir -p /out/libtorch; cp -a "$TAAS_TORCH_DIR/torch" /out/libtorch/'

# ---------------------------------------------------------------------------------------------
# The CUDA build: the builder plus the CUDA wheels (scripts/setup.d/45-cuda.sh, installed with the
# Python venv of 40-python), the tree built again with TAAS_WITH_CUDA in its own folder (ccache
# keeps the C++ of the first build), staged with the NVIDIA libraries the trainers load.
FROM builder AS builder-cuda
COPY scripts/setup.d/45-cuda.sh scripts/setup.d/
RUN scripts/setup.sh
ENV TAAS_BUILD=/src/taas/build-cuda
RUN bash -euo pipefail -c 'source scripts/lib/common.sh; source scripts/lib/build.sh; taas_build \
 && TAAS_CUDA_LIB_ROOT="$TAAS_CUDA_DIR/nvidia" TAAS_TORCH_LIB_ROOT="$TAAS_TORCH_DIR" \
    scripts/packaging/stage-install.sh "$TAAS_BUILD" /out'

# ---------------------------------------------------------------------------------------------
# What a model is built FROM: compiler, CMake, Ninja, pkg-config, the -dev packages the SDK's
# package config finds (sdk/debian-packages.txt) and the SDK in /opt/taas, found without options
# (CMAKE_PREFIX_PATH, PKG_CONFIG_PATH). Run the result FROM trainer (examples/custom-model).
FROM ${BASE_IMAGE} AS sdk
LABEL org.opencontainers.image.title="taas sdk" \
      org.opencontainers.image.description="taas SDK: build a model with find_package(taas) or pkg-config; run it FROM the trainer image"
COPY --from=builder /src/taas/sdk/debian-packages.txt /tmp/sdk-packages.txt
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $(cat /tmp/sdk-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/sdk-packages.txt
COPY --from=staging /out/sdk/ /opt/taas/
COPY --from=staging /out/libtorch/ /opt/libtorch/
ENV PATH=/opt/taas/bin:$PATH \
    TAAS_TORCH_ROOT=/opt/libtorch \
    CMAKE_PREFIX_PATH=/opt/taas \
    PKG_CONFIG_PATH=/opt/taas/lib/pkgconfig

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS runtime-base
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && groupadd --gid 10001 taas \
 && useradd --uid 10001 --gid taas --home-dir /home/taas --create-home \
      --shell /usr/sbin/nologin taas
ENV PATH=/opt/taas/bin:$PATH
COPY --from=staging /out/lib/ /opt/taas/lib/
ENV LD_LIBRARY_PATH=/opt/taas/lib
WORKDIR /home/taas
USER 10001:10001

# ---------------------------------------------------------------------------------------------
FROM runtime-base AS trainer
LABEL org.opencontainers.image.title="taas trainer" \
      org.opencontainers.image.description="taas trainer runtime and the example trainers; extend it FROM this image with your own model binary in /opt/taas/bin"
USER root
COPY --from=staging /out/trainer/runtime-packages.txt /tmp/runtime-packages.txt
# The runtime libraries the trainers load; the example jobs read Fashion-MNIST from
# /usr/share/datasets/fashion-mnist.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $(cat /tmp/runtime-packages.txt) dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/runtime-packages.txt
COPY --from=staging /out/trainer/bin/ /opt/taas/bin/
# LibTorch's libraries, which fashion-mnist-torch and a torch model built FROM sdk load.
COPY --from=staging /out/torch/lib/ /opt/taas/torch/lib/
ENV LD_LIBRARY_PATH=/opt/taas/lib:/opt/taas/torch/lib
USER 10001:10001
# Trainers serve gRPC on the TF_CONFIG port (2222 under the operator) and metrics on 9090.
EXPOSE 2222 9090
# Without TF_CONFIG a trainer runs alone: a single-process Fashion-MNIST training.
CMD ["/opt/taas/bin/fashion-mnist-cnn"]

# ---------------------------------------------------------------------------------------------
# The trainers on GPUs: a TFJob asks for nvidia.com/gpu (examples/fashion-mnist-cnn/job-gpu.yaml);
# the NVIDIA device plugin sets CUDA_VISIBLE_DEVICES and the container toolkit mounts the
# driver's libcuda for the capabilities named here; the runtime puts one model replica on each
# visible GPU (docs/trainer-runtime.md, "GPUs").
FROM runtime-base AS trainer-cuda
LABEL org.opencontainers.image.title="taas trainer (CUDA)" \
      org.opencontainers.image.description="taas trainer runtime and the example trainers built with CUDA, with the cuDNN, cuBLAS, NCCL and CUDA runtime libraries they load; the NVIDIA driver comes from the node"
USER root
COPY --from=builder-cuda /out/trainer/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $(cat /tmp/runtime-packages.txt) dataset-fashion-mnist \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/runtime-packages.txt
# The CUDA build's own libraries replace the plain build's of the same names.
COPY --from=builder-cuda /out/lib/ /opt/taas/lib/
COPY --from=builder-cuda /out/cuda/lib/ /opt/taas/cuda/lib/
COPY --from=builder-cuda /out/trainer/bin/ /opt/taas/bin/
COPY --from=builder-cuda /out/torch/lib/ /opt/taas/torch/lib/
ENV LD_LIBRARY_PATH=/opt/taas/lib:/opt/taas/cuda/lib:/opt/taas/torch/lib \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER 10001:10001
EXPOSE 2222 9090
CMD ["/opt/taas/bin/fashion-mnist-cnn"]

# ---------------------------------------------------------------------------------------------
FROM runtime-base AS operator
LABEL org.opencontainers.image.title="taas operator" \
      org.opencontainers.image.description="taas TFJob operator, UI/API server and web UI"
USER root
COPY --from=staging /out/operator/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $(cat /tmp/runtime-packages.txt) \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /tmp/runtime-packages.txt
COPY --from=staging /out/operator/bin/ /opt/taas/bin/
COPY --from=staging /out/operator/share/ /opt/taas/share/
USER 10001:10001
EXPOSE 8080 8081
ENTRYPOINT ["/opt/taas/bin/taas-operator"]
