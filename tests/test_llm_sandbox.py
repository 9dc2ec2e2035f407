"""The sandbox that runs model-written code (bubblewrap), and the verifiers built on it:
HumanEval's canonical solutions pass and mutated ones fail; ARC grids are compared exactly."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from debatelab.llm.sandbox import NOBODY, SandboxLimits, run_python

pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("DEBATELAB_REQUIRE_LLM"),
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)


def test_a_plain_program_runs_and_reads_stdin():
    result = run_python("import sys\nprint(sys.stdin.read().upper())", stdin="abc")
    assert result.ok and result.stdout.strip() == "ABC"


def test_the_network_is_unreachable():
    code = ("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), timeout=3)\n"
            "    print('connected')\nexcept OSError as e:\n    print('refused', e.errno)")  # fmt: skip
    result = run_python(code)
    assert result.ok and result.stdout.startswith("refused"), result


@pytest.mark.parametrize("target", ["/etc/debatelab-escape", "/usr/debatelab-escape",
                                    os.path.expanduser("~/debatelab-escape"),
                                    os.path.abspath("debatelab-escape")])  # fmt: skip
def test_writes_outside_the_work_folder_are_refused(target):
    result = run_python(f"open({target!r}, 'w').write('x')")
    assert not result.ok and ("Error" in result.stderr), result
    assert not os.path.exists(target)


def test_the_work_folder_and_tmp_are_writable_and_private():
    result = run_python("open('/work/a', 'w').write('1'); open('/tmp/b', 'w').write('2');"
                        "import os; print(sorted(os.listdir('/work')), os.getuid())")  # fmt: skip
    assert result.ok and result.stdout.split()[:2] == ["['a',", "'main.py']"]
    assert int(result.stdout.split()[-1]) == NOBODY


def test_an_infinite_loop_is_stopped_by_the_wall_clock_and_by_cpu_time():
    start = time.perf_counter()
    wall = run_python("while True: pass", SandboxLimits(wall_seconds=2, cpu_seconds=30))
    assert wall.status == "timeout" and time.perf_counter() - start < 6
    cpu = run_python("while True: pass", SandboxLimits(wall_seconds=30, cpu_seconds=1))
    assert cpu.status == "killed", cpu


def test_a_fork_bomb_is_contained():
    start = time.perf_counter()
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    result = run_python(bomb, SandboxLimits(wall_seconds=4, processes=16))
    assert not result.ok and time.perf_counter() - start < 10
    assert run_python("print('still fine')").ok  # the machine is usable at once


def test_a_memory_hog_is_stopped():
    result = run_python("x = bytearray(8 << 30)\nprint('allocated')", SandboxLimits(memory_mb=512))
    assert not result.ok and "allocated" not in result.stdout and "MemoryError" in result.stderr


def test_humaneval_canonical_solutions_pass_and_mutated_ones_fail():
    from debatelab.llm.tasks import humaneval_task

    task = humaneval_task()
    questions = task.questions()
    assert len(questions) == 164
    passed = [task.verify(q, q.truth["canonical"]) for q in questions]
    assert sum(passed) == 164
    for q in questions[:40]:  # the body replaced by a constant: every problem's tests catch it
        assert task.verify(q, "    return None\n") == 0.0, q.id
    # a whole function in a fenced reply is found and passes; a broken one does not
    q = questions[2]
    whole = q.truth["header"] + q.truth["canonical"]
    assert task.verify(q, task.answer(q, f"Sure.\n```python\n{whole}```\nDone.")) == 1.0
    assert task.verify(q, task.answer(q, f"```python\n{whole.replace('1.0', '2.0')}```")) == 0.0
    assert task.answer(q, "I cannot help with that.") is None


def test_user_code_tasks_with_asserts_and_with_stdin_cases(tmp_path):
    from debatelab.llm.tasks import code_file_task

    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": "add", "prompt": "add(a, b)", "tests": "assert add(2, 3) == 5"}\n'
                    '{"id": "echo", "prompt": "double a number", '
                    '"io": [{"input": "2", "output": "4"}, {"input": "5", "output": "10"}]}\n')  # fmt: skip
    task = code_file_task(path)
    add, echo = task.questions()
    assert task.verify(add, "def add(a, b):\n    return a + b\n") == 1.0
    assert task.verify(add, "def add(a, b):\n    return a - b\n") == 0.0
    assert task.verify(echo, "print(2 * int(input()))") == 1.0
    assert task.verify(echo, "print(4)") == 0.0
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "prompt": "x"}\n')
    with pytest.raises(ValueError, match="either 'tests'"):
        code_file_task(tmp_path / "bad.jsonl")


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
