"""The code that runs inside the sandbox, and the plain-data codec the host shares with it.

This module imports the standard library only: the host imports it for the codec
(:func:`encode`, :func:`decode`), and :mod:`debatelab.llm.sandbox` sends its source text into
every sandbox, where it runs as the first code of the sandbox's one Python process:

1. ``confine``: while it still holds the capabilities bubblewrap lent it inside the sandbox's
   own user namespace, it mounts the one size- and inode-limited tmpfs at ``/tmp`` (the
   sandbox's whole writable disk), forbids new user namespaces, sets the process limits
   (RLIMIT_NPROC 0: no fork, no thread, so the address-space limit is the memory budget of the
   whole sandbox), then drops every capability for good (bounding set, securebits locked,
   ambient set cleared) and checks that they are gone;
2. then one of three roles: ``program`` runs a whole program (stdin/stdout tasks);
   ``candidate`` loads model-written code and answers calls, one JSON line per call, with plain
   data; ``checker`` runs a task's trusted tests with every function under test replaced by a
   proxy that asks the host, and writes the verdict with the run's secret.

Plain data are None, bool, int, float, complex, str, bytes and lists, tuples, dicts, sets and
frozensets of them, each tagged with its exact type: a subclass, a generator or an object with
its own ``__eq__`` cannot be written (``collections``' Counter, OrderedDict and defaultdict are
written as the dict of their items, which they equal), and whatever bytes arrive are decoded
into builtin values only (:func:`decode`), with a size and a depth bound.
"""

from __future__ import annotations

import ast
import builtins
import json
import os
import sys

MAX_DEPTH = 64


class PlainDataError(ValueError):
    """A value that is not plain data, or a message that does not decode into plain data."""


# -- the codec ----------------------------------------------------------------------------------
_DICTS = ("Counter", "OrderedDict", "defaultdict")


def _enc(value, depth):
    if depth > MAX_DEPTH:
        raise PlainDataError("nested too deeply")
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is int:
        return ["i", hex(value)]
    if kind is float:
        return ["f", value.hex()]
    if kind is complex:
        return ["c", value.real.hex(), value.imag.hex()]
    if kind is bytes:
        return ["b", value.hex()]
    if kind is list or kind is tuple or kind is set or kind is frozenset:
        tag = {list: "l", tuple: "t", set: "s", frozenset: "F"}[kind]
        return [tag, [_enc(v, depth + 1) for v in value]]
    if kind is dict or (isinstance(value, dict) and kind.__module__ == "collections"
                        and kind.__name__ in _DICTS):  # fmt: skip
        # Counter, OrderedDict and defaultdict equal a dict of their items: their items, read
        # from the dict itself (no method of theirs runs)
        return ["d", [[_enc(k, depth + 1), _enc(v, depth + 1)] for k, v in dict.items(value)]]
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays: their plain values
    if type(value).__module__ == "numpy" and callable(tolist):
        return _enc(tolist(), depth)
    raise PlainDataError(f"a {kind.__name__} is not plain data")


def encode(value) -> object:
    """``value`` as a JSON-ready tree that keeps every type; :class:`PlainDataError` if it is
    not plain data."""
    try:
        return _enc(value, 0)
    except RecursionError:
        raise PlainDataError("nested too deeply") from None


def _tag(obj, depth):
    """The tag of an encoded value; None for a value that stands as itself (None, bool, str)."""
    if depth > MAX_DEPTH:
        raise PlainDataError("nested too deeply")
    kind = type(obj)
    if obj is None or kind is bool or kind is str:
        return None
    if kind is not list or not obj or type(obj[0]) is not str:
        raise PlainDataError("not a tagged value")
    return obj[0]


def _dec(obj, depth):
    tag = _tag(obj, depth)
    if tag is None:
        return obj
    if tag in ("i", "f", "b") and len(obj) == 2 and type(obj[1]) is str:
        text = obj[1]
        if tag == "i":
            return int(text, 16)
        if tag == "f":
            return float.fromhex(text)
        return bytes.fromhex(text)
    if tag == "c" and len(obj) == 3 and type(obj[1]) is str and type(obj[2]) is str:
        return complex(float.fromhex(obj[1]), float.fromhex(obj[2]))
    if tag in ("l", "t", "s", "F", "d") and len(obj) == 2 and type(obj[1]) is list:
        if tag == "d":
            out = {}
            for pair in obj[1]:
                if type(pair) is not list or len(pair) != 2:
                    raise PlainDataError("a dict entry is not a pair")
                out[_dec(pair[0], depth + 1)] = _dec(pair[1], depth + 1)
            return out
        items = [_dec(v, depth + 1) for v in obj[1]]
        return {"l": list, "t": tuple, "s": set, "F": frozenset}[tag](items)
    raise PlainDataError(f"unknown tag {tag[:20]!r}")


