# The commands the README names. Everything builds with the Rust toolchain alone.

CARGO ?= cargo
PREFIX ?= $(HOME)/.claude/engine/bin

.PHONY: all build release test demo bench bench-bash install uninstall plugin fmt lint doc check dist e2e e2e-setup e2e-engine parity soak clean dist-test test-aarch64 link-macos package npm npm-test

all: build

build:
	$(CARGO) build --workspace

## This machine's target, and where cargo puts what it builds.
HOST_TARGET := $(shell rustc -vV 2>/dev/null | sed -n 's/^host: //p')
BUILD_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)

## The release binaries, built for this machine's target (`--target`, so the flags below reach
## only them, not the build scripts and proc-macros), linked statically on Linux: each hook is a
## fresh process on every tool call (docs/performance.md, "Start-up").
## * With the musl target's standard library installed (`rustup target add x86_64-unknown-linux-musl`,
##   or this machine's architecture), they are built for musl (RELEASE_TARGET): its start does
##   not ask the CPU for its caches, as glibc's does with about 35 `cpuid` instructions, each a
##   trip to the hypervisor in a virtual machine (0.3 to 0.4 ms a process). GLIBC=1 keeps glibc.
## * Else, on Linux with glibc, they are linked statically when the C library's static archive
##   is installed (`libc.a`, in libc6-dev or glibc-static): loading libc and libgcc_s costs each
##   call about 0.3 ms. Without `libc.a` they are linked dynamically, as `cargo build --release`
##   does.
## Both are position-dependent executables, so nothing is relocated at start (about 0.1 ms and
## 27 page faults a process); PIE=1 links them position-independent (static-pie) instead, with
## the executable's image at a random address.
MUSL_TARGET := $(if $(GLIBC),,$(subst -linux-gnu,-linux-musl,$(filter %-linux-gnu,$(HOST_TARGET))))
HAS_MUSL := $(if $(MUSL_TARGET),$(wildcard $(shell rustc --print target-libdir --target $(MUSL_TARGET) 2>/dev/null)/libstd-*))
RELEASE_TARGET := $(if $(HAS_MUSL),$(MUSL_TARGET),$(HOST_TARGET))
STATIC_LIBC := $(if $(HAS_MUSL),musl,$(if $(findstring -linux-gnu,$(HOST_TARGET)),$(filter /%,$(wildcard $(shell cc -print-file-name=libc.a 2>/dev/null)))))
STATIC_FLAGS := -C target-feature=+crt-static $(if $(PIE),,-C relocation-model=static)
RELEASE_RUSTFLAGS := $(strip $(RUSTFLAGS) $(if $(STATIC_LIBC),$(STATIC_FLAGS)))
RELEASE_DIR := $(BUILD_DIR)/$(RELEASE_TARGET)/release
RELEASE_CARGO := RUSTFLAGS="$(RELEASE_RUSTFLAGS)" $(CARGO)

## The release is one binary, `preload`, installed under every hook binary's name beside it
## (hard links): started under a hook's name it runs that hook (`preload_cli::multi_call`), as
## every binary of the package does. One link with LTO instead of twelve: a clean build on 2
## cores takes about a third of the time. The hook names are the package's other binaries
## (Cargo.toml, kept the table of hooks' by a test).
PACKAGE_BINARIES := $(shell sed -n '/^\[\[bin\]\]/{n;s/^name = "\(.*\)"/\1/p;}' Cargo.toml)
HOOK_BINARIES := $(filter-out preload,$(PACKAGE_BINARIES))

release:
	$(RELEASE_CARGO) build --release --locked --target $(RELEASE_TARGET) --bin preload
	@cd "$(RELEASE_DIR)" && for name in $(HOOK_BINARIES); do ln -f preload "$$name"; done

## Where the end-to-end scenarios record whether they ran, for the summary line of `make test`.
E2E_STATUS ?= $(CURDIR)/target/e2e-status

