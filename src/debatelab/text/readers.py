"""Read and write pools: JSON Lines (nested per question, or flat leaf rows) and a long table
(CSV or Parquet) with one row per leaf.

Long table columns (one row per scored leaf):

| column            | required | meaning                                                    |
|-------------------|----------|------------------------------------------------------------|
| question_id       | yes      | the question                                               |
| proposal_id       | yes      | the proposal, unique within the question                   |
| critique_id       | no       | empty for a proposal-only leaf                             |
| rebuttal_id       | no       | empty unless the leaf is a rebuttal (needs a critique_id)  |
| critique2_id, ... | no       | later rounds (each needs the id before it): critique2_id,  |
|                   |          | rebuttal2_id, critique3_id, ...                            |
| score             | yes      | judge P(yes) / (P(yes) + P(no)), in [0, 1]                 |
| correct           | yes      | the proposal's ground-truth correctness (0/1, true/false)  |
| arm               | no       | proposer pool, default 'main' (e.g. 'control')             |
| proposal_tokens   | no       | tokens of the proposal                                     |
| critique_tokens   | no       | tokens of the critique                                     |
| rebuttal_tokens   | no       | tokens of the rebuttal (critique2_tokens, ... likewise)    |

A leaf's protocol follows from the ids it has. Nested JSON Lines: one object per question,
``{"question_id", "arm"?, "proposals": [{"id", "correct", "score"?, "tokens"?,
"critiques": [{"id", "score"?, "tokens"?, "rebuttals": [{"id", "score", "tokens"?}]}]}]}``,
where a ``score`` on a proposal is its proposal-only leaf and on a critique its
proposal + critique leaf; deeper pools go on alternating (a rebuttal's ``critiques``, their
``rebuttals``, ...). Lines without ``proposals`` are read as flat leaf rows.
"""

from __future__ import annotations

import codecs
import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import write_atomic
from ..games.core import pool_level_name
from .pools import MAIN_ARM, PoolError, PoolSet, QuestionPool, protocol_at_depth

REQUIRED = ("question_id", "proposal_id", "score", "correct")
_TRUE = {"1", "1.0", "true", "t", "yes", "y"}
_FALSE = {"0", "0.0", "false", "f", "no", "n"}


def level_column(level: int, what: str = "id") -> str:
    """The long table's column of a pool level (0 the proposals): proposal_id, critique_id,
    rebuttal_id, critique2_id, ... (``what`` 'tokens': proposal_tokens, ...)."""
    name = pool_level_name(level)
    return f"{name[:-1]}_{what}" if name.endswith("s") else f"{name.replace('s', '', 1)}_{what}"


def _depth_of_columns(names) -> int:
    """The deepest level whose id column is among ``names`` (1: proposals only)."""
    depth = 1
    while level_column(depth) in names or level_column(depth, "tokens") in names:
        depth += 1
    return depth


def read_pools(path: str | Path) -> PoolSet:
    """Read pools from ``.jsonl``/``.json``, ``.csv`` or ``.parquet``, validated; a folder is
    read through its ``pools.jsonl`` (a ``debatelab pools generate`` run)."""
    path = Path(path)
    if path.is_dir():
        if not (path / "pools.jsonl").is_file():
            raise FileNotFoundError(f"{path} is a folder without pools.jsonl; give a pool file "
                                    "or a finished `debatelab pools generate` run folder")  # fmt: skip
        path = path / "pools.jsonl"
    if not path.exists():
        raise FileNotFoundError(f"no pool file at {path}")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return read_jsonl(path)
    if suffix == ".csv":
        _require_text(path, "a CSV pool file")
        return read_csv(path)
    if suffix in (".parquet", ".pq"):
        return read_parquet(path)
    raise PoolError(f"{path}: unknown pool format {suffix!r}; use .jsonl, .csv or .parquet")


_WANTED = ("give a pool file as JSON Lines (.jsonl), CSV (.csv) or Parquet (.parquet), or the "
           "folder of a `debatelab pools generate` run")  # fmt: skip


def _not_text(path, where: str) -> PoolError:
    return PoolError(f"{path} is not a text file ({where}); {_WANTED}")


def _require_text(path: Path, kind: str, probe: int = 1 << 20) -> None:
    """One clear error when ``path`` (read as ``kind``) is binary: a NUL byte or bytes that are
    not UTF-8 in its first MiB."""
    with open(path, "rb") as fh:
        head = fh.read(probe)
    nul = head.find(b"\0")
    if nul >= 0:
        raise _not_text(path, f"a NUL byte at offset {nul}")
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < probe)
    except UnicodeDecodeError as exc:
        raise _not_text(path, f"byte {exc.start} is not UTF-8") from None


