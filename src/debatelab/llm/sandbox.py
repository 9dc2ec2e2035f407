"""Run untrusted, model-written Python under bubblewrap, within one budget per sandbox.

Each sandbox gets: no network (a fresh network namespace), new user, PID, IPC and UTS
namespaces that die with the run, a read-only view of the system's libraries and the
interpreter (``/dev`` read-only too), and a scrubbed environment (``PATH``, ``LANG``, ``HOME``:
nothing of the host's, API keys included). Its budgets, one of each per sandbox:

- **processes**: one. The sandbox's Python sets RLIMIT_NPROC to 0 before any untrusted code
  runs: no fork, no thread, no exec'd helper that forks, so nothing outlives or outgrows the
  one process;
- **memory**: that process's address space (RLIMIT_AS, ``memory_mb``); with one process this is
  the memory of the whole sandbox, besides its disk (below) and at most ``open_files`` open
  files of at most ``file_mb`` each;
- **disk**: one tmpfs at ``/tmp`` (the only writable place) of ``tmp_mb`` and at most
  ``tmp_files`` files, mounted by the sandbox itself with the capability bubblewrap lends it
  inside its own user namespace, which it then drops for good (bounding set, locked securebits)
  along with the right to create user namespaces: nothing touches the host's disk;
- **output**: stdout and stderr are read in 64 KiB pieces; the first ``keep`` bytes are kept,
  and past ``output_kb`` in all the sandbox is killed (status ``output``);
- **time**: CPU time (RLIMIT_CPU) and a wall-clock timeout over everything.

A timeout, crash, flood or escape attempt is a result (``status``), never an exception: the
caller marks the proposal wrong and goes on. Exit statuses decide nothing about correctness:
:mod:`debatelab.llm.verify` takes a verdict only from its own checker.
"""

from __future__ import annotations

import json
import os
import re
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import DebatelabError

NOBODY = 65534
CHUNK = 1 << 16
#: The environment of every sandbox: nothing else of the host's crosses.
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp",
               "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
_BOOT = ("import os,json\nb=b''\nwhile True:\n c=os.read({fd},65536)\n if not c: break\n b+=c\n"
         "os.close({fd})\ns=json.loads(b)\nh=s.pop('harness')\n"
         "exec(compile(h,'/harness.py','exec'),{{'__name__':'__harness__','SETUP':s}})")  # fmt: skip


class SandboxUnavailable(DebatelabError):
    """bubblewrap is missing or cannot create namespaces here."""


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one sandboxed run (each sandbox has its own)."""

    wall_seconds: float = 10.0
    """Wall-clock timeout of the whole run."""
    cpu_seconds: int = 10
    """CPU time (RLIMIT_CPU)."""
    memory_mb: int = 1024
    """Address space of the sandbox's one process (RLIMIT_AS)."""
    file_mb: int = 16
    """Largest file the program may write (RLIMIT_FSIZE)."""
    open_files: int = 32
    """Most open files (RLIMIT_NOFILE)."""
    tmp_mb: int = 64
    """Size of the sandbox's disk: the tmpfs at /tmp, its only writable place."""
    tmp_files: int = 2048
    """Most files and folders on that disk."""
    output_kb: int = 4096
    """Most stdout + stderr of a run; past it the sandbox is killed."""
    message_kb: int = 4096
    """Largest message (one call's arguments or result) between a sandbox and the host."""
    keep: int = 20_000
    """Bytes of stdout and of stderr kept for the result."""

    def __post_init__(self):
        for name in ("wall_seconds", "cpu_seconds", "memory_mb", "file_mb", "open_files",
                     "tmp_mb", "tmp_files", "output_kb", "message_kb"):  # fmt: skip
            if not getattr(self, name) > 0:
                raise ValueError(f"sandbox limit {name} must be positive, got "
                                 f"{getattr(self, name)!r}")  # fmt: skip


DEFAULT_LIMITS = SandboxLimits()


@dataclass(frozen=True)
class SandboxResult:
    """What a run did: ``status`` is 'ok' (exit 0), 'failed' (non-zero exit), 'timeout',
    'killed' (a signal, e.g. the CPU or memory limit) or 'output' (past the output budget)."""

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


def _bwrap_version(bwrap: str) -> tuple[int, ...]:
    try:
        out = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ()
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out.stdout)
    return tuple(int(x or 0) for x in match.groups()) if match else ()


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
    if not (probe.ok and probe.stdout.strip() == "1"):
        raise SandboxUnavailable(
            f"bubblewrap is installed but cannot start a sandbox here "
            f"({(probe.stderr.strip() or probe.status)[-300:]}); unprivileged user namespaces "
            "may be disabled (sysctl kernel.unprivileged_userns_clone=1), or bwrap is setuid "
            "(the sandbox needs the unprivileged bwrap: it mounts its own size-limited /tmp)."
        )
    return bwrap


