#!/usr/bin/env python3
"""Run a command where Linux binaries of another architecture execute, through qemu's user mode.

    support/emulate.py --probe BINARY -- COMMAND [ARG...]

BINARY is one binary of that architecture (its ELF header names the architecture). When it
already runs (a machine of that architecture, or binfmt_misc registered for qemu, as Debian's
`qemu-user-binfmt` does), COMMAND runs as it is. Else COMMAND runs in a private user and mount
namespace holding its own binfmt_misc, in which every binary of that architecture starts under
`qemu-<arch>-static` (or `qemu-<arch>`): nothing outside the namespace changes, and the
namespace has the same users (every user id is mapped to itself when this runs as root). The
entry preserves argv[0], so one binary started under another name is that name, as natively.

Exits 3, saying why, when neither works (no qemu, or no user namespaces).
"""

import ctypes
import os
import shutil
import subprocess
import sys

# ELF e_machine -> (qemu's name, the binfmt_misc magic and mask of a static or dynamic
# executable of that machine: ELF64, little-endian, ET_EXEC or ET_DYN).
MACHINES = {
    183: ("aarch64", "b7"),
    62: ("x86_64", "3e"),
}
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
BINFMT = "/proc/sys/fs/binfmt_misc"


def fail(message):
    print(f"emulate: {message}", file=sys.stderr)
    sys.exit(3)


def machine_of(path):
    with open(path, "rb") as f:
        header = f.read(20)
    if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
        fail(f"{path} is not a 64-bit little-endian ELF file")
    return int.from_bytes(header[18:20], "little")


def runs(path):
    try:
        done = subprocess.run(
            [path, "--version"], stdin=subprocess.DEVNULL, capture_output=True, timeout=60
        )
    except OSError:
        return False
    return done.returncode == 0


def qemu_for(arch):
    for name in (f"qemu-{arch}-static", f"qemu-{arch}"):
        found = shutil.which(name)
        if found:
            return os.path.realpath(found)
    fail(
        f"no qemu-{arch}-static or qemu-{arch} on PATH: install Debian's qemu-user-static "
        "(support/dist-tools.sh --qemu does)"
    )


def registration(arch, machine_hex, qemu):
    magic = "\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\x" + machine_hex + "\\x00"
    mask = "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff"
    # P: argv[0] as it was given; O and C: open the binary as the caller (credentials from it);
    # F: qemu is opened now, so it is found from any mount namespace.
    line = f":qemu-{arch}:M::{magic}:{mask}:{qemu}:POCF"
    # The kernel reads the \x escapes itself.
    return line.encode()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def in_namespace(arch, machine_hex, qemu, command):
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(ready_r)
        os.close(go_w)
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0:
            os.write(ready_w, b"E" + os.strerror(ctypes.get_errno()).encode())
            os._exit(3)
        os.write(ready_w, b"R")
        os.close(ready_w)
        if os.read(go_r, 1) != b"G":
            os._exit(3)
        if uid != 0:
            # Without privilege a process maps only itself.
            write("/proc/self/setgroups", b"deny")
            write("/proc/self/uid_map", f"{uid} {uid} 1".encode())
            write("/proc/self/gid_map", f"{gid} {gid} 1".encode())
        try:
            if libc.mount(b"binfmt_misc", BINFMT.encode(), b"binfmt_misc", 0, None) != 0:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
            write(f"{BINFMT}/register", registration(arch, machine_hex, qemu))
        except OSError as error:
            print(f"emulate: binfmt_misc in a user namespace: {error}", file=sys.stderr)
            os._exit(3)
        try:
            os.execvp(command[0], command)
        except OSError as error:
            print(f"emulate: {command[0]}: {error}", file=sys.stderr)
            os._exit(127)
    os.close(ready_w)
    os.close(go_r)
    said = os.read(ready_r, 200)
    if said[:1] != b"R":
        os.waitpid(child, 0)
        fail(f"no user namespace ({said[1:].decode(errors='replace')}); register binfmt_misc for qemu-{arch} (Debian: qemu-user-binfmt)")
    if uid == 0:
        # Root maps every user to itself, so the namespace's users are the machine's.
        write(f"/proc/{child}/uid_map", b"0 0 4294967295")
        write(f"/proc/{child}/gid_map", b"0 0 4294967295")
    os.write(go_w, b"G")
    os.close(go_w)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


def main(argv):
    if len(argv) < 4 or argv[0] != "--probe" or argv[2] != "--":
        print(__doc__.strip(), file=sys.stderr)
        return 2
    probe, command = os.path.abspath(argv[1]), argv[3:]
    machine = machine_of(probe)
    if machine not in MACHINES:
        fail(f"{probe}: no qemu entry for ELF machine {machine}")
    arch, machine_hex = MACHINES[machine]
    if runs(probe):
        os.execvp(command[0], command)
    qemu = qemu_for(arch)
    code = in_namespace(arch, machine_hex, qemu, command)
    if code < 0:
        return 128 - code
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