## The full suite: unit tests, the assert_cmd suites, and the end-to-end scenarios against the
## real Claude Code client (`make e2e-setup` installs it). Ends with one line saying how many
## scenarios ran and why the others did not. PRELOAD_E2E=require makes a scenario that cannot
## run fail instead (.ci/run sets it).
## The scenarios that also run with `preload install --dispatch` (PRELOAD_WIRING=dispatch: one
## process per event): the pipeline suites, and every real-client scenario of the product's own
## wiring (not the `if` filters, which only the per-binary wiring has, nor the plugin's; the
## real-engine ones are opt-in), held to the same windows as the per-binary wiring.
DISPATCH_SUITES := delivery::pipeline hooks::every_hook hooks::session_start hooks::prompt_submit hooks::templates hooks::phase_commands delivery::seed_cases delivery::changes delivery::engine_interplay delivery::long_texts delivery::packs cli::session hooks::session_end hooks::subagent_start hooks::dispatch
DISPATCH_E2E := scenarios:: guards:: fleet:: modes:: subagents:: harness:: codex:: branches::
space := $(empty) $(empty)
DISPATCH_FILTER := (binary(tests) & test(/^($(subst $(space),|,$(DISPATCH_SUITES)))::/)) | (binary(e2e) & test(/^($(subst $(space),|,$(DISPATCH_E2E)))/)) | binary(lifecycles)
## Generated lifecycles under --dispatch in make test (the per-binary run has 150), and as the
## Codex CLI runs the hooks (PRELOAD_CLIENT=codex: its shell and patches, no skills, a compaction
## that keeps no call).
DISPATCH_LIFECYCLE_CASES := 75
CODEX_LIFECYCLE_CASES := 50

## make test first installs the pinned Claude Code client into .e2e/ when it can (npm and its
## registry reachable; `make test E2E_SETUP=0` skips that), so the end-to-end scenarios run.
E2E_SETUP ?= 1

## The suites that also run against the release binaries `make install` ships (the static musl
## build on Linux; PRELOAD_TEST_BIN_DIR), after the debug run: every hook suite, and generated
## lifecycles (RELEASE_LIFECYCLE_CASES of them).
RELEASE_TESTS := --test tests --test lifecycles
RELEASE_LIFECYCLE_CASES := 50

test:
	@if [ "$(E2E_SETUP)" = 1 ]; then tests/e2e/setup.sh --when-possible; fi
	@rm -rf "$(E2E_STATUS)"; status=0; \
	if $(CARGO) nextest --version >/dev/null 2>&1; then \
		PRELOAD_E2E_STATUS="$(E2E_STATUS)" $(CARGO) nextest run --workspace --locked --no-fail-fast || status=$$?; \
		$(CARGO) test --workspace --locked --doc || status=$$?; \
		PRELOAD_WIRING=dispatch PRELOAD_LIFECYCLE_CASES=$(DISPATCH_LIFECYCLE_CASES) $(CARGO) nextest run --locked --no-fail-fast --test tests --test e2e --test lifecycles -E '$(DISPATCH_FILTER)' || status=$$?; \
		PRELOAD_CLIENT=codex PRELOAD_LIFECYCLE_CASES=$(CODEX_LIFECYCLE_CASES) $(CARGO) nextest run --locked --no-fail-fast --test lifecycles -E 'test(generated_lifecycles)' || status=$$?; \
		$(MAKE) --no-print-directory release || status=$$?; \
		PRELOAD_TEST_BIN_DIR="$(RELEASE_DIR)" PRELOAD_LIFECYCLE_CASES=$(RELEASE_LIFECYCLE_CASES) $(CARGO) nextest run --locked --no-fail-fast $(RELEASE_TESTS) || status=$$?; \
	else \
		PRELOAD_E2E_STATUS="$(E2E_STATUS)" $(CARGO) test --workspace --locked --no-fail-fast || status=$$?; \
		PRELOAD_WIRING=dispatch $(CARGO) test --locked --no-fail-fast --test tests --test e2e -- $(DISPATCH_SUITES:%=%::) $(DISPATCH_E2E) || status=$$?; \
		PRELOAD_WIRING=dispatch PRELOAD_LIFECYCLE_CASES=$(DISPATCH_LIFECYCLE_CASES) $(CARGO) test --locked --no-fail-fast --test lifecycles || status=$$?; \
		PRELOAD_CLIENT=codex PRELOAD_LIFECYCLE_CASES=$(CODEX_LIFECYCLE_CASES) $(CARGO) test --locked --no-fail-fast --test lifecycles generated_lifecycles || status=$$?; \
		$(MAKE) --no-print-directory release || status=$$?; \
		PRELOAD_TEST_BIN_DIR="$(RELEASE_DIR)" PRELOAD_LIFECYCLE_CASES=$(RELEASE_LIFECYCLE_CASES) $(CARGO) test --locked --no-fail-fast $(RELEASE_TESTS) || status=$$?; \
	fi; \
	tests/e2e/summary.sh "$(E2E_STATUS)"; \
	exit $$status

