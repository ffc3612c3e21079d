"""Run a command as deep in Landlock domains as the kernel allows (16), so that the
sandbox's launcher cannot add its own: the real failure of ``landlock_restrict_self``
(``E2BIG``), not a stand-in (``python tests/landlock.py ARGV...``)."""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
# The kernel's limit on stacked Landlock domains (security/landlock/limits.h).
MAX_LAYERS = 16


def nested(argv: list[str]) -> list[str]:
    """``argv`` run under ``MAX_LAYERS`` Landlock domains by this file."""
    return [sys.executable, "-I", "-S", os.fspath(HERE), *argv]


def _main(argv: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
    # A domain scoped to abstract unix sockets only: nothing the tests here use.
    attr = ctypes.create_string_buffer(struct.pack("QQQ", 0, 0, 0x1))
    for _ in range(MAX_LAYERS):
        fd = libc.syscall(444, attr, ctypes.c_size_t(24), ctypes.c_uint32(0))
        if fd < 0 or libc.syscall(446, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            sys.exit(f"landlock: {os.strerror(ctypes.get_errno())}")
        os.close(fd)
    os.execvp(argv[0], argv)  # noqa: S606 - the command given


if __name__ == "__main__":
    _main(sys.argv[1:])
