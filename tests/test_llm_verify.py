"""The code verifier: HumanEval's 164 canonical solutions pass; every test-dodging proposal of
issue 38 fails, and so do proposals that attack the verifier's structure (the channel, the
secret, the codec, the comparison) rather than one trick; the plain-data codec and the typed
comparison on their own."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import Counter, OrderedDict, defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

from debatelab.llm.harness import PlainDataError, decode, encode, free_names, relay, strict_equal

needs_sandbox = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("DEBATELAB_REQUIRE_LLM"),
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)


@pytest.fixture(scope="module")
def humaneval():
    from debatelab.llm.tasks import humaneval_task

    task = humaneval_task()
    return task, {q.id: q for q in task.questions()}


@pytest.fixture(scope="module")
def humaneval_short():
    """HumanEval with a 3 s wall clock (the hanging proposals end sooner)."""
    from debatelab.llm.sandbox import SandboxLimits
    from debatelab.llm.tasks import humaneval_task

    task = humaneval_task(SandboxLimits(wall_seconds=3))
    return task, {q.id: q for q in task.questions()}


# -- the codec and the comparison (no sandbox) ---------------------------------------------------
PLAIN = [None, True, False, 0, -(10**5000), 2**64 + 1, 1.5, float("inf"), -0.0, 1e-300,
         complex(1, -2), "", "a\ud800b", b"\x00\xff", [1, [2, (3,)]], (), {"a": [1.0], 2: None},
         {1, "x", (2, 3)}, frozenset({b"k"}), {(1, 2): {"n": {True}}}]  # fmt: skip


@pytest.mark.parametrize("value", PLAIN, ids=lambda v: type(v).__name__)
def test_plain_values_cross_with_their_exact_types(value):
    import json

    back = decode(json.loads(json.dumps(encode(value))))
    assert type(back) is type(value) and strict_equal(back, value)
    if type(value) is not int:  # (a 5000-digit int has no repr)
        assert repr(back) == repr(value)


class _Liar(int):
    def __eq__(self, other):
        return True


class _LyingCounter(Counter):
    def __eq__(self, other):
        return True


def test_collections_dicts_are_written_as_their_items():
    for value in (Counter("aab"), OrderedDict(b=1, a=2), defaultdict(list, {1: [2]})):
        back = decode(encode(value))
        assert type(back) is dict and back == dict(value)


@pytest.mark.parametrize("value", [_Liar(3), object(), iter([1]), [1, _Liar(2)], {"k": print},
                                   type("S", (str,), {})("x"), range(3),
                                   _LyingCounter("a")])  # fmt: skip
def test_anything_else_cannot_be_encoded(value):
    with pytest.raises(PlainDataError):
        encode(value)


@pytest.mark.parametrize("message", [["x", "1"], ["i", "zz"], ["i", 5], ["l", "abc"], {"a": 1},
                                     ["d", [[["l", []], 1]]], ["s", [["l", []]]], 1.5, 7,
                                     ["f", "nan?"], ["d", [[1]]], ["l", [["q"]]],
                                     ["c", "0x1p0"], []])  # fmt: skip
def test_hostile_messages_decode_to_an_error_never_to_a_value(message):
    with pytest.raises(PlainDataError):
        decode(message)


def test_deep_nesting_is_refused_on_both_sides():
    deep: list = []
    for _ in range(100):
        deep = [deep]
    with pytest.raises(PlainDataError):
        encode(deep)
    tree: object = ["l", []]
    for _ in range(100_000):
        tree = ["l", [tree]]
    with pytest.raises(PlainDataError):
        decode(tree)


@pytest.mark.parametrize("value", PLAIN, ids=lambda v: type(v).__name__)
def test_the_hosts_relay_writes_what_encode_would(value):
    assert relay(encode(value)) == encode(value)


@pytest.mark.parametrize("message", [["s", [["l", []]]], ["d", [[["d", []], 1]]],
                                     ["F", [["t", [["s", []]]]]], ["s", [["t", [["l", []]]]]],
                                     ["x", "1"], ["i", "zz"], ["d", [[1]]]])  # fmt: skip
def test_the_relay_refuses_what_decode_would(message):
    with pytest.raises(PlainDataError):
        decode(message)
    with pytest.raises(PlainDataError):
        relay(message)


def test_the_relay_never_hashes_so_colliding_ints_cost_it_linear_time():
    """Ints that are multiples of 2**61 - 1 all hash to 0: decoding 100_000 of them as a set
    takes a minute of one C call that holds the GIL. The host only relays."""
    tree = ["s", [["i", hex(k * (2**61 - 1))] for k in range(1, 100_000)]]
    start = time.perf_counter()
    assert relay(tree) == tree
    assert time.perf_counter() - start < 2


def test_strict_equal_keeps_types_but_compares_numbers_by_value():
    assert not strict_equal(True, 1) and not strict_equal(1, True) and not strict_equal(0, False)
    assert strict_equal(2, 2.0) and strict_equal([1, (2.0,)], [1.0, (2,)])
    assert not strict_equal([1, 2], (1, 2)) and not strict_equal({1}, frozenset({1}))
    assert not strict_equal({True: 1}, {1: 1}) and strict_equal({1: "a"}, {1: "a"})
    assert not strict_equal({1, True and 2}, {True, 2}) and strict_equal({"a", 1}, {1, "a"})
    assert not strict_equal([True], [1]) and not strict_equal("1", 1)
    assert not strict_equal(b"a", "a") and not strict_equal(None, 0)
    # inside set elements and dict keys too (Python's == says (True,) == (1,))
    assert not strict_equal({(True, 2)}, {(1, 2)}) and strict_equal({(1, 2)}, {(1.0, 2)})
    assert not strict_equal({(1,): "a"}, {(True,): "a"}) and strict_equal({1: "a"}, {1.0: "a"})
    assert not strict_equal({frozenset({True})}, {frozenset({1})})
    assert strict_equal({(1, (2, frozenset({3}))): [1]}, {(1.0, (2, frozenset({3.0}))): [1.0]})


def test_the_functions_under_test_are_the_names_the_tests_never_bind():
    tests = "import math\nx = 3\ndef helper(y):\n    return y\nassert add(x, helper(2)) == 5\n" \
        "for i in range(3):\n    assert math.isclose(mul(i, 1.0), i)\n"  # fmt: skip
    assert free_names(tests) == {"add", "mul"}


# -- the verifier ---------------------------------------------------------------------------------
@needs_sandbox
def test_all_164_humaneval_canonical_solutions_pass(humaneval):
    task, questions = humaneval
    assert len(questions) == 164
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        verdicts = dict(zip(questions, pool.map(lambda q: task.check(q, q.truth["canonical"]),
                                                questions.values()), strict=True))  # fmt: skip
    elapsed = time.perf_counter() - start
    failed = {k: v.reason for k, v in verdicts.items() if not v.passed}
    assert not failed, failed
    calls = sum(v.calls for v in verdicts.values())
    print(f"164 canonical solutions: {elapsed:.1f} s, {calls} calls across the boundary")
    assert calls > 1000  # the tests' loops of random inputs cross one call at a time


@needs_sandbox
def test_right_solutions_in_other_shapes_pass(humaneval):
    """A dict answer built as a Counter (HumanEval/111), an entry point bound by assignment or
    import rather than ``def`` (it was taken for a body and put under the signature)."""
    task, questions = humaneval
    hist = ("from collections import Counter\ndef histogram(test):\n    c = Counter(test.split())\n"
            "    top = max(c.values(), default=0)\n"
            "    return Counter({k: v for k, v in c.items() if v == top})\n")  # fmt: skip
    assert task.check(questions["HumanEval/111"], hist).passed
    add = questions["HumanEval/53"]
    assert task.check(add, "add = lambda x, y: x + y\n").passed
    assert task.check(add, "from operator import add\n").passed
    assert not task.check(add, "from operator import sub as add\n").passed


@needs_sandbox
def test_wrong_solutions_fail(humaneval):
    task, questions = humaneval
    for q in list(questions.values())[:40]:  # the body replaced by a constant: all tests catch it
        assert not task.check(q, "    return None\n").passed, q.id
    q = questions["HumanEval/2"]
    whole = q.truth["header"] + q.truth["canonical"]
    assert task.verify(q, task.answer(q, f"Sure.\n```python\n{whole}```\nDone.")) == 1.0
    assert task.verify(q, task.answer(q, f"```python\n{whole.replace('1.0', '2.0')}```")) == 0.0
    assert task.answer(q, "I cannot help with that.") is None


ADD = "def add(x: int, y: int):\n"
#: The issue's hostile proposals (HumanEval/53, add), and more of the same kind.
HOSTILE = {
    "os._exit(0) before the tests": f"import os\nos._exit(0)\n{ADD}    return x + y\n",
    "raise SystemExit(0)": f"raise SystemExit(0)\n{ADD}    return x + y\n",
    "sys.exit(0) inside the function": f"import sys\n{ADD}    sys.exit(0)\n",
    "atexit.register(os._exit, 0)": f"import atexit, os\natexit.register(os._exit, 0)\n"
    f"{ADD}    return 0\n",  # fmt: skip
    "os.execv('/bin/true')": f"import os\nos.execv('/bin/true', ['true'])\n{ADD}    return 0\n",
    "os.execv inside the function": f"import os\n{ADD}    os.execv('/bin/true', ['true'])\n",
    "__eq__ always True": "class Yes:\n    def __eq__(self, other):\n        return True\n"
    "    __ne__ = lambda self, other: False\n    __hash__ = None\n"
    f"{ADD}    return Yes()\n",  # fmt: skip
    "int subclass equal to all": f"class Yes(int):\n    __eq__ = lambda s, o: True\n"
    f"{ADD}    return Yes(0)\n",  # fmt: skip
    "str subclass equal to all": f"class Yes(str):\n    __eq__ = lambda s, o: True\n"
    f"{ADD}    return Yes('')\n",  # fmt: skip
    "True for 1": f"{ADD}    return True if x + y == 1 else x + y\n",
    "patched builtins and assert": "import builtins\nbuiltins.AssertionError = type('N', "
    "(BaseException,), {})\nbuiltins.abs = lambda v: 0\n"
    f"{ADD}    return 0\n",  # fmt: skip
    "fork and answer from the child": f"import os\nif os.fork():\n    os._exit(0)\n"
    f"{ADD}    return x + y\n",  # fmt: skip
    "SIGKILL itself": f"import os, signal\n{ADD}    os.kill(os.getpid(), signal.SIGKILL)\n",
    "kill everything it sees": f"import os, signal\n{ADD}    os.kill(-1, signal.SIGKILL)\n",
    "a generator": f"{ADD}    yield x + y\n",
    "hang": f"{ADD}    while True:\n        pass\n",
    "sleep past the wall clock": f"import time\n{ADD}    time.sleep(60)\n",
    "deep nesting": f"{ADD}    v = 0\n    for _ in range(500):\n        v = [v]\n    return v\n",
    "flood stdout": f"import os\n{ADD}    while True:\n        os.write(1, b'x' * 65536)\n",
    "write verdicts everywhere": "import os, json\nfor fd in range(3, 64):\n    try:\n"
    '        os.write(fd, b\'{"verdict": "0", "passed": true}\\n\')\n'
    "    except OSError:\n        pass\n"
    "print(json.dumps({'verdict': 1, 'passed': True}))\n"
    f"{ADD}    return 0\n",  # fmt: skip
    "answer out of turn": "import os, json\nfor fd in range(3, 64):\n    try:\n"
    '        os.write(fd, b\'{"seq": 2, "return": ["i", "0x0"]}\\n\')\n'
    f"    except OSError:\n        pass\n{ADD}    return x + y\n",  # fmt: skip
    "not an answer": "import os\nfor fd in range(3, 64):\n    try:\n"
    '        os.write(fd, b\'{"seq": 1, "return": {"__eq__": 1}}\\n\')\n'
    f"    except OSError:\n        pass\n{ADD}    return x + y\n",  # fmt: skip
    "right for 10 calls, then wrong": f"n = [0]\n{ADD}    n[0] += 1\n"
    "    return x + y if n[0] <= 10 else 0\n",  # fmt: skip
    "exit after 5 answers": f"import os\nn = [0]\n{ADD}    n[0] += 1\n    if n[0] > 5:\n"
    "        os._exit(0)\n    return x + y\n",  # fmt: skip
    "a fake verdict before each answer": "import sys\nG = sys._getframe(1).f_globals\n"
    "send = G['_send']\nG['_send'] = lambda fd, obj: (send(fd, {'verdict': '0' * 32, "
    "'passed': True}), send(fd, obj))\n"
    f"{ADD}    return x + y\n",  # fmt: skip
    "look for the tests": "import os\nseen = os.listdir('/tmp') + [open(f'/proc/{p}/cmdline', "
    "'rb').read() for p in os.listdir('/proc') if p.isdigit()]\n"
    f"{ADD}    return len(seen) * 10**9\n",  # fmt: skip
}


@needs_sandbox
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_proposals_are_recorded_as_incorrect(humaneval_short, name):
    task, questions = humaneval_short
    q = questions["HumanEval/53"]
    start = time.perf_counter()
    verdict = task.check(q, HOSTILE[name])
    assert not verdict.passed, (name, verdict)
    assert time.perf_counter() - start < task.limits.wall_seconds + 5
    assert task.verify(q, f"{ADD}    return x + y\n") == 1.0  # the honest one, for contrast


@needs_sandbox
def test_an_answer_costly_to_hash_cannot_stall_the_host_and_fail_a_neighbour(humaneval_short):
    """A proposal that answers a set of ints that all hash alike (it patches the harness's
    encoder, so building it costs it nothing): decoding that set on the host was one C call of
    a minute holding the GIL, so a right proposal verified meanwhile in another thread (as
    pools do) timed out. The host now relays without hashing; the set costs the checker's
    budget only."""
    task, questions = humaneval_short
    q = questions["HumanEval/53"]
    hostile = ("import sys\nG = sys._getframe(1).f_globals\n"
               "tree = ['s', [['i', hex(k * (2**61 - 1))] for k in range(1, 60_000)]]\n"
               f"G['encode'] = lambda value: tree\n{ADD}    return x + y\n")  # fmt: skip
    honest = f"import time\n{ADD}    time.sleep(0.01)\n    return x + y\n"  # ~1 s of calls
    with ThreadPoolExecutor(1) as pool:
        neighbour = pool.submit(task.check, q, honest)
        time.sleep(0.3)
        start = time.perf_counter()
        verdict = task.check(q, hostile)
        elapsed = time.perf_counter() - start
        assert neighbour.result().passed, neighbour.result()
    assert not verdict.passed and elapsed < task.limits.wall_seconds + 2, (verdict, elapsed)


@needs_sandbox
def test_numeric_dodges_fail(humaneval):
    """NaN, inf and complex answers to the tests' float checks (``abs(f(x) - y) < 1e-6``,
    ``math.fabs(poly(xs, f(xs))) < 1e-4``) and 1/0 for ``is True``."""
    task, questions = humaneval
    for pid, body in [("HumanEval/32", "float('nan')"), ("HumanEval/32", "float('inf')"),
                      ("HumanEval/32", "0j"), ("HumanEval/2", "complex(number % 1.0, 1e-9)"),
                      ("HumanEval/72", "int(q == q[::-1] and sum(q) <= w)")]:  # fmt: skip
        q = questions[pid]
        assert not task.check(q, f"    return {body}\n").passed, (pid, body)


@needs_sandbox
def test_truthy_answers_to_a_bool_question_fail(humaneval):
    task, questions = humaneval
    q = questions["HumanEval/52"]  # below_threshold: `assert candidate(...)` / `assert not ...`
    honest = "def below_threshold(l, t):\n    return all(e < t for e in l)\n"
    assert task.check(q, honest).passed
    for dodge in ("[0] if all(e < t for e in l) else []", "1 if all(e < t for e in l) else 0"):
        verdict = task.check(q, f"def below_threshold(l, t):\n    return {dodge}\n")
        assert not verdict.passed and "True or False" in verdict.reason, verdict


@needs_sandbox
def test_the_channel_is_only_data_so_its_one_power_is_choosing_answers(humaneval):
    """A proposal that knows the protocol and bypasses the harness (it reads the calls and
    writes answers itself) is judged by its answers alone: right answers pass, one wrong answer
    fails. Nothing else it can write reaches the verdict: that is the guarantee, independent of
    the trick."""
    task, questions = humaneval
    q = questions["HumanEval/53"]
    raw = ("import fcntl, json, os, stat\ndef add(x, y):\n    return 0\n"
           "def fifo(f):\n    try:\n        return stat.S_ISFIFO(os.fstat(f).st_mode)\n"
           "    except OSError:\n        return False\n"
           "fds = [int(f) for f in os.listdir('/proc/self/fd') if int(f) > 2]\n"
           "pipes = [f for f in fds if fifo(f)]\n"
           "mode = lambda f: fcntl.fcntl(f, fcntl.F_GETFL) & os.O_ACCMODE\n"
           "inbox = [f for f in pipes if mode(f) == os.O_RDONLY][0]\n"
           "outbox = [f for f in pipes if mode(f) == os.O_WRONLY][0]\n"
           "buf = b''\n"
           "while True:\n"
           "    chunk = os.read(inbox, 65536)\n"
           "    if not chunk:\n        os._exit(0)\n"
           "    buf += chunk\n"
           "    while b'\\n' in buf:\n"
           "        line, buf = buf.split(b'\\n', 1)\n"
           "        call = json.loads(line)\n"
           "        x, y = (int(a[1], 16) for a in call['args'][1])\n"
           "        answer = x + y + OFFSET\n"
           "        os.write(outbox, json.dumps({'seq': call['call'], 'return': "
           "['i', hex(answer)]}).encode() + b'\\n')\n")  # fmt: skip
    assert task.check(q, raw.replace("OFFSET", "0")).passed
    assert not task.check(q, raw.replace("OFFSET", "(x == 7)")).passed


@needs_sandbox
def test_user_tests_that_iterate_or_combine_calls_are_not_dodged(tmp_path):
    """StopIteration raised by the function under test ended ``all(map(f, xs))`` with no call
    answered (the assert passed); truthy non-bools passed ``and``/``or``/``all`` asserts; and
    set elements and dict keys compared with Python's ``==`` (``(True, 2) == (1, 2)``)."""
    from debatelab.llm.tasks import code_file_task

    tasks = [
        ("map", "assert all(map(is_prime, [2, 3, 5, 7]))\nassert not any(map(is_prime, [4, 9]))"),
        ("ops", "assert is_prime(2) and is_prime(3)\nassert not (is_prime(4) or is_prime(6))"),
        ("gen", "assert all(is_prime(n) for n in [2, 3])\nassert not any([is_prime(4)])"),
        ("set", "assert is_prime(0) == {(1, 2), (0, 3)}\nassert is_prime(1) == {(1,): 'a'}"),
    ]  # fmt: skip
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps({"id": i, "prompt": "p", "tests": t}) + "\n"
                            for i, t in tasks))  # fmt: skip
    task = code_file_task(path)
    q = {x.id: x for x in task.questions()}
    prime = "def is_prime(n):\n    return n > 1 and all(n % d for d in range(2, n))\n"
    truthy = prime.replace("return n > 1", "return [n] if n > 1").replace("))\n", ")) else []\n")
    stop = "def is_prime(n):\n    raise StopIteration\n"
    for name in ("map", "ops", "gen"):
        assert task.check(q[name], prime).passed, name
        assert not task.check(q[name], truthy).passed, name
    assert not task.check(q["map"], stop).passed
    honest = "def is_prime(n):\n    return {(1, 2), (0, 3)} if n == 0 else {(1,): 'a'}\n"
    assert task.check(q["set"], honest).passed
    bools = honest.replace("(1, 2), (0, 3)", "(True, 2), (False, 3)").replace("(1,)", "(True,)")
    assert not task.check(q["set"], bools).passed