def read_jsonl(path: str | Path) -> PoolSet:
    rows: list[dict[str, Any]] = []
    _require_text(Path(path), "JSON Lines")
    with open(path, encoding="utf-8") as fh:
        lines, lineno = enumerate(fh, 1), 0
        while True:
            try:
                lineno, line = next(lines)
            except StopIteration:
                break
            except UnicodeDecodeError as exc:  # past the first MiB
                raise _not_text(path, f"after line {lineno}: {exc.reason}") from None
            if "\0" in line:
                raise _not_text(path, f"line {lineno} holds a NUL byte")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise PoolError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(obj, dict):
                raise PoolError(f"{path}:{lineno}: expected a JSON object per line")
            if "proposals" in obj:
                rows.extend(_flatten_question(obj, f"{path}:{lineno}"))
            else:
                rows.append(obj)
    return pools_from_records(rows, source=str(path))


def _flatten_question(obj: dict, where: str) -> list[dict[str, Any]]:
    if "question_id" not in obj:
        raise PoolError(f"{where}: question object without 'question_id'")
    base = {"question_id": obj["question_id"], "arm": obj.get("arm", MAIN_ARM)}
    if not obj["proposals"]:
        raise PoolError(f"{where}: question {obj['question_id']!r} has an empty proposal pool")
    rows = []
    for prop in obj["proposals"]:
        if "id" not in prop:
            raise PoolError(f"{where}: a proposal of question {obj['question_id']!r} has no 'id'")
        p = {**base, "proposal_id": prop["id"], "correct": prop.get("correct"),
             "proposal_tokens": prop.get("tokens")}  # fmt: skip
        n_before = len(rows)
        if "score" in prop:
            rows.append({**p, "score": prop["score"]})
        _flatten_children(prop, p, 1, rows)
        if len(rows) == n_before:
            raise PoolError(f"{where}: proposal {prop['id']!r} of question "
                            f"{obj['question_id']!r} has no scored leaf")  # fmt: skip
    return rows


def _flatten_children(node: dict, row: dict, level: int, rows: list) -> None:
    """The leaves under ``node`` (a proposal at level 0): its ``critiques``, their
    ``rebuttals``, their ``critiques``, ... alternating to any depth."""
    for child in node.get("critiques" if level % 2 else "rebuttals", []):
        c = {**row, level_column(level): child.get("id"),
             level_column(level, "tokens"): child.get("tokens")}  # fmt: skip
        if "score" in child:
            rows.append({**c, "score": child["score"]})
        _flatten_children(child, c, level + 1, rows)


def pools_from_records(rows: list[dict[str, Any]], source: str = "records") -> PoolSet:
    """Pools from flat leaf rows (dicts with the long-table columns)."""
    if not rows:
        raise PoolError(f"{source}: no rows")
    names = set().union(*(r.keys() for r in rows))
    cols = {name: [r.get(name) for r in rows] for name in names}
    return pools_from_columns(cols, source=source)


def read_csv(path: str | Path) -> PoolSet:
    try:  # pyarrow parses CSV an order of magnitude faster than the csv module
        import pyarrow.csv as pacsv
    except ImportError:
        pacsv = None
    if pacsv is not None and Path(path).stat().st_size > 0:
        try:
            table = pacsv.read_csv(path)
        except Exception as exc:  # pyarrow's errors carry no common base class
            raise PoolError(f"{path}: cannot parse as CSV ({exc})") from exc
        cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in table.column_names}
        return pools_from_columns(cols, source=str(path))
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise PoolError(f"{path}: empty file") from None
        data = list(zip(*reader, strict=False)) if header else []
    if not data:
        raise PoolError(f"{path}: no rows")
    return pools_from_columns(dict(zip(header, data, strict=True)), source=str(path))


def read_parquet(path: str | Path) -> PoolSet:
    pq = _pyarrow_parquet()
    table = pq.read_table(path)
    cols = {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}
    return pools_from_columns(cols, source=str(path))


def _pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise PoolError("reading or writing Parquet needs pyarrow: pip install pyarrow") from exc
    return pq


def _ids(values, name: str, source: str, required: bool) -> np.ndarray:
    arr = np.asarray(values, dtype=object)
    missing = np.equal(arr, None) | np.equal(arr, "") | np.not_equal(arr, arr)  # None, '', NaN
    out = arr.astype(str)
    out[missing] = ""
    if required and (out == "").any():
        row = int(np.flatnonzero(out == "")[0])
        raise PoolError(f"{source}: row {row + 1} has no {name}")
    return out


