# The commands the README names. Everything builds with the Rust toolchain alone.

CARGO ?= cargo
PREFIX ?= $(HOME)/.claude/engine/bin

.PHONY: all build release test demo bench install uninstall fmt lint check e2e clean

all: build

build:
	$(CARGO) build --workspace

release:
	$(CARGO) build --release --locked

## The full suite: unit tests, the assert_cmd suites, and the end-to-end scenarios when the
## Claude Code client is installed (they say so when they skip).
test:
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --locked --no-fail-fast && $(CARGO) test --workspace --locked --doc; \
	else \
		$(CARGO) test --workspace --locked --no-fail-fast; \
	fi

## Runs a whole preload lifecycle on the bundled example and prints the report.
demo: release
	@bash scripts/demo.sh

bench: release
	@bash scripts/bench.sh

install: release
	./target/release/preload install --prefix "$(PREFIX)"

uninstall:
	./target/release/preload uninstall

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

check: lint test

clean:
	$(CARGO) clean

## The end-to-end scenarios alone: the real Claude Code client (PRELOAD_E2E_CLAUDE, or the
## project-local install in .e2e/ that .ci/run makes) against a scripted model on loopback.
e2e:
	$(CARGO) test --locked --test e2e -- --nocapture