## make soak [MINUTES=10]: the generated lifecycles (tests/lifecycles) against the model of the
## client, new seeds until the time is up: MINUTES in all, a third of it each with the hook
## binaries, with PRELOAD_WIRING=dispatch, and as the Codex CLI runs them (PRELOAD_CLIENT=codex).
## Each run prints its seed; a failure prints the seed, the shrunk sequence as Rust code for
## tests/lifecycles/regressions.rs and the invariant.
MINUTES ?= 10
soak:
	@third=$$(( $(MINUTES) * 20 )); status=0; \
	echo "soak: $(MINUTES) minutes, $$third s per wiring and client"; \
	PRELOAD_SOAK_SECONDS=$$third $(CARGO) test --locked --test lifecycles soak_generated_lifecycles -- --ignored --nocapture || status=$$?; \
	PRELOAD_WIRING=dispatch PRELOAD_SOAK_SECONDS=$$third $(CARGO) test --locked --test lifecycles soak_generated_lifecycles -- --ignored --nocapture || status=$$?; \
	PRELOAD_CLIENT=codex PRELOAD_SOAK_SECONDS=$$third $(CARGO) test --locked --test lifecycles soak_generated_lifecycles -- --ignored --nocapture || status=$$?; \
	exit $$status

## Runs a whole preload lifecycle on the bundled example through the release binaries and
## prints the report (in a temporary HOME; nothing outside it is touched).
demo: release
	$(RELEASE_CARGO) run --release --locked --quiet --target $(RELEASE_TARGET) --example demo

## Times every hook against the process-spawn floor; see docs/performance.md.
bench: release
	BENCH_BIN_DIR="$(RELEASE_DIR)" $(CARGO) bench --locked --bench hooks

## make bench-bash ENGINE=/path/to/engine [JQ=/path/to/jq]: the engine's bash hooks beside the
## binaries that replace them, on the same inputs (docs/performance.md).
bench-bash: release
	BIN="$(RELEASE_DIR)" ENGINE="$(ENGINE)" JQ="$(JQ)" support/bench-bash.sh

## make install PROJECT=/path/to/project [SHIMS=1] [PREFIX=dir]: copy the binaries to PREFIX and
## wire them into PROJECT/.claude/settings.local.json (or write the bash shims with SHIMS=1).
install: release
	@test -n "$(PROJECT)" || { echo "usage: make install PROJECT=/path/to/your/project [SHIMS=1] [PREFIX=dir]"; exit 2; }
	cd "$(PROJECT)" && "$(RELEASE_DIR)/preload" install --prefix "$(PREFIX)" $(if $(SHIMS),--shims,)

## make uninstall PROJECT=/path/to/project: take the wiring out again (binaries stay in PREFIX).
uninstall:
	@test -n "$(PROJECT)" || { echo "usage: make uninstall PROJECT=/path/to/your/project"; exit 2; }
	cd "$(PROJECT)" && "$(RELEASE_DIR)/preload" uninstall --prefix "$(PREFIX)"

