"""golem's default-deny seccomp filter for process boxes, compiled to BPF with libseccomp.

Everything not listed is refused with EPERM. The allow list follows Docker's default profile
for an unprivileged container, minus what a coding box never needs and attackers like:
namespaces (unshare, setns, namespace flags on clone), mounts, keyrings, bpf, perf, ptrace
and cross-process memory access, io_uring, kernel modules, clocks, and socket families
other than unix, inet, inet6 and netlink (no vsock to the hypervisor), and POSIX message
queues (they cannot be listed, so a warm pool could not wipe them).
"""

from __future__ import annotations

import contextlib
import errno
import json
import tempfile
from functools import cache
from typing import Any

import pyseccomp as seccomp

__all__ = [
    "ALLOWED_SYSCALLS",
    "SIGNALLERS",
    "compile_filter",
    "engine_profile",
    "init_shield",
    "oci_profile",
]

ALLOWED_SYSCALLS = """
accept accept4 access alarm arch_prctl bind brk capget capset chdir chmod chown chown32
clock_getres clock_getres_time64 clock_gettime clock_gettime64 clock_nanosleep
clock_nanosleep_time64 close close_range connect copy_file_range creat dup dup2 dup3
epoll_create epoll_create1 epoll_ctl epoll_ctl_old epoll_pwait epoll_pwait2 epoll_wait
epoll_wait_old eventfd eventfd2 execve execveat exit exit_group faccessat faccessat2
fadvise64 fadvise64_64 fallocate fchdir fchmod fchmodat fchmodat2 fchown fchown32 fchownat
fcntl fcntl64 fdatasync fgetxattr flistxattr flock fork fremovexattr fsetxattr fstat fstat64
fstatat64 fstatfs fstatfs64 fsync ftruncate ftruncate64 futex futex_time64 futex_waitv
futimesat get_mempolicy get_robust_list get_thread_area getcpu getcwd getdents getdents64
getegid getegid32 geteuid geteuid32 getgid getgid32 getgroups getgroups32 getitimer
getpeername getpgid getpgrp getpid getppid getpriority getrandom getresgid getresgid32
getresuid getresuid32 getrlimit getrusage getsid getsockname getsockopt gettid gettimeofday
getuid getuid32 getxattr inotify_add_watch inotify_init inotify_init1 inotify_rm_watch
io_cancel io_destroy io_getevents io_pgetevents io_pgetevents_time64 io_setup io_submit
ioctl ioprio_get ioprio_set ipc kill landlock_add_rule landlock_create_ruleset
landlock_restrict_self lchown lchown32 lgetxattr link linkat listen listxattr llistxattr
lremovexattr lseek lsetxattr lstat lstat64 madvise mbind membarrier memfd_create mincore
mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect
mremap msgctl msgget msgrcv msgsnd msync munlock munlockall munmap nanosleep
newfstatat _newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe pipe2
pkey_alloc pkey_free pkey_mprotect poll ppoll ppoll_time64 prctl pread64 preadv preadv2
prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64 pwritev pwritev2 read
readahead readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg
remap_file_pages removexattr rename renameat renameat2 restart_syscall rmdir rseq
rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend
rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_get_priority_max
sched_get_priority_min sched_getaffinity sched_getattr sched_getparam sched_getscheduler
sched_rr_get_interval sched_rr_get_interval_time64 sched_setaffinity sched_setattr
sched_setparam sched_setscheduler sched_yield seccomp select semctl semget semop semtimedop
semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg sendto set_mempolicy
set_robust_list set_thread_area set_tid_address setfsgid setfsgid32 setfsuid setfsuid32
setgid setgid32 setgroups setgroups32 setitimer setpgid setpriority setregid setregid32
setresgid setresgid32 setresuid setresuid32 setreuid setreuid32 setrlimit setsid
setsockopt setuid setuid32 setxattr shmat shmctl shmdt shmget shutdown sigaltstack signalfd
signalfd4 sigprocmask sigreturn socketcall socketpair splice stat stat64 statfs statfs64
statx symlink symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create
timer_delete timer_getoverrun timer_gettime timer_gettime64 timer_settime timer_settime64
timerfd_create timerfd_gettime timerfd_gettime64 timerfd_settime timerfd_settime64 times
tkill truncate truncate64 ugetrlimit umask uname unlink unlinkat utime utimensat
utimensat_time64 utimes vfork vmsplice wait4 waitid waitpid write writev
""".split()  # noqa: SIM905 - a word list reads better than 330 quoted lines

_SOCKET_FAMILIES = (1, 2, 10, 16)  # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK
_PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # Docker's allowed set
_CLONE_NAMESPACE_FLAGS = 0x7E020080  # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}


