"""What a golem box looks like from the inside: run with `golem exec examples/hello_box.py`."""

import ctypes
import os
import socket
from pathlib import Path


def probe(label: str, action) -> None:  # type: ignore[no-untyped-def]
    try:
        outcome = action()
    except OSError as exc:
        outcome = f"refused ({exc.strerror})"
    print(f"  {label:<34} {outcome}")


def write(path: str) -> str:
    Path(path).write_text("x")
    return "allowed"


def new_user_namespace() -> str:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return "allowed"


def connect() -> str:
    socket.create_connection(("1.1.1.1", 443), timeout=2).close()
    return "connected"


print(f"Hello from box '{socket.gethostname()}', uid {os.getuid()}, pid {os.getpid()}")
print(f"  {'processes visible':<34} {len([p for p in os.listdir('/proc') if p.isdigit()])}")
print(f"  {'network interfaces':<34} {[name for _, name in socket.if_nameindex()]}")
probe("write /workspace/note.txt", lambda: write("/workspace/note.txt"))
probe("write /etc/evil", lambda: write("/etc/evil"))
probe("list the host's /root", lambda: os.listdir("/root"))
probe("list the host's /home", lambda: os.listdir("/home"))
probe("connect to 1.1.1.1:443", connect)
probe("new user namespace (unshare)", new_user_namespace)