## Where `make plugin` writes the Claude Code plugin.
PLUGIN_DIR ?= $(CURDIR)/target/plugin

## make plugin [PLUGIN_DIR=dir]: the hooks as a Claude Code plugin directory (manifest,
## hooks/hooks.json from the same wiring table as `preload install`, this machine's binary in
## bin/<platform>/ and the launcher, a one-plugin marketplace), for `claude --plugin-dir DIR` or
## `/plugin marketplace add DIR`; `make dist` writes the one of every platform. docs/install.md.
plugin: release
	"$(RELEASE_DIR)/preload" plugin "$(PLUGIN_DIR)"

fmt:
	$(CARGO) fmt --all
	$(CARGO) fmt --all --manifest-path fuzz/Cargo.toml

## The macOS targets the code is also linted for (only their standard libraries are needed:
## `rustup target add aarch64-apple-darwin x86_64-apple-darwin`; nothing is linked).
MACOS_TARGETS ?= aarch64-apple-darwin x86_64-apple-darwin

## Formatting (the workspace and the fuzz targets), clippy with warnings as errors (for this
## machine, then for both macOS targets: the platform code and everything else as it compiles
## there; and the library and binaries for musl, when `make release` builds for it), a
## compile check of the fuzz targets (their own workspace; stable is enough, libFuzzer is built
## but never run), the GitHub workflows checked by actionlint (with ShellCheck for their
## scripts) and the release scripts and the plugin's launcher by ShellCheck (support/dist-tools.sh --actionlint installs
## both from PyPI into .tools/).
lint:
	$(CARGO) fmt --all --check
	$(CARGO) fmt --all --check --manifest-path fuzz/Cargo.toml
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) check --locked --manifest-path fuzz/Cargo.toml
	for target in $(MACOS_TARGETS); do \
		$(CARGO) clippy --workspace --all-targets --locked --target $$target -- -D warnings || exit 1; \
	done
	$(if $(HAS_MUSL),$(CARGO) clippy --workspace --lib --bins --locked --target $(MUSL_TARGET) -- -D warnings)
	support/dist-tools.sh --actionlint "$(DIST_TOOLS)"
	PATH="$(DIST_TOOLS)/bin:$$PATH" actionlint .github/workflows/*.yml
	"$(DIST_TOOLS)/bin/shellcheck" support/dist.sh support/dist-tools.sh support/dist-test.sh .ci/run crates/preload-cli/src/plugin/launch.sh

## The API docs, with warnings as errors.
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked

## Everything CI checks: lint, docs, the full suite, the demo, and the npm packages installed
## and used without a Rust toolchain (npm-test).
check: lint doc test demo npm-test

## make parity ENGINE=/path/to/engine [JQ=/path/to/jq]: the engine's own black-box hook suites,
## on its bash hooks and on ours (installed with --shims), side by side; see docs/parity.md.
parity: release
	BIN="$(RELEASE_DIR)" ENGINE="$(ENGINE)" JQ="$(JQ)" support/parity.sh

clean:
	$(CARGO) clean

## The targets `make dist` packages: static Linux executables (musl) for x86_64 and aarch64, and
## macOS on Intel and on Apple silicon.
DIST_TARGETS ?= x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-apple-darwin aarch64-apple-darwin
DIST_DIR ?= $(CURDIR)/target/dist
## Where support/dist-tools.sh installs the build's own pinned tools (zig, cargo-zigbuild, the
## workflow linter; gitignored, kept by `make clean`).
DIST_TOOLS ?= $(CURDIR)/.tools
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
## macOS binaries are built for macOS 11 and later.
MACOSX_DEPLOYMENT_TARGET ?= 11.0
DIST_ENV = DIST_TARGETS="$(DIST_TARGETS)" DIST_DIR="$(DIST_DIR)" DIST_TOOLS="$(DIST_TOOLS)" \
	VERSION="$(VERSION)" BINARIES="$(PACKAGE_BINARIES)" RELEASE_TARGET="$(RELEASE_TARGET)" \
	RELEASE_RUSTFLAGS="$(RELEASE_RUSTFLAGS)" STATIC_FLAGS="$(STATIC_FLAGS)" RUSTFLAGS="$(RUSTFLAGS)" \
	MACOSX_DEPLOYMENT_TARGET="$(MACOSX_DEPLOYMENT_TARGET)" CARGO="$(CARGO)" BUILD_DIR="$(BUILD_DIR)"

## make dist [DIST_TARGETS="..."]: one tarball per target in target/dist/,
## preload-hooks-<version>-<target>.tar.gz, each with bin/ (`preload` under every name of the
## twelve binaries, as `make release` makes it), README.md, CHANGELOG.md, LICENSE,
## docs/install.md and hooks/ (settings.json, guards.json, shims/); a `sha256sum -c` file beside
## each; preload-hooks-<version>-plugin.tar.gz, the Claude Code plugin carrying every target's
## binary (written by the one built for this machine, when a target runs here); and SHA256SUMS
## for them all. It first installs what it needs (support/dist-tools.sh:
## the targets' standard libraries with rustup and, for macOS, zig and cargo-zigbuild from PyPI),
## links this machine's own targets with its linker, another Linux target with the toolchain's
## rust-lld and macOS with zig, and
## ends by checking every tarball (support/check-dist.py: the format, architecture and static
## linking of each binary, macOS's minimum version and libraries, `--version` under every name
## where this machine runs it). See docs/install.md, "Release tarballs".
dist:
	@$(DIST_ENV) support/dist.sh

## Installs the Claude Code client the end-to-end scenarios are pinned to into .e2e/ (npm).
e2e-setup:
	tests/e2e/setup.sh

## The end-to-end scenarios alone: the real Claude Code client (PRELOAD_E2E_CLAUDE, or the
## project-local install `make e2e-setup` makes) against a scripted model on loopback.
e2e:
	@rm -rf "$(E2E_STATUS)"; status=0; \
	PRELOAD_E2E_STATUS="$(E2E_STATUS)" $(CARGO) test --locked --test e2e -- --nocapture || status=$$?; \
	tests/e2e/summary.sh "$(E2E_STATUS)"; \
	exit $$status

## make e2e-engine ENGINE=/path/to/engine/checkout [JQ=/path/to/jq]: the opt-in end-to-end scenario
## against the real engine (idealic-ai/engine): the checkout installed in a throwaway HOME by its
## own setup functions, the product installed over it, the pinned client through /implement,
## /compact and a plain resume, judged point by point (docs/e2e.md). The engine's scripts need
## jq 1.7 or newer (JQ, else the first jq on PATH). Nothing of the engine enters this repository.
e2e-engine:
	@test -n "$(ENGINE)" || { echo "usage: make e2e-engine ENGINE=/path/to/engine/checkout [JQ=/path/to/jq 1.7+]"; exit 2; }
	@rm -rf "$(E2E_STATUS)"; status=0; \
	PRELOAD_E2E_ENGINE="$(ENGINE)" PRELOAD_E2E_JQ="$(JQ)" PRELOAD_E2E_STATUS="$(E2E_STATUS)" \
		$(CARGO) test --locked --test e2e real_engine -- --nocapture || status=$$?; \
	tests/e2e/summary.sh "$(E2E_STATUS)"; \
	exit $$status

## make dist-test [DIST_TARGETS="..."]: `make dist` in an empty environment (`env -i`: a new
## HOME, no RUSTFLAGS), into target/dist-test/, then its tarballs checked, every Linux binary
## run under each of its names (the aarch64 ones under qemu's user mode), and the check itself
## shown to refuse a wrong minimum macOS version and a changed checksum (support/dist-test.sh).
dist-test:
	@DIST_TOOLS="$(DIST_TOOLS)" MACOSX_DEPLOYMENT_TARGET="$(MACOSX_DEPLOYMENT_TARGET)" \
		support/dist-test.sh "$(CURDIR)/target/dist-test" $(DIST_TARGETS)

## make test-aarch64 [AARCH64_TESTS="--test tests --test lifecycles"]: the aarch64 Linux tarball
## as `make dist-test` builds and checks it, unpacked, and the hook suites run against its
## binaries (PRELOAD_TEST_BIN_DIR, as `make test` runs RELEASE_TESTS) under qemu's user mode:
## directly where binfmt_misc already runs them, else in a private user namespace with its own
## binfmt_misc entry (support/emulate.py). Installs qemu-user-static with apt-get when missing.
AARCH64_TARGET := aarch64-unknown-linux-musl
AARCH64_TESTS ?= --test tests
AARCH64_DIR := $(CURDIR)/target/test-aarch64
test-aarch64:
	@support/dist-test.sh "$(AARCH64_DIR)/dist" $(AARCH64_TARGET)
	@support/dist-tools.sh --qemu "$(DIST_TOOLS)"
	@rm -rf "$(AARCH64_DIR)/unpacked" && mkdir -p "$(AARCH64_DIR)/unpacked" && \
		tar -xzf "$(AARCH64_DIR)/dist/preload-hooks-$(VERSION)-$(AARCH64_TARGET).tar.gz" -C "$(AARCH64_DIR)/unpacked"
	@bin="$(AARCH64_DIR)/unpacked/preload-hooks-$(VERSION)-$(AARCH64_TARGET)/bin"; started=$$(date +%s); \
	if $(CARGO) nextest --version >/dev/null 2>&1; then run="$(CARGO) nextest run"; else run="$(CARGO) test"; fi; \
	PRELOAD_TEST_BIN_DIR="$$bin" PRELOAD_LIFECYCLE_CASES=$(RELEASE_LIFECYCLE_CASES) \
		python3 support/emulate.py --probe "$$bin/preload" -- $$run --locked --no-fail-fast $(AARCH64_TESTS); \
	status=$$?; echo "test-aarch64: $(AARCH64_TESTS) against $$bin under emulation: $$(( $$(date +%s) - started )) s, exit $$status"; \
	exit $$status

## make link-macos: the test binaries of the whole workspace (and the release binaries' code as
## the tests build it) compiled and linked for both macOS targets with zig (`cargo test
## --no-run` through cargo-zigbuild): what clippy checks, linked as a Mac would link it.
link-macos:
	@support/dist-tools.sh "$(DIST_TOOLS)" $(MACOS_TARGETS)
	@for target in $(MACOS_TARGETS); do \
		PYTHONPATH="$(DIST_TOOLS)/zig" CARGO_ZIGBUILD_ZIG_PATH="$(DIST_TOOLS)/bin/zig" CARGO_ZIGBUILD_CACHE_DIR="$(DIST_TOOLS)/cache" \
			MACOSX_DEPLOYMENT_TARGET="$(MACOSX_DEPLOYMENT_TARGET)" \
			"$(DIST_TOOLS)/bin/cargo-zigbuild" test --workspace --locked --no-run --target $$target || exit 1; \
	done

## make package: the three crates users get, as the crate registry would get them (`cargo package
## --workspace`, the test-support crate left out: each one's files, with its path dependencies taken as registry versions), each
## built from its own package alone. Cargo takes a registry crate of a given name and version to
## be immutable: it reuses the copy it unpacked under $CARGO_HOME/registry/src/ and what it built
## from it, and the temporary registry's path is the same on every run. So every run builds in
## a target directory of its own, removed first, and removes the copies of our crates an earlier
## run unpacked: without that, a crate is checked against the sources of an older commit.
PACKAGE_DIR := $(BUILD_DIR)/package-check
package:
	@rm -rf "$${CARGO_HOME:-$$HOME/.cargo}"/registry/src/-*/preload-core-* "$${CARGO_HOME:-$$HOME/.cargo}"/registry/src/-*/preload-cli-* "$(PACKAGE_DIR)"
	$(CARGO) package --workspace --exclude preload-test-support --locked --target-dir "$(PACKAGE_DIR)"

