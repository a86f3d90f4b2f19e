# Clipforge: `make run` and `make test` do everything on a fresh Debian machine.
SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(HOME)/.cache/clipforge/target
export CMAKE_PARALLEL ?= $(shell nproc)
CARGO ?= cargo
CARGO_FLAGS ?= --release --locked
BIN := $(CARGO_TARGET_DIR)/release/clipforge

.PHONY: setup setup-test console build clip run openapi test client-check bench-pipeline bench-asr bench-quality bench-api bench-edit bench-schedule bench-cluster fmt

setup:
	@bash scripts/setup.sh

setup-test:
	@bash scripts/setup.sh --test

# The web console (web/, npm + Vite), embedded in the binary by the build
# below; rebuilt only when its sources, lock file or the OpenAPI document change.
WEB_SRC := $(shell find web/src -type f ! -name schema.d.ts 2>/dev/null) web/index.html \
	web/package.json web/tsconfig.json web/vite.config.ts openapi/openapi.json
console: web/dist/index.html
# `npm install` on the committed lock (it installs exactly what the lock
# says): npm 11's `npm ci` refuses this lock because npm writes only this
# platform's optional rollup binary into it.
web/node_modules/.package-lock.json: web/package-lock.json
	cd web && npm install --no-audit --no-fund
web/dist/index.html: web/node_modules/.package-lock.json $(WEB_SRC)
	cd web && npm run build

build: setup console
	$(CARGO) build $(CARGO_FLAGS) --workspace --bins

# Runs the pipeline on a file or URL without a server: make clip IN=video.mp4 [OUT=clips]
clip: build
	$(BIN) clip "$(IN)" --out "$(or $(OUT),clips)"

# Starts the service with the embedded defaults (sled + local storage, one
# node, port 8080): PORT=0 picks a free port.
run: build
	$(BIN) serve --port $(or $(PORT),8080)

openapi: build
	$(BIN) openapi openapi/openapi.json

# The Rust tests (tests/schemathesis.rs runs schemathesis against a real
# server; tests/console.rs drives the console in Chromium), then the
# TypeScript client check.
test: setup-test console
	$(CARGO) test $(CARGO_FLAGS) --workspace --no-fail-fast -- --test-threads=2
	$(MAKE) client-check

# A TypeScript client generated from openapi/openapi.json (openapi-typescript)
# type-checks against clients/typescript/calls.ts, which calls every operation.
client-check:
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent check

bench-pipeline: setup-test
	bash scripts/bench-pipeline.sh

# Our transcription against faster-whisper 1.2.1 on ../shared/media and the
# bench talk: languages, seconds, words each lost against the other.
bench-asr: setup-test
	bash scripts/bench-asr.sh

# clipforge clip on ../shared/media: framing, captions off faces, boundaries, titles (issue 28).
bench-quality: setup-test
	bash scripts/bench-quality.sh

# wrk on the API against the bare route; RSS of 100,000 idle accounts.
bench-api: setup
	bash scripts/bench-api.sh

# The clip editor: re-rendering one clip against its bare encode.
bench-edit: build
	bash scripts/bench-edit.sh

bench-schedule: build
	bash scripts/bench-schedule.sh

# The same batch through one and two worker nodes pinned to a core each.
bench-cluster: setup-test
	bash scripts/bench-cluster.sh

fmt:
	$(CARGO) fmt --all