def _missing(v) -> bool:
    return (
        v is None
        or (isinstance(v, float) and math.isnan(v))
        or (isinstance(v, str) and not v.strip())
    )


def _floats(values, name: str, source: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind in "fiub":
        return arr.astype(np.float64)
    try:  # numbers, numeric strings and None (-> NaN) in one C loop
        return np.array(arr, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    out = np.empty(len(values))
    for i, v in enumerate(values):
        if _missing(v):
            out[i] = np.nan
            continue
        if isinstance(v, str):
            s = v.strip().lower()
            if name == "correct" and s in _TRUE | _FALSE:
                out[i] = 1.0 if s in _TRUE else 0.0
                continue
            v = s
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            raise PoolError(f"{source}: row {i + 1}: {name} {v!r} is not a number") from None
    return out


def pools_from_columns(cols: dict[str, Any], source: str = "table") -> PoolSet:
    """Pools from a long table given as columns (one row per leaf); see the module docstring."""
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise PoolError(f"{source}: missing column(s) {missing}; required: {list(REQUIRED)}")
    n_rows = len(cols["score"])
    if n_rows == 0:
        raise PoolError(f"{source}: no rows")
    blank = [None] * n_rows
    max_depth = _depth_of_columns(cols)
    levels = [level_column(d) for d in range(max_depth)]
    id_columns = ("question_id", "arm", *levels)
    ids = {c: _ids(cols.get(c, blank), c, source, c in REQUIRED) for c in id_columns}
    ids["arm"] = np.where(ids["arm"] == "", MAIN_ARM, ids["arm"])
    score = _floats(cols["score"], "score", source)
    correct = _floats(cols["correct"], "correct", source)
    if np.isnan(score).any():
        raise PoolError(f"{source}: row {int(np.flatnonzero(np.isnan(score))[0]) + 1}: "
                        "score is missing or NaN")  # fmt: skip
    if np.isnan(correct).any():
        row = int(np.flatnonzero(np.isnan(correct))[0])
        raise PoolError(f"{source}: row {row + 1}: correctness is missing for proposal "
                        f"{ids['proposal_id'][row]!r} of question {ids['question_id'][row]!r}")  # fmt: skip
    tokens = [_floats(cols[c], c, source) if c in cols else np.full(n_rows, np.nan)
              for c in (level_column(d, "tokens") for d in range(max_depth))]  # fmt: skip
    has = [ids[c] != "" for c in levels[1:]]
    for d in range(1, len(has)):
        if (has[d] & ~has[d - 1]).any():
            row = int(np.flatnonzero(has[d] & ~has[d - 1])[0])
            raise PoolError(f"{source}: row {row + 1}: a {levels[d + 1]} needs a {levels[d]}")
    depth = 1 + np.sum(has, axis=0, dtype=np.int64) if has else np.ones(n_rows, np.int64)
    codes = {c: np.unique(ids[c], return_inverse=True)[1].astype(np.int64) for c in id_columns}
    group = codes["arm"] * (codes["question_id"].max() + 1) + codes["question_id"]
    order = np.lexsort((*(codes[c] for c in reversed(levels)), depth, group))
    key = np.stack([group, depth, *(codes[c] for c in levels)], axis=1)[order]
    dup = (key[1:] == key[:-1]).all(axis=1)
    if dup.any():
        row = int(order[np.flatnonzero(dup)[0]])
        path = ", ".join(f"{c[:-3]} {ids[c][row] or '-'!r}" for c in levels)
        raise PoolError(f"{source}: duplicate leaf (question {ids['question_id'][row]!r}, "
                        f"{path})")  # fmt: skip
    bounds = np.flatnonzero(np.diff(key[:, 0])) + 1
    questions = []
    for rows in np.split(order, bounds):
        questions.append(_question(rows, ids, codes, levels, depth, score, correct, tokens,
                                   source))  # fmt: skip
    return PoolSet(tuple(questions))


def _question(rows, ids, codes, levels, depth, score, correct, tokens, source) -> QuestionPool:
    qid, arm = str(ids["question_id"][rows[0]]), str(ids["arm"][rows[0]])
    where = f"{source}: question {qid!r} (arm {arm!r})"
    p_codes, first = np.unique(codes["proposal_id"][rows], return_index=True)
    n = p_codes.size
    p_local = np.searchsorted(p_codes, codes["proposal_id"][rows])
    lo = np.full(n, np.inf)
    hi = np.full(n, -np.inf)
    np.minimum.at(lo, p_local, correct[rows])
    np.maximum.at(hi, p_local, correct[rows])
    if (lo != hi).any():
        bad = ids["proposal_id"][rows[first[np.flatnonzero(lo != hi)[0]]]]
        raise PoolError(f"{where}: proposal {str(bad)!r} has conflicting correctness values")
    proposal_ids = tuple(str(p) for p in ids["proposal_id"][rows[first]])
    scores, toks = {}, {}
    for d in range(1, len(levels) + 1):
        proto = protocol_at_depth(d)
        sel = rows[depth[rows] == d]  # already sorted by proposal, critique, rebuttal, ...
        if sel.size == 0:
            continue
        shape = _rectangle(sel, codes, levels, d, n, where, proto, proposal_ids, p_codes)
        scores[proto] = score[sel].reshape(shape)
        tok = sum(tokens[k][sel] for k in range(d))
        if np.isfinite(tok).all():
            toks[proto] = tok.reshape(shape)
    return QuestionPool(question_id=qid, arm=arm, correct=lo, scores=scores,
                        proposal_ids=proposal_ids, tokens=toks)  # fmt: skip


def _rectangle(sel, codes, levels, d, n, where, proto, proposal_ids, p_codes) -> tuple[int, ...]:
    p = codes["proposal_id"][sel]
    present = np.unique(p)
    if present.size != n:
        lacking = [proposal_ids[i] for i in np.flatnonzero(~np.isin(p_codes, present))[:3]]
        raise PoolError(f"{where}: ragged pool: proposal(s) {lacking} have no {proto!r} leaves "
                        f"while {present.size} of {n} proposals do")  # fmt: skip
    shape = [n]
    # rows are sorted by their path: a node of level k starts where the path up to k changes
    new_parent = np.concatenate([[True], p[1:] != p[:-1]])
    for k in range(1, d):
        code = codes[levels[k]][sel]
        new = new_parent | np.concatenate([[True], code[1:] != code[:-1]])
        per_parent = np.bincount(np.cumsum(new_parent)[new] - 1)
        if per_parent.min() != per_parent.max():
            parent = pool_level_name(k - 1)[:-1].rstrip("s")
            child = pool_level_name(k)
            raise PoolError(f"{where}: ragged {proto!r} pool: each {parent} must have the same "
                            f"number of {child}, found between {per_parent.min()} and "
                            f"{per_parent.max()}")  # fmt: skip
        shape.append(int(per_parent[0]))
        new_parent = new
    return tuple(shape)


def pools_to_records(pools: PoolSet) -> list[dict[str, Any]]:
    """Flat leaf rows of the long table (token columns only where a pool has tokens)."""
    rows = []
    deepest = max(max(3, arr.ndim) for q in pools for arr in q.scores.values())
    for q in pools:
        for proto, arr in q.scores.items():
            tok = q.tokens.get(proto)
            for idx in np.ndindex(arr.shape):
                row = {"question_id": q.question_id, "arm": q.arm,
                       "proposal_id": q.proposal_ids[idx[0]]}  # fmt: skip
                for k in range(1, deepest):  # the shallower leaves leave deeper ids empty
                    row[level_column(k)] = f"{'cr'[1 - k % 2]}{idx[k]}" if k < len(idx) else ""
                row["score"], row["correct"] = float(arr[idx]), float(q.correct[idx[0]])
                if tok is not None:  # transcript tokens stored on the leaf's last message
                    row[level_column(len(idx) - 1, "tokens")] = float(tok[idx])
                    for k in range(len(idx) - 1):
                        row[level_column(k, "tokens")] = 0.0
                rows.append(row)
    return rows


def write_pools(pools: PoolSet, path: str | Path) -> Path:
    """Write pools as a long table (``.csv``/``.parquet``) or flat JSON Lines (``.jsonl``)."""
    path = Path(path)
    rows = pools_to_records(pools)
    columns = list(dict.fromkeys(k for r in rows for k in r))
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        text = "".join(json.dumps(r) + "\n" for r in rows)
        return write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))
    if suffix == ".csv":

        def write(p: Path):
            with open(p, "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=columns, restval="")
                w.writeheader()
                w.writerows(rows)

        return write_atomic(path, write)
    if suffix in (".parquet", ".pq"):
        pq = _pyarrow_parquet()
        import pyarrow as pa

        table = pa.table({c: [r.get(c) for r in rows] for c in columns})
        return write_atomic(path, lambda p: pq.write_table(table, p))
    raise PoolError(f"{path}: unknown pool format {suffix!r}; use .jsonl, .csv or .parquet")