def decode(obj) -> object:
    """The plain value of an :func:`encode` tree that came from anywhere (hostile included)."""
    try:
        return _dec(obj, 0)
    except PlainDataError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise PlainDataError(f"{type(exc).__name__}: {str(exc)[:200]}") from None


_HASHABLE = ("t", "F")  # the containers that may be a set's element or a dict's key


def _relay(obj, depth, hashable):
    tag = _tag(obj, depth)
    if tag is None:
        return obj
    if tag in ("i", "f", "b", "c"):  # a scalar: parsed and written again, in linear time
        return _enc(_dec(obj, depth), depth)
    if tag in ("l", "t", "s", "F", "d") and len(obj) == 2 and type(obj[1]) is list:
        if hashable and tag not in _HASHABLE:
            raise PlainDataError("an unhashable value as a set element or a dict key")
        if tag == "d":
            out = []
            for pair in obj[1]:
                if type(pair) is not list or len(pair) != 2:
                    raise PlainDataError("a dict entry is not a pair")
                out.append([_relay(pair[0], depth + 1, True), _relay(pair[1], depth + 1, False)])
            return ["d", out]
        inner = hashable or tag in ("s", "F")
        return [tag, [_relay(v, depth + 1, inner) for v in obj[1]]]
    raise PlainDataError(f"unknown tag {tag[:20]!r}")


def relay(obj) -> object:
    """The :func:`encode` tree ``obj`` checked and written again, for the host to pass on.

    It checks what :func:`decode` would (tags, numbers, depth; set elements and dict keys
    hashable) without building a set or a dict: hashing is the one step whose cost the sender
    chooses (ints that all hash alike make a set quadratic: minutes of one C call, holding the
    host's GIL), so it is left to the sandbox that receives the value, under its own budgets.
    """
    try:
        return _relay(obj, 0, False)
    except PlainDataError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise PlainDataError(f"{type(exc).__name__}: {str(exc)[:200]}") from None


# -- strict comparison (the checker's ==, != and in) --------------------------------------------
_NUMBERS = (int, float)


def _key(value):
    """A hashable stand-in for a set element or a dict key that is equal to another's exactly
    when the two are :func:`strict_equal` (inside tuples and frozensets too: ``(True,)`` is
    not ``(1,)``)."""
    kind = type(value)
    if kind in _NUMBERS:
        return ("n", value)
    if kind is tuple:
        return ("t", tuple(_key(v) for v in value))
    if kind is frozenset:
        return ("F", frozenset(_key(v) for v in value))
    return (kind.__name__, value)


def strict_equal(a, b) -> bool:
    """``a == b`` with types: bool never equals a number (``True != 1``), a list never a tuple,
    a set never a frozenset, at any depth (set elements and dict keys included); int and float
    compare by value."""
    ta, tb = type(a), type(b)
    if ta is not tb:
        return ta in _NUMBERS and tb in _NUMBERS and a == b
    if ta is list or ta is tuple:
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))  # noqa: B905
    if ta is dict:
        if len(a) != len(b):
            return False
        typed = {_key(k): v for k, v in b.items()}
        return all(_key(k) in typed and strict_equal(v, typed[_key(k)]) for k, v in a.items())
    if ta is set or ta is frozenset:
        return len(a) == len(b) and {_key(x) for x in a} == {_key(x) for x in b}
    return bool(a == b)


def _compare(left, ops, rights):
    for op, right in zip(ops, rights):  # noqa: B905 (the sandbox's Python may be older)
        if op == "==":
            ok = strict_equal(left, right)
        elif op == "!=":
            ok = not strict_equal(left, right)
        elif op in ("in", "not in"):
            if type(right) in (str, bytes):
                ok = left in right
            elif type(right) is dict:
                ok = any(strict_equal(left, k) for k in right)
            else:
                ok = any(strict_equal(left, x) for x in right)
            ok = ok if op == "in" else not ok
        else:
            ok = _OPS[op](left, right)
        if not ok:
            return False
        left = right
    return True


def _truth(value):
    """An asserted call's result must be a bool (``assert f(x)`` is not passed by ``[0]``)."""
    if type(value) is not bool:
        raise AssertionError(f"expected True or False, got a {type(value).__name__}")
    return value


def _truthful(func):
    """``func`` whose results must be bools (``all(map(f, xs))`` in an assert)."""
    return lambda *args, **kwargs: _truth(func(*args, **kwargs))