def _bwrap_args(python: str) -> list[str]:
    args = ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
            # uid 0 of the sandbox's own user namespace, lent the capabilities to mount its
            # disk; the harness drops them before any untrusted code runs
            "--uid", "0", "--gid", "0", "--cap-add", "CAP_SYS_ADMIN",
            "--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_SYS_RESOURCE",
            "--clearenv", "--dev", "/dev", "--remount-ro", "/dev", "--proc", "/proc",
            "--dir", "/tmp", "--chdir", "/"]  # fmt: skip
    for name, value in SANDBOX_ENV.items():
        args += ["--setenv", name, value]
    for system in ("/usr", "/bin", "/lib", "/lib64", "/lib32", "/etc/alternatives",
                   "/etc/ld.so.cache", "/etc/localtime"):  # fmt: skip
        if os.path.exists(system):
            args += ["--ro-bind", system, system]
    prefix = Path(python).resolve().parents[1]  # the interpreter's installation
    if not str(prefix).startswith(("/usr", "/bin", "/lib")):
        args += ["--ro-bind", str(prefix), str(prefix)]
    return [*args, "--remount-ro", "/"]


def harness_source() -> str:
    return (resources.files("debatelab.llm") / "harness.py").read_text(encoding="utf-8")


class _Reader:
    """One pipe from a sandbox: output (kept up to ``keep`` bytes, counted) or JSON lines."""

    def __init__(self, fd: int, keep: int = 0, line_cap: int | None = None):
        self.fd, self.keep, self.line_cap = fd, keep, line_cap
        self.kept, self.partial, self.total, self.eof = bytearray(), bytearray(), 0, False
        self.lines: list[bytes] = []
        self.too_long = False

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        if self.line_cap is None:
            room = self.keep - len(self.kept)
            if room > 0:
                self.kept += data[:room]
            return
        self.partial += data
        while True:
            end = self.partial.find(b"\n")
            if end < 0:
                break
            self.lines.append(bytes(self.partial[:end]))
            del self.partial[: end + 1]
        if len(self.partial) > self.line_cap or any(len(x) > self.line_cap for x in self.lines):
            self.too_long = True


class Sandbox:
    """One running sandbox: a bubblewrap process whose Python first runs the harness (``role``
    and ``setup`` say what then); ``channel`` adds a line channel each way."""

    def __init__(self, role: str, setup: dict, limits: SandboxLimits, *, stdin: bytes = b"",
                 channel: bool = False, python: str | None = None):  # fmt: skip
        self.limits = limits
        python = python or sandbox_python()
        child: list[int] = []
        setup_r, setup_w = os.pipe()
        child.append(setup_r)
        self.inbox = self.outbox = None
        payload = {**setup, "role": role, "harness": harness_source(),
                   "tmp_bytes": limits.tmp_mb << 20, "tmp_files": limits.tmp_files,
                   "open_files": limits.open_files}  # fmt: skip
        if channel:
            inbox_r, self.inbox = os.pipe()
            self.outbox, outbox_w = os.pipe()
            child += [inbox_r, outbox_w]
            payload.update(inbox=inbox_r, outbox=outbox_w)
        stdin_r, stdin_w = os.pipe()
        child.append(stdin_r)

        def set_limits():  # in the child, before bwrap starts: inherited by everything inside
            cap = limits.memory_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20,) * 2)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        cmd = [*_bwrap_args(python), python, "-I", "-c", _BOOT.format(fd=setup_r)]
        user = {"user": NOBODY, "group": NOBODY, "extra_groups": []} if os.geteuid() == 0 else {}
        self.started = time.monotonic()
        try:
            self.proc: subprocess.Popen | None = subprocess.Popen(
                cmd, stdin=stdin_r, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                pass_fds=[fd for fd in child if fd != stdin_r], preexec_fn=set_limits,
                start_new_session=True, env={}, **user)  # fmt: skip
            self.error = None
        except OSError as exc:
            self.proc, self.error = None, f"could not start the sandbox: {exc}"
        finally:
            for fd in child:
                os.close(fd)
        self.writes: dict[int, bytearray] = {}
        self.readers: dict[int, _Reader] = {}
        if self.proc is None:
            for fd in (setup_w, stdin_w, self.inbox, self.outbox):
                if fd is not None:
                    os.close(fd)
            self.inbox = self.outbox = None
            return
        self.writes[setup_w] = bytearray(json.dumps(payload).encode())
        self.writes[stdin_w] = bytearray(stdin)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout = _Reader(self.proc.stdout.fileno(), limits.keep)
        self.stderr = _Reader(self.proc.stderr.fileno(), limits.keep)
        self.readers = {r.fd: r for r in (self.stdout, self.stderr)}
        if self.outbox is not None:
            self.channel = _Reader(self.outbox, line_cap=limits.message_kb << 10)
            self.readers[self.outbox] = self.channel
        if self.inbox is not None:
            self.writes[self.inbox] = bytearray()
        for fd in [*self.writes, *self.readers]:
            os.set_blocking(fd, False)
        self.closing = {setup_w, stdin_w}  # closed once written: the child sees end of file
        self.status: str | None = None

    # -- the host's side -------------------------------------------------------------------------
    def send(self, obj) -> None:
        """Queue one JSON line to the sandbox's inbox."""
        if self.inbox is not None and self.inbox in self.writes:
            self.writes[self.inbox] += (json.dumps(obj, separators=(",", ":")) + "\n").encode()

    @property
    def output_bytes(self) -> int:
        return self.stdout.total + self.stderr.total if self.proc else 0

    def kill(self, status: str | None = None) -> None:
        if self.proc is None:
            return
        if status and self.status is None:
            self.status = status
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # bwrap; --die-with-parent takes the rest
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        self.kill()
        if self.proc is not None:
            self.proc.wait()
            for fd in {*self.writes, *self.readers} - {self.stdout.fd, self.stderr.fd}:
                os.close(fd)
            self.proc.stdout.close()  # type: ignore[union-attr]
            self.proc.stderr.close()  # type: ignore[union-attr]
            self.writes, self.readers = {}, {}

    def result(self) -> SandboxResult:
        if self.proc is None:
            return SandboxResult("failed", None, "", self.error or "")
        code = self.proc.returncode
        status = self.status
        if status is None:  # bwrap passes a signal death on as 128 + signal number
            status = "ok" if code == 0 else ("killed" if code < 0 or code > 128 else "failed")
        return SandboxResult(status, code, _text(self.stdout.kept), _text(self.stderr.kept))


