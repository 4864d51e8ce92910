#!/usr/bin/env python3
"""Checks the release tarballs `make dist` wrote; exit 1 naming every defect.

    support/check-dist.py --dist DIR --version V --names "preload preload-overflow ..."
                          [--macos-min 11.0] [--require-run TARGET,...] TARGET...

For each TARGET, `preload-hooks-V-TARGET.tar.gz` in DIR:

- its checksum matches both its `.sha256` file and its line in DIR/SHA256SUMS, and SHA256SUMS
  names no other file;
- it holds one directory `preload-hooks-V-TARGET/` with README.md, CHANGELOG.md, LICENSE,
  docs/install.md, hooks/settings.json, hooks/guards.json, hooks/shims/, and bin/ with exactly
  the NAMES, each the same executable binary;
- the binary is of the target's format and architecture: for Linux a static ELF executable
  (no program interpreter, no shared library needed); for macOS a thin Mach-O executable whose
  minimum macOS version (LC_BUILD_VERSION minos) is --macos-min, which loads no library but
  the system's (/usr/lib/, /System/Library/), and, on arm64, carries a code signature (an
  Apple silicon Mac runs no unsigned binary);
- `bin/NAME --version` prints `NAME V` for every name, where this machine can run the binary
  (its own architecture and system, or Linux through `qemu-<arch>-static` / `qemu-<arch>` on
  PATH); a target in --require-run that cannot be run is a defect.

And `preload-hooks-V-plugin.tar.gz`, the Claude Code plugin, when DIR or SHA256SUMS holds it
(`make dist` writes it when one of the targets runs on the machine building it): its checksums
as above; one directory `preload-hooks-V-plugin/` with the manifest of version V, the
marketplace, hooks/hooks.json, guards.json and README.md; bin/NAME for every name, each the
same executable launcher (`#!/bin/sh`); and bin/<platform>/preload for exactly the TARGETS,
each byte for byte the binary of that target's tarball.
"""

import argparse
import hashlib
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile

ELF_MACHINES = {"x86_64": 62, "aarch64": 183}
# The plugin's directory for each target's binary (the platform names of the npm packages).
PLUGIN_PLATFORMS = {
    "x86_64-unknown-linux-musl": "linux-x64",
    "aarch64-unknown-linux-musl": "linux-arm64",
    "x86_64-apple-darwin": "darwin-x64",
    "aarch64-apple-darwin": "darwin-arm64",
}
PLUGIN_FILES = [
    ".claude-plugin/plugin.json",
    ".claude-plugin/marketplace.json",
    "hooks/hooks.json",
    "guards.json",
    "README.md",
]
MACHO_CPUS = {"x86_64": 0x01000007, "aarch64": 0x0100000C}
LC_DYLIBS = {
    0xC: "LC_LOAD_DYLIB",
    0x80000018: "LC_LOAD_WEAK_DYLIB",
    0x8000001F: "LC_REEXPORT_DYLIB",
    0x20: "LC_LAZY_LOAD_DYLIB",
    0x80000023: "LC_LOAD_UPWARD_DYLIB",
}
LC_BUILD_VERSION = 0x32
LC_VERSION_MIN_MACOSX = 0x24
LC_CODE_SIGNATURE = 0x1D
LC_LOAD_DYLINKER = 0xE
SYSTEM_LIBRARIES = ("/usr/lib/", "/System/Library/")
REQUIRED_FILES = [
    "README.md",
    "CHANGELOG.md",
    "LICENSE",
    "docs/install.md",
    "hooks/settings.json",
    "hooks/guards.json",
]


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sums_file(path):
    """`sha256sum` lines: {name: digest}."""
    entries = {}
    with open(path) as f:
        for line in f:
            digest, _, name = line.rstrip("\n").partition("  ")
            entries[name.lstrip("*")] = digest
    return entries


