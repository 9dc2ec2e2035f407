"""Run untrusted, model-written Python under bubblewrap.

Each run gets: no network (a fresh network namespace), a read-only view of the system's
libraries and the interpreter, a private ``/tmp`` and a writable work folder holding nothing but
the program, an unprivileged user (``nobody`` when we are root; our own user otherwise, in a new
user namespace), new PID and IPC namespaces that die with the run, and limits on address space,
CPU time, file size and processes, with a wall-clock timeout over all of it. A cgroup pids
limit would need a systemd or a delegated cgroup tree, which neither this project's machines nor
a typical laptop session provide to unprivileged code; the process limit (RLIMIT_NPROC of the
unprivileged user) plays its part.

A timeout, crash or escape attempt is a result (``status``), never an exception: the caller
marks the proposal wrong and goes on.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import DebatelabError

NOBODY = 65534


class SandboxUnavailable(DebatelabError):
    """bubblewrap is missing or cannot create namespaces here."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed run."""

    wall_seconds: float = 10.0
    """Wall-clock timeout of the whole run."""
    cpu_seconds: int = 10
    """CPU time (RLIMIT_CPU)."""
    memory_mb: int = 1024
    """Address space (RLIMIT_AS)."""
    file_mb: int = 16
    """Largest file the program may write (RLIMIT_FSIZE)."""
    processes: int = 32
    """Processes of the sandbox user beyond those it already has (RLIMIT_NPROC)."""
    tmp_mb: int = 64
    """Size of the private /tmp."""


DEFAULT_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class SandboxResult:
    """What a run did: ``status`` is 'ok' (exit 0), 'failed' (non-zero exit), 'timeout' or
    'killed' (a signal, e.g. the CPU or memory limit)."""

    status: str
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def sandbox_python() -> str:
    """An interpreter the sandbox user can read: the system's Python 3 when there is one,
    else this one."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable):
        if os.path.exists(candidate) and _world_readable(Path(candidate).resolve()):
            return candidate
    return sys.executable


def _world_readable(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o005 == 0o005 for p in [*path.parents][:-1]) and \
        os.stat(path).st_mode & 0o005 == 0o005  # fmt: skip


def check_available() -> str:
    """The path of ``bwrap``; raises :class:`SandboxUnavailable` with the fix when it cannot run."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap is not installed: model-written code runs only in its sandbox. "
            "Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
            "bubblewrap) and retry."
        )
    probe = run_python("print(1)", SandboxLimits(wall_seconds=20))
    if not probe.ok:
        raise SandboxUnavailable(
            f"bubblewrap is installed but cannot start a sandbox here ({probe.stderr.strip()[:300]}); "
            "unprivileged user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone=1)."
        )
    return bwrap


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                count += entry.stat().st_uid == uid
            except OSError:
                pass
    return count


def _bwrap_args(python: str, work: Path, limits: SandboxLimits) -> list[str]:
    args = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session",
            "--dev", "/dev", "--proc", "/proc",
            "--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp",
            "--bind", str(work), "/work", "--chdir", "/work",
            "--setenv", "HOME", "/work", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            "--unsetenv", "PYTHONPATH"]  # fmt: skip
    if os.geteuid() != 0:  # our own user outside; nobody inside its user namespace
        args += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
    for system in ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/etc/alternatives",
                   "/etc/ld.so.cache", "/etc/localtime"):  # fmt: skip
        if os.path.exists(system):
            args += ["--ro-bind", system, system]
    prefix = Path(python).resolve().parents[1]  # the interpreter's installation
    if not str(prefix).startswith(("/usr", "/bin", "/lib")):
        args += ["--ro-bind", str(prefix), str(prefix)]
    return [*args, "--remount-ro", "/"]  # the sandbox's own root too: only /work and /tmp write


def run_python(code: str, limits: SandboxLimits | None = None, *, stdin: str = "",
               python: str | None = None) -> SandboxResult:  # fmt: skip
    """Run ``code`` (a whole Python program) in a fresh sandbox, with ``stdin`` as its input."""
    limits = limits or DEFAULT_LIMITS
    python = python or sandbox_python()
    is_root = os.geteuid() == 0
    uid = NOBODY if is_root else os.getuid()
    nproc = _processes_of(uid) + limits.processes

    def set_limits():  # in the child, before bwrap starts: inherited by everything inside
        # (as root, Popen has made the child nobody first, so RLIMIT_NPROC counts the
        # sandbox's processes only)
        cap = limits.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    with tempfile.TemporaryDirectory(prefix="debatelab-sandbox-") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o777)  # the sandbox user writes here
        (work / "main.py").write_text(code)
        cmd = [*_bwrap_args(python, work, limits), python, "-I", "/work/main.py"]
        user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if is_root else {}
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, preexec_fn=set_limits,
                                    start_new_session=True, **user)  # fmt: skip
        except OSError as exc:
            return SandboxResult("failed", None, "", f"could not start the sandbox: {exc}")
        try:
            out, err = proc.communicate(stdin.encode(), timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            return SandboxResult("timeout", proc.returncode, _text(out), _text(err))
        finally:
            _kill_group(proc)
    code_ = proc.returncode
    # bwrap passes a signal death on as 128 + signal number
    status = "ok" if code_ == 0 else ("killed" if code_ < 0 or code_ > 128 else "failed")
    return SandboxResult(status, code_, _text(out), _text(err))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _text(data: bytes, limit: int = 20_000) -> str:
    return data[:limit].decode("utf-8", errors="replace")