_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "is": lambda a, b: a is b,
        "is not": lambda a, b: a is not b}  # fmt: skip
_OP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Lt: "<",
            ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not"}  # fmt: skip


class _Strict(ast.NodeTransformer):
    """Rewrites tests so that ``==``, ``!=``, ``in`` compare with types, and a call of a
    function under test whose result an assert truth-tests must return a bool."""

    def __init__(self, called: set[str]):
        self.called = called

    def visit_Compare(self, node):  # noqa: N802
        self.generic_visit(node)
        ops = [_OP_TEXT[type(op)] for op in node.ops]
        if not set(ops) & {"==", "!=", "in", "not in"}:
            return node
        call = ast.Call(ast.Name("_dl_compare", ast.Load()),
                        [node.left, ast.Tuple([ast.Constant(o) for o in ops], ast.Load()),
                         ast.Tuple(node.comparators, ast.Load())], [])  # fmt: skip
        return ast.copy_location(call, node)

    def visit_Assert(self, node):  # noqa: N802
        self.generic_visit(node)
        node.test = self._asserted(node.test)
        ast.fix_missing_locations(node)
        return node

    def _under_test(self, node):
        return isinstance(node, ast.Name) and node.id in self.called

    def _asserted(self, node):
        """``node``, whose truth an assert decides, with each call of a function under test
        whose result is truth-tested there wrapped in ``_dl_truth``: the call itself, and
        through ``not``, ``and``/``or``, ``x if c else y``, and ``all``/``any`` of a
        comprehension or of ``map(f, ...)``."""
        if isinstance(node, ast.Call) and self._under_test(node.func):
            return ast.copy_location(ast.Call(ast.Name("_dl_truth", ast.Load()), [node], []),
                                     node)  # fmt: skip
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node.operand = self._asserted(node.operand)
        elif isinstance(node, ast.BoolOp):
            node.values = [self._asserted(v) for v in node.values]
        elif isinstance(node, ast.IfExp):
            node.test, node.body, node.orelse = (self._asserted(node.test),
                                                 self._asserted(node.body),
                                                 self._asserted(node.orelse))  # fmt: skip
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("all", "any") and len(node.args) == 1 and not node.keywords:  # fmt: skip
            arg = node.args[0]
            if isinstance(arg, (ast.GeneratorExp, ast.ListComp, ast.SetComp)):
                arg.elt = self._asserted(arg.elt)
            elif isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and \
                    arg.func.id == "map" and arg.args and self._under_test(arg.args[0]):  # fmt: skip
                arg.args[0] = ast.copy_location(
                    ast.Call(ast.Name("_dl_truthful", ast.Load()), [arg.args[0]], []),
                    arg.args[0])  # fmt: skip
        return node


def free_names(tests: str) -> set[str]:
    """Names the tests read but never bind and that are no builtins: the functions under test."""
    tree = ast.parse(tests)
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return read - bound - set(dir(builtins))


# -- inside the sandbox -------------------------------------------------------------------------
def _confine(setup):
    """Mount the disk budget, forbid new namespaces and processes, drop every capability."""
    import ctypes
    import resource

    libc = ctypes.CDLL(None, use_errno=True)

    def check(result, what):
        if result != 0:
            raise OSError(ctypes.get_errno(), f"sandbox setup: {what} failed")

    options = f"size={setup['tmp_bytes']},nr_inodes={setup['tmp_files']},mode=1777"
    check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 2 | 4 | 8, options.encode()), "mount /tmp")
    with open("/proc/sys/user/max_user_namespaces", "w") as fh:  # no nested user namespace
        fh.write("0")
    for cap in range(64):  # the bounding set, then securebits: no capability comes back on exec
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            break
    check(libc.prctl(28, 0xEB, 0, 0, 0), "securebits")  # NOROOT, locks, no ambient raise
    check(libc.prctl(47, 4, 0, 0, 0), "clearing ambient capabilities")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]  # fmt: skip

    check(libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()), "capset")
    status = open("/proc/self/status").read()
    caps = {line.split(":")[0]: int(line.split()[1], 16) for line in status.splitlines()
            if line.startswith("Cap")}  # fmt: skip
    if any(caps.values()) or "NoNewPrivs:\t1" not in status:
        raise OSError("sandbox setup: capabilities are left")
    if open("/proc/sys/user/max_user_namespaces").read().strip() != "0":
        raise OSError("sandbox setup: user namespaces are not off")
    for limit, value in ((resource.RLIMIT_NPROC, 0), (resource.RLIMIT_NOFILE,
                                                      setup["open_files"])):  # fmt: skip
        resource.setrlimit(limit, (value, value))
    os.chdir("/tmp")
    os.environ["HOME"] = os.environ["TMPDIR"] = "/tmp"


