# The commands the README names. Everything builds with the Rust toolchain alone.

CARGO ?= cargo
PREFIX ?= $(HOME)/.claude/engine/bin

.PHONY: all build release test demo bench install uninstall fmt lint check e2e parity clean

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

## Runs a whole preload lifecycle on the bundled example through the release binaries and
## prints the report (in a temporary HOME; nothing outside it is touched).
demo: release
	$(CARGO) run --release --locked --quiet --example demo

## Times every hook against the process-spawn floor; see docs/performance.md.
bench:
	$(CARGO) bench --locked --bench hooks

## make install PROJECT=/path/to/project [SHIMS=1] [PREFIX=dir]: copy the binaries to PREFIX and
## wire them into PROJECT/.claude/settings.local.json (or write the bash shims with SHIMS=1).
install: release
	@test -n "$(PROJECT)" || { echo "usage: make install PROJECT=/path/to/your/project [SHIMS=1] [PREFIX=dir]"; exit 2; }
	cd "$(PROJECT)" && "$(CURDIR)/target/release/preload" install --prefix "$(PREFIX)" $(if $(SHIMS),--shims,)

## make uninstall PROJECT=/path/to/project: take the wiring out again (binaries stay in PREFIX).
uninstall:
	@test -n "$(PROJECT)" || { echo "usage: make uninstall PROJECT=/path/to/your/project"; exit 2; }
	cd "$(PROJECT)" && "$(CURDIR)/target/release/preload" uninstall --prefix "$(PREFIX)"

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

check: lint test

## make parity ENGINE=/path/to/engine [JQ=/path/to/jq]: the engine's own black-box hook suites,
## on its bash hooks and on ours (installed with --shims), side by side; see docs/parity.md.
parity: release
	ENGINE="$(ENGINE)" JQ="$(JQ)" support/parity.sh

clean:
	$(CARGO) clean

## The end-to-end scenarios alone: the real Claude Code client (PRELOAD_E2E_CLAUDE, or the
## project-local install in .e2e/ that .ci/run makes) against a scripted model on loopback.
e2e:
	$(CARGO) test --locked --test e2e -- --nocapture