def pump(sandboxes: list[Sandbox], deadline: float, done) -> str | None:
    """Move bytes between the host and ``sandboxes`` until ``done()`` is true, every sandbox
    has closed its pipes, or the deadline: 'timeout' then. Output past a sandbox's budget kills
    it. Reads and writes are non-blocking, in pieces of at most 64 KiB."""
    sel = selectors.DefaultSelector()
    owner: dict[int, Sandbox] = {}
    for box in sandboxes:
        for fd in box.readers:
            sel.register(fd, selectors.EVENT_READ)
            owner[fd] = box
    watched_writes: set[int] = set()
    try:
        while not done():
            for box in sandboxes:
                for fd, pending in list(box.writes.items()):
                    want = bool(pending)
                    if not pending and fd in box.closing:
                        os.close(fd)
                        del box.writes[fd]
                        if fd in watched_writes:
                            sel.unregister(fd)
                            watched_writes.discard(fd)
                        continue
                    if want and fd not in watched_writes:
                        sel.register(fd, selectors.EVENT_WRITE)
                        watched_writes.add(fd)
                        owner[fd] = box
                    elif not want and fd in watched_writes:
                        sel.unregister(fd)
                        watched_writes.discard(fd)
            if not sel.get_map():
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            for key, events in sel.select(min(left, 1.0)):
                fd, box = key.fd, owner[key.fd]
                if events & selectors.EVENT_WRITE:
                    pending = box.writes.get(fd)
                    try:
                        n = os.write(fd, pending[:CHUNK]) if pending else 0
                        del pending[:n]
                    except BlockingIOError:
                        pass
                    except (BrokenPipeError, OSError):  # the sandbox stopped reading: drop it
                        box.writes.pop(fd, None)
                        box.closing.discard(fd)
                        sel.unregister(fd)
                        watched_writes.discard(fd)
                        os.close(fd)
                    continue
                reader = box.readers[fd]
                try:
                    data = os.read(fd, CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    reader.eof = True
                    sel.unregister(fd)
                    continue
                reader.feed(data)
                if box.output_bytes > box.limits.output_kb << 10:
                    box.kill("output")
        return None
    finally:
        sel.close()


def run_python(code: str, limits: SandboxLimits | None = None, *, stdin: str = "",
               python: str | None = None) -> SandboxResult:  # fmt: skip
    """Run ``code`` (a whole Python program) in a fresh sandbox, with ``stdin`` as its input."""
    limits = limits or DEFAULT_LIMITS
    box = Sandbox("program", {"code": code}, limits, stdin=stdin.encode(), python=python)
    if box.proc is None:
        return box.result()
    try:
        deadline = box.started + limits.wall_seconds
        if pump([box], deadline, lambda: box.status is not None) == "timeout":
            box.kill("timeout")
        elif box.status is None:
            try:
                box.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                box.kill("timeout")
    finally:
        box.close()
    return box.result()


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", errors="replace")