def check_elf(data, arch):
    problems = []
    if data[:4] != b"\x7fELF":
        return ["not an ELF file"]
    if data[4] != 2 or data[5] != 1:
        return ["not a 64-bit little-endian ELF file"]
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != ELF_MACHINES[arch]:
        problems.append(f"ELF machine {e_machine}, not {arch} ({ELF_MACHINES[arch]})")
    if e_type not in (2, 3):
        problems.append(f"ELF type {e_type} is not an executable")
    e_phoff = struct.unpack_from("<Q", data, 32)[0]
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    for i in range(e_phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, e_phoff + i * e_phentsize
        )
        if p_type == 3:
            interp = data[p_offset : p_offset + p_filesz].rstrip(b"\0").decode(errors="replace")
            problems.append(f"dynamically linked: program interpreter {interp}")
        elif p_type == 2:
            for off in range(p_offset, p_offset + p_filesz, 16):
                d_tag, _ = struct.unpack_from("<qQ", data, off)
                if d_tag == 0:
                    break
                if d_tag == 1:
                    problems.append("dynamically linked: needs a shared library (DT_NEEDED)")
                    break
    return problems


def version_text(v):
    return f"{v >> 16}.{(v >> 8) & 0xFF}" + (f".{v & 0xFF}" if v & 0xFF else "")


def check_macho(data, arch, macos_min):
    problems = []
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic in (0xCAFEBABE, 0xBEBAFECA):
        return ["a universal (fat) Mach-O file, not one architecture"]
    if magic != 0xFEEDFACF:
        return [f"not a 64-bit Mach-O file (magic {magic:#x})"]
    cputype, _, filetype, ncmds, _, _ = struct.unpack_from("<iiIIII", data, 4)
    if cputype != MACHO_CPUS[arch]:
        problems.append(f"Mach-O CPU type {cputype:#x}, not {arch} ({MACHO_CPUS[arch]:#x})")
    if filetype != 2:
        problems.append(f"Mach-O file type {filetype}, not an executable (MH_EXECUTE)")
    offset, minos, signed, dylibs = 32, None, False, []
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, offset)
        if cmd == LC_BUILD_VERSION:
            platform_id, minos = struct.unpack_from("<II", data, offset + 8)
            if platform_id != 1:
                problems.append(f"LC_BUILD_VERSION platform {platform_id}, not macOS (1)")
        elif cmd == LC_VERSION_MIN_MACOSX and minos is None:
            minos = struct.unpack_from("<I", data, offset + 8)[0]
        elif cmd == LC_CODE_SIGNATURE:
            signed = True
        elif cmd in LC_DYLIBS or cmd == LC_LOAD_DYLINKER:
            name_at = struct.unpack_from("<I", data, offset + 8)[0]
            name = data[offset + name_at : offset + cmdsize].split(b"\0")[0].decode()
            if cmd == LC_LOAD_DYLINKER:
                if name != "/usr/lib/dyld":
                    problems.append(f"dynamic linker {name}, not /usr/lib/dyld")
            else:
                dylibs.append(name)
                if not name.startswith(SYSTEM_LIBRARIES):
                    problems.append(f"{LC_DYLIBS[cmd]} {name}: not a library of the system")
        offset += cmdsize
    if minos is None:
        problems.append("no minimum macOS version (LC_BUILD_VERSION)")
    elif version_text(minos) != macos_min:
        problems.append(f"minimum macOS {version_text(minos)}, not {macos_min}")
    if not dylibs:
        problems.append("loads no library at all (libSystem expected)")
    if arch == "aarch64" and not signed:
        problems.append("no code signature (LC_CODE_SIGNATURE): Apple silicon runs no unsigned binary")
    return problems, dylibs, minos


def runner_for(target):
    """How this machine runs the target's binaries: ([] = directly, [qemu], or None, why)."""
    arch = target.split("-")[0]
    host_arch = platform.machine().replace("arm64", "aarch64")
    host_os = platform.system()
    target_os = "Darwin" if target.endswith("-apple-darwin") else "Linux"
    if target_os != host_os:
        return None, f"a {target_os} binary does not run on {host_os}"
    if arch == host_arch:
        return [], None
    if host_os == "Linux":
        for name in (f"qemu-{arch}-static", f"qemu-{arch}"):
            found = shutil.which(name)
            if found:
                return [found], None
        return None, f"no qemu-{arch}-static on PATH (Debian: qemu-user-static)"
    return None, f"an {arch} binary does not run on {host_arch}"