def _add(flt: seccomp.SyscallFilter, action: int, name: str, *args: seccomp.Arg) -> None:
    with contextlib.suppress(OSError, ValueError, RuntimeError):  # not on this architecture
        flt.add_rule(action, name, *args)


@cache
def compile_filter() -> bytes:
    """The filter as BPF bytes, for ``bwrap --seccomp FD``; compiled once per process."""
    flt = seccomp.SyscallFilter(seccomp.ERRNO(errno.EPERM))
    for name in ALLOWED_SYSCALLS:
        _add(flt, seccomp.ALLOW, name)
    for family in _SOCKET_FAMILIES:
        _add(flt, seccomp.ALLOW, "socket", seccomp.Arg(0, seccomp.EQ, family))
    for persona in _PERSONALITIES:
        _add(flt, seccomp.ALLOW, "personality", seccomp.Arg(0, seccomp.EQ, persona))
    _add(
        flt,
        seccomp.ALLOW,
        "clone",
        seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_NAMESPACE_FLAGS, 0),
    )
    # clone3 passes flags in memory where seccomp cannot see them: answer ENOSYS so that
    # libc falls back to clone, whose flags are checked above.
    _add(flt, seccomp.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as handle:
        flt.export_bpf(handle)
        handle.seek(0)
        return handle.read()


@cache
def engine_profile() -> str:
    """The same filter as a container engine's seccomp profile (JSON), for the docker
    backend: stricter than Docker's and Podman's defaults, never weaker."""
    return json.dumps(oci_profile(), separators=(",", ":"))


SIGNALLERS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open")
"""System calls that name a process to signal (or to get a handle to) by its first argument."""


def init_shield() -> dict[str, Any]:
    """Only the pid 1 part of ``oci_profile(shield_init=True)``: everything allowed but a
    signal to pid 1."""
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [
            {
                "names": list(SIGNALLERS),
                "action": "SCMP_ACT_ERRNO",
                "errnoRet": errno.EPERM,
                "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_EQ"}],
            }
        ],
    }


def oci_profile(*, shield_init: bool = False) -> dict[str, Any]:
    """The filter as an OCI runtime spec's ``linux.seccomp`` (the format Docker's and
    Podman's profiles share). ``shield_init``: no signal to pid 1, the box's supervisor,
    for a kernel that lets a box kill its own init (gVisor's does)."""
    allowed = [name for name in ALLOWED_SYSCALLS if not (shield_init and name in SIGNALLERS)]
    rules: list[dict[str, object]] = [{"names": allowed, "action": "SCMP_ACT_ALLOW"}]
    if shield_init:
        rules.append(
            {
                "names": list(SIGNALLERS),
                "action": "SCMP_ACT_ALLOW",
                "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_NE"}],
            }
        )
    for index_values, name in (
        (_SOCKET_FAMILIES, "socket"),
        (_PERSONALITIES, "personality"),
    ):
        for value in index_values:
            rules.append(
                {
                    "names": [name],
                    "action": "SCMP_ACT_ALLOW",
                    "args": [{"index": 0, "value": value, "op": "SCMP_CMP_EQ"}],
                }
            )
    rules.append(
        {
            "names": ["clone"],
            "action": "SCMP_ACT_ALLOW",
            "args": [
                {
                    "index": 0,
                    "value": _CLONE_NAMESPACE_FLAGS,
                    "valueTwo": 0,
                    "op": "SCMP_CMP_MASKED_EQ",
                }
            ],
        }
    )
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": errno.EPERM,
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": rules,
    }


GVISOR_NAMES = {"pselect6": "pselect"}
"""System calls gVisor's table names otherwise than libseccomp (amd64: only syscall 270)."""


def gvisor_profile(*, full: bool = True) -> dict[str, Any]:
    """The seccomp filter gVisor's kernel enforces on the box: golem's default-deny one
    (``full``), or only the shield of pid 1; signals to pid 1 are refused either way.

    gVisor reads the names from its own table (``runsc help syscalls``), where a few differ
    from libseccomp's (``GVISOR_NAMES``) and the calls it lacks are missing (it answers
    them ENOSYS anyway). It returns EPERM for every refused call whatever ``errnoRet``
    says, so the ENOSYS that makes glibc fall back from clone3 to clone (whose flags the
    filter checks) would be EPERM, and no thread could start: clone3 is left to gVisor,
    which does not implement it and answers ENOSYS itself."""
    if not full:
        return init_shield()
    profile = oci_profile(shield_init=True)
    for rule in profile["syscalls"]:
        rule["names"] = [GVISOR_NAMES.get(name, name) for name in rule["names"]]
        if rule["names"] == ["clone3"]:
            rule.pop("errnoRet", None)
            rule["action"] = "SCMP_ACT_ALLOW"
    return profile