def _lines(fd):
    """Lines from ``fd`` (the host bounds what it sends)."""
    buf = b""
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            yield json.loads(line)


def _send(fd, obj):
    data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    while data:
        data = data[os.write(fd, data) :]


def _serve_candidate(setup):
    """Load the model-written code, then answer each call with a plain value or an error."""
    space = {"__name__": "__candidate__", "__builtins__": builtins}
    requests, replies = setup["inbox"], setup["outbox"]
    try:
        exec(compile(setup["code"], "/tmp/solution.py", "exec"), space)
        load_error = None
    except BaseException as exc:  # noqa: BLE001 (anything the code raises is its failure)
        load_error = f"{type(exc).__name__}: {str(exc)[:150]}"
    for request in _lines(requests):
        seq = request["call"]
        if load_error is not None:
            _send(replies, {"seq": seq, "raise": "<load>", "detail": load_error})
            continue
        try:
            func = space[request["name"]]
            value = func(*decode(request["args"]), **decode(request["kwargs"]))
            _send(replies, {"seq": seq, "return": encode(value)})
        except PlainDataError as exc:
            _send(replies, {"seq": seq, "raise": "<not plain data>", "detail": str(exc)})
        except BaseException as exc:  # noqa: BLE001
            _send(replies, {"seq": seq, "raise": type(exc).__name__})


class CandidateError(Exception):
    """The function under test raised, or could not answer."""


class _Proxy:
    """Stands for a function under test: each call crosses to the host as plain data."""

    def __init__(self, name, channel):
        self.name, self._channel = name, channel

    def __call__(self, *args, **kwargs):
        return self._channel.call(self.name, args, kwargs)

    def __repr__(self):
        return f"<function {self.name} under test>"


class _Channel:
    def __init__(self, requests, replies):
        self.requests, self.replies, self.seq = requests, replies, 0
        self._incoming = _lines(replies)

    def call(self, name, args, kwargs):
        self.seq += 1
        _send(self.requests, {"call": self.seq, "name": name, "args": encode(list(args)),
                              "kwargs": encode(dict(kwargs))})  # fmt: skip
        reply = next(self._incoming)
        if reply.get("seq") != self.seq:
            raise SystemExit("out of step with the host")
        if "return" in reply:
            return decode(reply["return"])
        kind = getattr(builtins, str(reply.get("raise")), None)
        # StopIteration ends whatever iterates over the calls (``all(map(f, xs))`` would pass
        # with no call answered): it crosses as a failure of the function, like a crash
        if isinstance(kind, type) and issubclass(kind, Exception) and \
                not issubclass(kind, (StopIteration, StopAsyncIteration)):  # fmt: skip
            raise kind(f"raised by {name}")
        raise CandidateError(f"{name}: {reply.get('raise')} {reply.get('detail', '')}".strip())


def _run_checker(setup):
    """Run the tests with proxies for the functions under test; write the verdict."""
    channel = _Channel(setup["outbox"], setup["inbox"])
    called = set(setup["under_test"]) | {"candidate"}
    space = {"__name__": "__main__", "__builtins__": builtins, "_dl_compare": _compare,
             "_dl_truth": _truth, "_dl_truthful": _truthful}  # fmt: skip
    verdict = {"verdict": setup["nonce"], "passed": False}
    try:
        if setup.get("header"):
            exec(compile(setup["header"], "/tmp/header.py", "exec"), space)
        for name in setup["under_test"]:
            space[name] = _Proxy(name, channel)
        tree = ast.fix_missing_locations(_Strict(called).visit(ast.parse(setup["tests"])))
        exec(compile(tree, "/tmp/tests.py", "exec"), space)
        if setup.get("check"):
            space["check"](space[setup["check"]])
        verdict["passed"] = True
    except BaseException as exc:  # noqa: BLE001 (any failure of the tests is a fail verdict)
        verdict["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    _send(setup["outbox"], verdict)


def _run_program(setup):
    space = {"__name__": "__main__", "__builtins__": builtins, "__file__": "/tmp/main.py"}
    sys.argv = ["/tmp/main.py"]
    exec(compile(setup["code"], "/tmp/main.py", "exec"), space)


def main(setup):
    _confine(setup)
    role = setup["role"]
    del setup["role"]
    {"program": _run_program, "candidate": _serve_candidate, "checker": _run_checker}[role](setup)


if __name__ == "__harness__":
    main(SETUP)  # noqa: F821 (given by the bootstrap)
