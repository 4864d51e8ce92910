#!/usr/bin/env node
// `make npm-test`: the npm packages of `make npm`, installed and used as a user without a Rust
// toolchain would:
//
//   node support/npm-test.mjs NPM_DIR PLATFORM VERSION
//
// In a sandbox (a temporary HOME, npm prefix and cache; PATH holding node and npm only, so no
// cargo), `npm install -g --offline` takes preload-hooks and @preload-hooks/PLATFORM from
// NPM_DIR's tarballs (no network: the other platforms' packages, optional dependencies, are
// skipped). Then, in a project: `preload install` must wire every hook to a native binary under
// ~/.claude/engine/bin (the platform package's binary, byte for byte, never the node launcher
// or a path under the npm prefix); `preload doctor --canary` must pass; the wired SessionStart
// commands must put a core standard's marker in their answers once, and a Read's PreToolUse and
// PostToolUse commands a directive's marker once (a second Read neither); `npm uninstall -g`
// must leave the wired hooks running, and `doctor` must fail, naming the missing binaries, once
// the hooks are wired into the npm package's own directory and npm removes it; `preload
// uninstall` must take the wiring out. Exit 1 with the first failed check.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [npmArg, platform, version] = process.argv.slice(2);
const npmDir = npmArg && path.resolve(npmArg);
if (!npmDir || !platform || !version) {
  console.error("usage: node support/npm-test.mjs NPM_DIR PLATFORM VERSION");
  process.exit(2);
}
const started = Date.now();
const root = fs.mkdtempSync(path.join(os.tmpdir(), "preload-npm-test-"));
const home = path.join(root, "home");
const prefix = path.join(root, "npm-prefix");
const tools = path.join(root, "tools");
const project = path.join(home, "code", "app");
const engine = path.join(home, ".claude", "engine");
for (const dir of [home, prefix, tools, path.join(project, ".claude"), path.join(project, "sessions"), path.join(root, "tmp")]) {
  fs.mkdirSync(dir, { recursive: true });
}

// PATH: the npm prefix's bin/ and a directory with node and npm alone.
const which = (name) =>
  execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim();
fs.symlinkSync(process.execPath, path.join(tools, "node"));
fs.symlinkSync(fs.realpathSync(which("npm")), path.join(tools, "npm"));
const env = {
  HOME: home,
  PATH: `${path.join(prefix, "bin")}:${tools}`,
  TMPDIR: path.join(root, "tmp"),
  npm_config_prefix: prefix,
  npm_config_cache: path.join(root, "npm-cache"),
  npm_config_update_notifier: "false",
  // The hooks: one owner (this process), and every place they write inside the sandbox.
  CLAUDE_SUPERVISOR_PID: String(process.pid),
  CLAUDE_SESSION_CACHE_DIR: path.join(root, "session-cache"),
  PRELOAD_CACHE_DIR: path.join(root, "start-cache"),
  PRELOAD_MARKER_DIR: path.join(root, "markers"),
};