def check_tarball_sums(args, tarball_name):
    """The tarball's checksum against its `.sha256` file and SHA256SUMS; its digest."""
    problems = []
    tarball = os.path.join(args.dist, tarball_name)
    digest = sha256(tarball)
    own = f"{tarball}.sha256"
    if not os.path.isfile(own):
        problems.append(f"{own} is missing")
    elif sums_file(own) != {tarball_name: digest}:
        problems.append(f"{own} does not match the tarball")
    if args.sums.get(tarball_name) != digest:
        problems.append("SHA256SUMS has no matching line for the tarball")
    return problems


def unpack(tarball, name, scratch):
    """Unpack `tarball` (one top directory `name`) into scratch; its root, or a problem."""
    with tarfile.open(tarball) as tar:
        tops = {m.name.split("/")[0] for m in tar.getmembers()}
        if tops != {name}:
            return None, f"top-level entries {sorted(tops)}, not {name}/"
        if hasattr(tarfile, "data_filter"):
            tar.extractall(scratch, filter="data")
        else:
            tar.extractall(scratch)
    return os.path.join(scratch, name), None


def check_target(args, names, target):
    problems = []
    name = f"preload-hooks-{args.version}-{target}"
    tarball = os.path.join(args.dist, f"{name}.tar.gz")
    if not os.path.isfile(tarball):
        return [f"{tarball} is missing"]
    problems += check_tarball_sums(args, f"{name}.tar.gz")
    with tempfile.TemporaryDirectory() as scratch:
        root, problem = unpack(tarball, name, scratch)
        if problem:
            return problems + [problem]
        for required in REQUIRED_FILES:
            if not os.path.isfile(os.path.join(root, required)):
                problems.append(f"{required} is missing")
        shims = os.path.join(root, "hooks", "shims")
        if not os.path.isdir(shims) or not os.listdir(shims):
            problems.append("hooks/shims/ is missing or empty")
        bindir = os.path.join(root, "bin")
        present = sorted(os.listdir(bindir)) if os.path.isdir(bindir) else []
        if present != sorted(names):
            missing = sorted(set(names) - set(present))
            extra = sorted(set(present) - set(names))
            problems.append(f"bin/ holds {present}: missing {missing}, unexpected {extra}")
        binaries = [os.path.join(bindir, n) for n in names if n in present]
        if not binaries:
            return problems + ["no binary in bin/"]
        contents = {sha256(b) for b in binaries}
        if len(contents) != 1:
            problems.append(f"bin/ holds {len(contents)} different files, not one binary under every name")
        for b in binaries:
            if not os.access(b, os.X_OK):
                problems.append(f"bin/{os.path.basename(b)} is not executable")
        with open(binaries[0], "rb") as f:
            data = f.read()
        arch = target.split("-")[0]
        if target.endswith("-apple-darwin"):
            macho = check_macho(data, arch, args.macos_min)
            if isinstance(macho, list):
                problems += macho
                detail = ""
            else:
                found, dylibs, minos = macho
                problems += found
                detail = f"Mach-O {arch}, macOS {version_text(minos) if minos else '?'}+, loads {', '.join(dylibs)}"
        else:
            problems += check_elf(data, arch)
            detail = f"static ELF {arch}"

        runner, why = runner_for(target)
        if runner is None:
            ran = f"not run: {why}"
            if target in args.require_run:
                problems.append(f"cannot be run here, and --require-run names it: {why}")
        else:
            for b in binaries:
                done = subprocess.run(
                    runner + [b, "--version"], stdin=subprocess.DEVNULL,
                    capture_output=True, text=True, timeout=120,
                )
                expected = f"{os.path.basename(b)} {args.version}\n"
                if done.returncode != 0 or done.stdout != expected:
                    problems.append(
                        f"bin/{os.path.basename(b)} --version: exit {done.returncode}, "
                        f"printed {done.stdout!r}, not {expected!r}"
                    )
            ran = "every name ran --version" + (f" under {os.path.basename(runner[0])}" if runner else "")
        size = os.path.getsize(tarball)
    print(f"check-dist: {target}: {detail}; {ran}; {size / 1e6:.1f} MB")
    return problems