## Where `make npm` writes the npm packages, and the targets it packs (narrow it with
## NPM_TARGETS="x86_64-unknown-linux-musl" when only some tarballs were built).
NPM_DIR ?= $(CURDIR)/target/npm
NPM_TARGETS ?= $(DIST_TARGETS)
NPM_ENV = DIST_DIR="$(DIST_DIR)" NPM_DIR="$(NPM_DIR)" VERSION="$(VERSION)" NPM_TARGETS="$(NPM_TARGETS)" \
	LICENSE_ID="$$(sed -n 's/^license = "\(.*\)"/\1/p' Cargo.toml | head -n 1)" \
	REPOSITORY="$$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"

## make npm [NPM_TARGETS="..."] [DIST_DIR=dir]: the npm packages (`npm pack`) from the tarballs
## of `make dist`, into target/npm/: preload-hooks-<version>.tgz (the `preload` command, a node
## launcher of the native binary, with the four platform packages as optional dependencies) and
## preload-hooks-<os>-<cpu>-<version>.tgz for each target (`os`, `cpu` and bin/preload). A
## target whose tarball is missing stops it, naming the tarball (support/npm-pack.sh).
npm:
	@$(NPM_ENV) support/npm-pack.sh

## make npm-test: the npm packages as a user without a Rust toolchain gets them, for this
## machine's platform: its release tarball (`make dist` for its one target, into
## target/npm-test/, reusing the release build), packed by `make npm`, installed with npm from
## those files (no network) in a sandbox with its own HOME and npm prefix and no cargo on PATH,
## then `preload install`, `preload doctor --canary`, a SessionStart and a Read through the
## wired commands, `npm uninstall` and `preload uninstall` (support/npm-test.mjs). Without node
## and npm it says so and passes, unless PRELOAD_E2E=require (.ci/run) makes that a failure.
NPM_TEST_DIR := $(CURDIR)/target/npm-test
NPM_TEST_TARGET := $(patsubst %,%-unknown-linux-musl,$(filter x86_64 aarch64,$(shell uname -m | sed 's/arm64/aarch64/')))
NPM_TEST_TARGET := $(if $(filter Darwin,$(shell uname -s)),$(shell uname -m | sed 's/arm64/aarch64/')-apple-darwin,$(NPM_TEST_TARGET))
NPM_TEST_PLATFORM := $(subst aarch64,arm64,$(subst x86_64,x64,$(if $(findstring darwin,$(NPM_TEST_TARGET)),darwin,linux)-$(firstword $(subst -, ,$(NPM_TEST_TARGET)))))
npm-test:
	@if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then \
		if [ "$(PRELOAD_E2E)" = require ]; then echo "npm-test: FAILED: node and npm are needed (PRELOAD_E2E=require)"; exit 1; fi; \
		echo "npm-test: did not run: no node and npm here"; exit 0; \
	fi
	@test -n "$(NPM_TEST_TARGET)" || { echo "npm-test: no npm platform package for $$(uname -sm)"; exit 1; }
	@started=$$(date +%s); \
	$(MAKE) --no-print-directory dist DIST_TARGETS=$(NPM_TEST_TARGET) DIST_DIR="$(NPM_TEST_DIR)/dist" >"$(NPM_TEST_DIR).dist.log" 2>&1 \
		|| { cat "$(NPM_TEST_DIR).dist.log"; echo "npm-test: FAILED: make dist for $(NPM_TEST_TARGET)"; exit 1; }; \
	echo "npm-test: $(NPM_TEST_TARGET) tarball in $$(( $$(date +%s) - started )) s"; \
	$(MAKE) --no-print-directory npm DIST_DIR="$(NPM_TEST_DIR)/dist" NPM_DIR="$(NPM_TEST_DIR)/npm" NPM_TARGETS=$(NPM_TEST_TARGET) && \
	node support/npm-test.mjs "$(NPM_TEST_DIR)/npm" $(NPM_TEST_PLATFORM) $(VERSION)