function run(command, args, { cwd = project, input = "", ok = true } = {}) {
  const result = spawnSync(command, args, { cwd, env, input, encoding: "utf8" });
  if (result.error) throw result.error;
  if (ok && result.status !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} exited ${result.status}\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

function step(what, check) {
  check();
  console.log(`npm-test: ok: ${what}`);
}

let failed = false;
try {
  step("the sandbox has no cargo", () => {
    const cargo = spawnSync("sh", ["-c", "command -v cargo"], { env });
    assert.notEqual(cargo.status, 0, "cargo is on the sandbox's PATH");
  });

  // The engine: the six core standards (COMMANDS.md carries marker A), skills, the default
  // rules' `preload` rule (no session is started, so the session gate stays out); the project's
  // src/.directives/AGENTS.md carries marker B.
  const markerA = `preload-npm-test-A-${process.pid}-${started}`;
  const markerB = `preload-npm-test-B-${process.pid}-${started}`;
  const standards = ["COMMANDS.md", "INVARIANTS.md", "SIGILS.md", "commands/CMD_DEHYDRATE.md",
    "commands/CMD_RESUME_SESSION.md", "commands/CMD_PARSE_PARAMETERS.md"];
  for (const rel of standards) {
    const file = path.join(engine, ".directives", rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, rel === "COMMANDS.md" ? `# Commands\n\n${markerA}\n` : `# ${rel}\n\nA standard.\n`);
  }
  fs.mkdirSync(path.join(home, ".claude", "skills"), { recursive: true });
  fs.symlinkSync(path.join(engine, ".directives"), path.join(home, ".claude", ".directives"));
  const rules = JSON.parse(fs.readFileSync(new URL("../hooks/guards.json", import.meta.url)));
  fs.writeFileSync(path.join(engine, "guards.json"), JSON.stringify(rules.filter((r) => r.id === "preload")));
  fs.mkdirSync(path.join(project, "src", ".directives"), { recursive: true });
  fs.writeFileSync(path.join(project, "src", ".directives", "AGENTS.md"), `# Agents\n\n${markerB}\n`);
  const main = path.join(project, "src", "main.txt");
  fs.writeFileSync(main, "a source file\n");

  const mainTarball = path.join(npmDir, `preload-hooks-${version}.tgz`);
  const platformTarball = path.join(npmDir, `preload-hooks-${platform}-${version}.tgz`);
  const npmInstall = () =>
    run("npm", ["install", "-g", "--offline", "--no-audit", "--no-fund", mainTarball, platformTarball], { cwd: root });
  const installMs = Date.now();
  npmInstall();
  const packageBinary = path.join(prefix, "lib", "node_modules", "@preload-hooks", platform, "bin", "preload");
  step(`npm install -g from the packed tarballs (offline, ${Date.now() - installMs} ms)`, () => {
    const launcher = fs.realpathSync(path.join(prefix, "bin", "preload"));
    assert.match(fs.readFileSync(launcher, "utf8"), /^#!\/usr\/bin\/env node/, "the command is the node launcher");
    assert.ok(fs.statSync(packageBinary).isFile(), `${packageBinary} is there`);
    assert.equal(run("preload", ["--version"]).stdout.trim(), `preload ${version}`);
  });

  const settingsFile = path.join(project, ".claude", "settings.local.json");
  const bin = path.join(engine, "bin");
  const packageBytes = fs.readFileSync(packageBinary);
  const commands = () => {
    const hooks = JSON.parse(fs.readFileSync(settingsFile, "utf8")).hooks;
    return Object.values(hooks).flatMap((groups) => groups.flatMap((g) => g.hooks.map((h) => h.command)));
  };
  step("preload install wires every hook to a native copy in ~/.claude/engine/bin", () => {
    const out = run("preload", ["install"]).stdout;
    assert.match(out, /^binaries: 12 /m, out);
    const wired = commands();
    assert.ok(wired.length >= 40, `${wired.length} handlers`);
    for (const command of new Set(wired)) {
      assert.equal(path.dirname(command), bin, command);
      assert.ok(!command.startsWith(prefix), `${command} is under the npm prefix`);
      const real = fs.realpathSync(command);
      assert.ok(!real.startsWith(prefix), `${command} resolves into the npm prefix (${real})`);
      const bytes = fs.readFileSync(real);
      assert.notEqual(bytes.subarray(0, 2).toString(), "#!", `${command} is a script`);
      assert.ok(bytes.equals(packageBytes), `${command} is not the platform package's binary`);
    }
  });

  step("preload doctor --canary passes", () => {
    const out = run("preload", ["doctor", "--canary"], { ok: false });
    assert.equal(out.status, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /canary: with the binaries in .*put a core standard's marker in its answers once/, out.stdout);
  });

  // Runs every handler the settings give `input` (matcher and `if` as the client applies them to
  // a startup SessionStart and a Read); their answers' texts, joined.
  const hooksFor = (input) => {
    const groups = JSON.parse(fs.readFileSync(settingsFile, "utf8")).hooks[input.hook_event_name] ?? [];
    const key = input.source ?? input.tool_name;
    return groups
      .filter((g) => !g.matcher || g.matcher === "*" || g.matcher.split("|").includes(key))
      .flatMap((g) => g.hooks)
      .filter((h) => !h.if || h.if === key || h.if.startsWith(`${key}(`));
  };
  const round = (input) => {
    const handlers = hooksFor(input);
    assert.ok(handlers.length > 0, `no handler for ${input.hook_event_name}`);
    return handlers
      .map((h) => {
        const out = run(h.command, h.args ?? [], { input: JSON.stringify(input) });
        if (!out.stdout.trim()) return "";
        const answer = JSON.parse(out.stdout);
        assert.notEqual(answer.hookSpecificOutput?.permissionDecision, "deny", JSON.stringify(answer));
        return JSON.stringify(answer);
      })
      .join("\n");
  };
  const count = (text, marker) => text.split(marker).length - 1;
  const base = { session_id: "npm-test", cwd: project, transcript_path: path.join(root, "t.jsonl") };
  step("the wired SessionStart commands put COMMANDS.md's marker in their answers once", () => {
    const text = round({ ...base, hook_event_name: "SessionStart", source: "startup" });
    assert.equal(count(text, markerA), 1, text.slice(0, 2000));
  });
  const read = (event) => ({
    ...base,
    hook_event_name: event,
    tool_name: "Read",
    tool_input: { file_path: main },
    ...(event === "PostToolUse" ? { tool_response: { type: "text", file: { filePath: main } } } : {}),
  });
  step("a Read through the wired PreToolUse and PostToolUse commands brings the directive once", () => {
    const first = round(read("PreToolUse")) + round(read("PostToolUse"));
    const second = round(read("PreToolUse")) + round(read("PostToolUse"));
    assert.equal(count(first, markerB), 1, first.slice(0, 2000));
    assert.equal(count(second, markerB), 0, second.slice(0, 2000));
    assert.equal(count(first + second, markerA), 0, "COMMANDS.md again");
  });

  step("npm uninstall -g leaves the wired hooks running", () => {
    run("npm", ["uninstall", "-g", "preload-hooks", `@preload-hooks/${platform}`], { cwd: root });
    assert.ok(!fs.existsSync(packageBinary), "npm left the package");
    const out = run(path.join(bin, "preload"), ["doctor"], { ok: false });
    assert.match(out.stdout, /binaries: 12 present and runnable/, out.stdout);
    assert.doesNotMatch(out.stdout, /missing/, out.stdout);
  });

  step("doctor names the wired binaries npm removed (hooks wired into the package's directory)", () => {
    npmInstall();
    run("preload", ["install", "--prefix", path.dirname(packageBinary)]);
    assert.ok(commands().every((c) => c.startsWith(prefix)), "wired into the npm prefix");
    run("npm", ["uninstall", "-g", "preload-hooks", `@preload-hooks/${platform}`], { cwd: root });
    const out = run(path.join(bin, "preload"), ["doctor"], { ok: false });
    assert.equal(out.status, 1, out.stdout);
    assert.match(out.stdout, /hooks wired to a missing binary: /, out.stdout);
    run(path.join(bin, "preload"), ["install"]);
  });

  step("preload uninstall takes the wiring out", () => {
    const out = run(path.join(bin, "preload"), ["uninstall"]).stdout;
    const left = fs.existsSync(settingsFile) ? commands() : [];
    assert.deepEqual(left, [], out);
  });
} catch (err) {
  failed = true;
  console.error(`npm-test: FAILED: ${err.message}`);
} finally {
  fs.rmSync(root, { recursive: true, force: true });
}
console.log(`npm-test: ${failed ? "failed" : "passed"} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
process.exit(failed ? 1 : 0);
