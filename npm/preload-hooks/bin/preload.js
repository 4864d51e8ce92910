#!/usr/bin/env node
// The `preload` command of the npm package: runs the native binary of this machine's platform
// package (@preload-hooks/<os>-<cpu>, an optional dependency; npm installs the one whose `os`
// and `cpu` match). Only the command line goes through here: `preload install` copies the
// native binary into ~/.claude/engine/bin and wires the hooks to those copies, so no hook call
// starts node.
"use strict";

const { spawn } = require("child_process");
const { existsSync } = require("fs");
const { constants } = require("os");
const path = require("path");

const PLATFORM_PACKAGES = {
  "linux-x64": "@preload-hooks/linux-x64",
  "linux-arm64": "@preload-hooks/linux-arm64",
  "darwin-x64": "@preload-hooks/darwin-x64",
  "darwin-arm64": "@preload-hooks/darwin-arm64",
};

function fail(message) {
  process.stderr.write(`preload: ${message}\n`);
  process.exit(1);
}

function nativeBinary() {
  const platform = `${process.platform}-${process.arch}`;
  const name = PLATFORM_PACKAGES[platform];
  if (!name) {
    fail(
      `no native build for ${platform}; there are builds for ${Object.keys(PLATFORM_PACKAGES).join(", ")}`,
    );
  }
  let root;
  try {
    root = path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    fail(
      `the package ${name} is not installed (npm installs it as an optional dependency: was ` +
        "it installed with --omit=optional or --no-optional?); reinstall: npm install -g preload-hooks",
    );
  }
  const binary = path.join(root, "bin", "preload");
  if (!existsSync(binary)) {
    fail(`${binary} is missing; reinstall: npm install -g preload-hooks`);
  }
  return binary;
}

const binary = nativeBinary();
const args = process.argv.slice(2);

// Where node can replace itself by the binary (node 22.15 and later), it does: the binary then
// gets the signals and exit status directly.
if (typeof process.execve === "function") {
  process.execve(binary, [binary, ...args], process.env);
}

const child = spawn(binary, args, { stdio: "inherit" });
child.on("error", (err) => fail(`cannot run ${binary}: ${err.message}`));
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    try {
      child.kill(signal);
    } catch {
      // The child is gone already.
    }
  });
}
child.on("exit", (code, signal) => {
  if (signal) {
    process.exitCode = 128 + (constants.signals[signal] || 0);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code === null ? 1 : code);
  }
});