def target_binary_digest(args, target):
    """The digest of bin/preload in the target's tarball, or None."""
    name = f"preload-hooks-{args.version}-{target}"
    tarball = os.path.join(args.dist, f"{name}.tar.gz")
    if not os.path.isfile(tarball):
        return None
    with tarfile.open(tarball) as tar:
        member = tar.extractfile(f"{name}/bin/preload")
        return hashlib.sha256(member.read()).hexdigest() if member else None


def check_plugin(args, names):
    name = f"preload-hooks-{args.version}-plugin"
    tarball = os.path.join(args.dist, f"{name}.tar.gz")
    if not os.path.isfile(tarball):
        return [f"{tarball} is missing"]
    problems = check_tarball_sums(args, f"{name}.tar.gz")
    with tempfile.TemporaryDirectory() as scratch:
        root, problem = unpack(tarball, name, scratch)
        if problem:
            return problems + [problem]
        for required in PLUGIN_FILES:
            if not os.path.isfile(os.path.join(root, required)):
                problems.append(f"{required} is missing")
        manifest = os.path.join(root, ".claude-plugin/plugin.json")
        if os.path.isfile(manifest):
            with open(manifest) as f:
                version = json.load(f).get("version")
            if version != args.version:
                problems.append(f"the manifest says version {version!r}, not {args.version!r}")
        bindir = os.path.join(root, "bin")
        launchers = set()
        for n in names:
            path = os.path.join(bindir, n)
            if not os.path.isfile(path) or not os.access(path, os.X_OK):
                problems.append(f"bin/{n} is missing or not executable")
                continue
            with open(path, "rb") as f:
                text = f.read()
            if not text.startswith(b"#!/bin/sh\n"):
                problems.append(f"bin/{n} is not the launcher")
            launchers.add(text)
        if len(launchers) > 1:
            problems.append(f"bin/ holds {len(launchers)} different launchers, not one")
        wanted = {PLUGIN_PLATFORMS[t]: t for t in args.targets if t in PLUGIN_PLATFORMS}
        present = sorted(d for d in os.listdir(bindir) if os.path.isdir(os.path.join(bindir, d)))
        if present != sorted(wanted):
            problems.append(f"bin/ carries {present}, not {sorted(wanted)}")
        for platform_name, target in sorted(wanted.items()):
            path = os.path.join(bindir, platform_name, "preload")
            if not os.path.isfile(path):
                continue
            if sha256(path) != target_binary_digest(args, target):
                problems.append(f"bin/{platform_name}/preload is not the binary of {target}'s tarball")
        size = os.path.getsize(tarball)
    print(f"check-dist: plugin: {', '.join(present)}; {size / 1e6:.1f} MB")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dist", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--names", required=True)
    parser.add_argument("--macos-min", default="11.0")
    parser.add_argument("--require-run", default="")
    parser.add_argument("targets", nargs="+")
    args = parser.parse_args()
    args.require_run = [t for t in args.require_run.split(",") if t]
    names = args.names.split()
    failed = False
    sums = os.path.join(args.dist, "SHA256SUMS")
    args.sums = sums_file(sums) if os.path.isfile(sums) else {}
    if not args.sums:
        print(f"check-dist: {sums} is missing or empty", file=sys.stderr)
        failed = True
    expected = {f"preload-hooks-{args.version}-{t}.tar.gz" for t in args.targets}
    plugin = f"preload-hooks-{args.version}-plugin.tar.gz"
    has_plugin = plugin in args.sums or os.path.isfile(os.path.join(args.dist, plugin))
    if has_plugin:
        expected.add(plugin)
    if args.sums and set(args.sums) != expected:
        print(f"check-dist: SHA256SUMS names {sorted(args.sums)}, not {sorted(expected)}", file=sys.stderr)
        failed = True
    for target in args.targets:
        for problem in check_target(args, names, target):
            print(f"check-dist: {target}: {problem}", file=sys.stderr)
            failed = True
    if has_plugin:
        for problem in check_plugin(args, names):
            print(f"check-dist: plugin: {problem}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