@needs_sandbox
def test_user_tasks_with_asserts_and_with_stdin_cases(tmp_path):
    from debatelab.llm.tasks import code_file_task

    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "add", "prompt": "add(a, b)", "tests": "assert add(2, 3) == 5"}\n'
                    '{"id": "flag", "prompt": "is_even(n)", "tests": "assert is_even(2)\\n'
                    'assert not is_even(3)\\ntry:\\n    is_even(\'x\')\\n    raise RuntimeError\\n'
                    'except TypeError:\\n    pass"}\n'
                    '{"id": "echo", "prompt": "double a number", '
                    '"io": [{"input": "2", "output": "4"}, {"input": "5", "output": "10"}]}\n')  # fmt: skip
    task = code_file_task(path)
    add, flag, echo = task.questions()
    assert task.verify(add, "def add(a, b):\n    return a + b\n") == 1.0
    assert task.verify(add, "def add(a, b):\n    return a - b\n") == 0.0
    assert task.verify(add, "import os\nos._exit(0)\n") == 0.0
    even = "def is_even(n):\n    if not isinstance(n, int):\n        raise TypeError(n)\n"
    assert task.verify(flag, even + "    return n % 2 == 0\n") == 1.0  # the exception crosses
    assert task.verify(flag, even + "    return 1 - n % 2\n") == 0.0  # 1 is not True
    assert task.verify(echo, "print(2 * int(input()))") == 1.0
    assert task.verify(echo, "print(4)") == 0.0
    # all of stdout is compared: not cut at `keep` bytes (a right 60 KB answer passes, a right
    # answer followed by 20000 blanks and junk fails)
    lines = "\n".join(["7"] * 30_000)
    (tmp_path / "long.jsonl").write_text(json.dumps({"id": "l", "prompt": "p", "io": [
        {"input": "30000", "output": lines}, {"input": "1", "output": "7"}]}) + "\n")  # fmt: skip
    (long,) = code_file_task(tmp_path / "long.jsonl").questions()
    assert task.verify(long, "print('\\n'.join(['7'] * int(input())))") == 1.0
    assert task.verify(echo, "print(2 * int(input()))\nprint(' ' * 20000 + 'junk')") == 0.0
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "prompt": "x"}\n')
    with pytest.raises(ValueError, match="either 'tests'"):
        code_file_task(tmp_path / "bad.jsonl")
    (tmp_path / "syntax.jsonl").write_text('{"id": 1, "prompt": "x", "tests": "assert ("}\n')
    with pytest.raises(ValueError, match=r"syntax.jsonl:1: the tests are not valid Python"):
        code_file_task(tmp_path / "syntax.jsonl")


def test_arc_answers_are_compared_exactly():
    from debatelab.llm.tasks import ArcTask, grid_text, parse_grid

    task = ArcTask()
    assert len({q.id.split("/")[0] for q in task.questions()}) == 400
    q = task.questions()[0]
    truth = q.truth["output"]
    right = f"The rule maps colours.\n```\n{grid_text(truth)}\n```"
    assert task.verify(q, task.answer(q, right)) == 1.0
    wrong = [row[:] for row in truth]
    wrong[0][0] = (wrong[0][0] + 1) % 10
    assert task.verify(q, task.answer(q, f"```\n{grid_text(wrong)}\n```")) == 0.0
    assert task.verify(q, task.answer(q, f"```\n{grid_text(truth[:-1])}\n```")) == 0.0
    assert parse_grid("rows:\n1 2 3\n4 5 6\nthat is all") == [[1, 2, 3], [4, 5, 6]]
    assert parse_grid("[[1, 2], [3, 4]]".replace("], [", "]\n[")) == [[1, 2], [3, 4]]
    assert task.answer(q, "no grid here") is None
    smallest = ArcTask("smallest").questions()
    assert [len(x.prompt) for x in smallest] == sorted(len(x.prompt) for x in smallest)
