"""One sort per node, every capability from prefix sums.

:class:`RankedChildren` sorts the children of many nodes at once, best-first for the player to
move, and answers "value (and expected leaf quantity) under rank policy p" for any number of
policies from the same sort: a top-k average is one prefix-sum look-up, other policies are a dot
product with their rank weights. The leaf quantity (``aux``, e.g. "the judge is right on the
revealed mask") rides along in the same order; tied values share their rank block's mass, as in
:mod:`debatelab.policies`, so nothing depends on how ties were sorted.

This is the fast path of the game core's level reducer (:func:`.core.reduce_level`): the same
values and carried quantities (tests/test_core.py ties each path to it: top-k prefix sums with
tie blocks straddling the cut, exact and uniform play without a sort, and the weighted path,
which applies the one tie rule, :func:`debatelab.policies.tie_shared`).

Float32 values with an ``aux`` are sorted as one uint64 key (order-preserving bits of the value
above the bits of ``aux``), which is several times faster than ``argsort`` plus gathers; float64
values use ``argsort`` (exact, for checks against brute force).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from ..policies import Exact, RankPolicy, TopK, Uniform, require_policy, tie_shared

#: Rows longer than this keep float64 prefix sums even for float32 values.
LONG_ROW = 1024


@dataclass(frozen=True)
class Reducer:
    """A rank policy resolved for ``n`` options: ``k`` for a (clamped) top-k, else ``policy``."""

    k: int | None = None
    policy: RankPolicy | None = None


def resolve(policy: RankPolicy, n: int) -> Reducer:
    """The reducer of ``policy`` at a node with ``n`` options (top-k clamped to ``n``)."""
    policy = require_policy(policy)
    if isinstance(policy, Exact):
        return Reducer(k=1)
    if isinstance(policy, Uniform):
        return Reducer(k=n)
    if isinstance(policy, TopK):
        return Reducer(k=min(int(policy.k), n))
    return Reducer(policy=policy)


_SIGN = np.uint32(0x80000000)
_LOW = np.uint32(0x7FFFFFFF)


def _sortable_bits(x: np.ndarray, maximize: bool) -> np.ndarray:
    """float32 -> uint32 whose ascending unsigned order is best-first for the player."""
    u = x.view(np.uint32)
    t = u >> np.uint32(31)  # 1 for negative floats
    if maximize:  # non-negative: invert the magnitude bits; negative: keep as is
        np.subtract(np.uint32(1), t, out=t)
        t *= _LOW
    else:  # non-negative: set the sign bit; negative: invert everything
        t *= _LOW
        t |= _SIGN
    t ^= u
    return t


def _values_from_bits(k: np.ndarray, maximize: bool) -> np.ndarray:
    """Inverse of :func:`_sortable_bits`."""
    t = k >> np.uint32(31)
    np.subtract(np.uint32(1), t, out=t)
    t *= _LOW
    if not maximize:
        t |= _SIGN
    t ^= k
    return t.view(np.float32)


_KEY, _PAYLOAD = (1, 0) if sys.byteorder == "little" else (0, 1)


#: Sorted rows at most this long (with at least :data:`RANK_FIRST_MIN_ROWS` rows) are kept
#: rank-first in memory: prefix sums are then one vectorised add per rank instead of a short
#: accumulate per row (the same sequential sums, several times faster).
RANK_FIRST_MAX = 1024
RANK_FIRST_MIN_ROWS = 64
#: Rank-first unpacking transposes blocks of about this many elements (cache-sized).
UNPACK_BLOCK = 32768


def pack_with_aux(values: np.ndarray, aux: np.ndarray, maximize: bool,
                  nonneg: bool = False) -> np.ndarray:  # fmt: skip
    """Float32 ``values`` and ``aux`` (broadcastable) as one uint64 key per element whose
    ascending order is best-first for the player (value bits above aux bits)."""
    packed = np.empty(values.shape + (2,), dtype=np.uint32)
    key = packed[..., _KEY]
    if nonneg and maximize:
        np.bitwise_xor(values.view(np.uint32), _LOW, out=key)
    elif nonneg:
        key[...] = values.view(np.uint32)
    else:
        key[...] = _sortable_bits(np.ascontiguousarray(values), maximize)
    packed[..., _PAYLOAD] = np.broadcast_to(np.asarray(aux, dtype=np.float32),
                                            values.shape).view(np.uint32)  # fmt: skip
    return packed.view(np.uint64)[..., 0]


def _rank_first(n: int, size: int) -> bool:
    return n <= RANK_FIRST_MAX and size // max(n, 1) >= RANK_FIRST_MIN_ROWS


def unpack_sorted(packed: np.ndarray, maximize: bool, nonneg: bool = False):
    """``(best, aux)`` float32 from sorted :func:`pack_with_aux` keys (contiguous uint64).
    Short rows come back as views of rank-first arrays (see :data:`RANK_FIRST_MAX`)."""
    shape = packed.shape
    n = shape[-1]
    halves = packed.view(np.uint32).reshape(shape + (2,))
    key, payload = halves[..., _KEY], halves[..., _PAYLOAD]
    if not _rank_first(n, packed.size):
        if nonneg and maximize:
            best = np.bitwise_xor(key, _LOW).view(np.float32)
        elif nonneg:
            best = np.ascontiguousarray(key).view(np.float32)
        else:
            best = _values_from_bits(key.copy(), maximize)
        # contiguous copies: prefix sums over strided views are several times slower
        return best, np.ascontiguousarray(payload).view(np.float32)
    m = packed.size // n
    key, payload = key.reshape(m, n), payload.reshape(m, n)
    key_t = np.empty((n, m), dtype=np.uint32)
    aux_t = np.empty((n, m), dtype=np.uint32)
    step = max(1, UNPACK_BLOCK // n)
    for lo in range(0, m, step):
        hi = min(lo + step, m)
        if nonneg and maximize:
            np.bitwise_xor(key[lo:hi].T, _LOW, out=key_t[:, lo:hi])
        else:
            key_t[:, lo:hi] = key[lo:hi].T
        aux_t[:, lo:hi] = payload[lo:hi].T
    if nonneg:
        best_t = key_t.view(np.float32)
    else:
        best_t = _values_from_bits(key_t, maximize)
    best_t = best_t.reshape((n,) + shape[:-1])
    aux_t = aux_t.view(np.float32).reshape((n,) + shape[:-1])
    return np.moveaxis(best_t, 0, -1), np.moveaxis(aux_t, 0, -1)


def sort_with_aux(values: np.ndarray, aux: np.ndarray | None, maximize: bool,
                  nonneg: bool = False):  # fmt: skip
    """Sort ``values`` best-first along the last axis and carry ``aux`` (broadcastable) along.

    ``nonneg`` promises values >= +0.0 (no negative zero), whose float bits already sort as
    unsigned integers. Float32 returns views into fresh arrays (rank-first for short rows).
    """
    if aux is None:
        best = np.sort(values, axis=-1)
        return (best[..., ::-1] if maximize else best), None
    if values.dtype == np.float32:
        packed = pack_with_aux(values, aux, maximize, nonneg)
        packed.sort(axis=-1)
        return unpack_sorted(packed, maximize, nonneg)
    order = np.argsort(-values if maximize else values, axis=-1, kind="stable")
    best = np.take_along_axis(values, order, axis=-1)
    return best, np.take_along_axis(np.broadcast_to(aux, values.shape), order, axis=-1)


def cumsum_last(x: np.ndarray, dtype) -> np.ndarray:
    """``np.cumsum(x, axis=-1, dtype=dtype)``, the same sequential sums; on a rank-first view
    (last axis the slowest in memory) one vectorised add per position."""
    n = x.shape[-1]
    xt = np.moveaxis(x, -1, 0)
    if n < 2 or not xt.flags.c_contiguous or not _rank_first(n, x.size):
        return np.cumsum(x, axis=-1, dtype=dtype)
    out = np.empty(xt.shape, dtype=dtype)
    out[0] = xt[0]
    for i in range(1, n):
        np.add(out[i - 1], xt[i], out=out[i])
    return np.moveaxis(out, 0, -1)


class RankedChildren:
    """A batch of children values ``(E, ..., n)`` sorted best-first for one player.

    Axis 0 enumerates *entries* (games that differ in the play below this level); one call to
    :meth:`reduce_many` evaluates any list of ``(entry, policy)`` pairs, vectorised.
    """

    def __init__(self, values: np.ndarray | None, aux: np.ndarray | None, maximize: bool,
                 nonneg: bool = False, packed: np.ndarray | None = None):  # fmt: skip
        self.maximize = maximize
        self.nonneg = nonneg
        self.values, self.raw_aux = values, aux
        self._packed = packed  # float32 values and aux as :func:`pack_with_aux` keys, unsorted
        self.has_aux = aux is not None or packed is not None
        self.n = (values if packed is None else packed).shape[-1]
        self._sorted = None
        self._value_sums = None
        self._aux_sums = None

    @property
    def best(self) -> np.ndarray:
        """Children values sorted best-first (sorted on first use: exact and uniform play
        need no sort)."""
        if self._sorted is None:
            if self._packed is not None:
                self._packed.sort(axis=-1)
                self._sorted = unpack_sorted(self._packed, self.maximize, self.nonneg)
                self._packed = None
            else:
                self._sorted = sort_with_aux(self.values, self.raw_aux, self.maximize,
                                             self.nonneg)  # fmt: skip
            self.values = self.raw_aux = None
        return self._sorted[0]

    @property
    def aux(self) -> np.ndarray | None:
        """The leaf quantity aligned with :attr:`best` (None without one)."""
        return self._sorted[1] if self.best is not None else None

    def _cumsum(self, x: np.ndarray) -> np.ndarray:
        dtype = np.float64 if (self.n > LONG_ROW or x.dtype == np.float64) else x.dtype
        return cumsum_last(x, dtype)

    @property
    def value_sums(self) -> np.ndarray:
        if self._value_sums is None:
            self._value_sums = self._cumsum(self.best)
        return self._value_sums

    @property
    def aux_sums(self) -> np.ndarray:
        if self._aux_sums is None:
            self._aux_sums = self._cumsum(self.aux)
        return self._aux_sums

    def reduce(self, reducer: Reducer, out_dtype) -> tuple[np.ndarray, np.ndarray | None]:
        """Values (and expected aux) of entry 0 under one policy."""
        v, a = self.reduce_many(np.array([0]), [reducer], out_dtype)
        return v[0], None if a is None else a[0]

    def reduce_many(self, entries: np.ndarray, reducers: list[Reducer], out_dtype):
        """Node values ``(len(entries), ...)`` (and expected aux) of each ``(entry, policy)``."""
        entries = np.asarray(entries, dtype=np.int64)
        shape = (len(entries),) + self._node_shape()
        values = np.empty(shape, dtype=out_dtype)
        auxes = np.empty(shape, dtype=out_dtype) if self.has_aux else None
        ks = np.array([-1 if r.k is None else r.k for r in reducers])
        if np.any((ks != -1) & ((ks < 1) | (ks > self.n))):
            raise ValueError(f"top-k needs 1 <= k <= {self.n}, got {ks.tolist()}")
        if self._sorted is None and self._packed is None and np.all((ks == 1) | (ks == self.n)):
            for i, (e, k) in enumerate(zip(entries, ks, strict=True)):
                v, a = self._unsorted(int(e), int(k))
                values[i] = v
                if auxes is not None:
                    auxes[i] = a
            return values, auxes
        top = np.flatnonzero(ks != -1)
        if top.size:
            v, a = self._top_k(entries[top], ks[top])
            values[top] = v
            if auxes is not None:
                auxes[top] = a
        for i in np.flatnonzero(ks == -1):
            v, a = self._weighted(int(entries[i]), reducers[i].policy)
            values[i] = v
            if auxes is not None:
                auxes[i] = a
        return values, auxes

    def _node_shape(self) -> tuple[int, ...]:
        if self._sorted is None:
            src = self.values if self._packed is None else self._packed
        else:
            src = self._sorted[0]
        return src.shape[1:-1]

    def _unsorted(self, e: int, k: int):
        """Exact (k = 1) and uniform (k = n) play straight from the unsorted children."""
        v = self.values[e]
        aux = None if self.raw_aux is None else self.raw_aux[min(e, len(self.raw_aux) - 1)]
        if k == 1:
            value = v.max(axis=-1) if self.maximize else v.min(axis=-1)
            if aux is None:
                return value, None
            tie = v == value[..., None]  # the best block shares the mass equally
            shared = (np.broadcast_to(aux, v.shape) * tie).sum(axis=-1, dtype=np.float64)
            return value, shared / tie.sum(axis=-1)
        value = v.mean(axis=-1, dtype=np.float64)
        if aux is None:
            return value, None
        return value, np.broadcast_to(aux.mean(axis=-1, dtype=np.float64), value.shape)

    def _weighted(self, e: int, policy: RankPolicy):
        w = policy.rank_weights(self.n)
        value = self.best[e].astype(np.float64) @ w
        if not self.has_aux:
            return value, None
        return value, (tie_shared(self.best[e], w) * self.aux[e]).sum(axis=-1)

    def _top_k(self, entries: np.ndarray, ks: np.ndarray):
        """Top-k averages for entry/k pairs; tie blocks straddling the cut share their mass.
        Always float64: divided into float32 outputs, the shares would round differently."""
        shape = (len(entries),) + self.best.shape[1:-1]
        value = np.empty(shape, dtype=np.float64)
        aux = np.empty(shape, dtype=np.float64) if self.has_aux else None
        all_rows = np.array_equal(entries, np.arange(len(self.best)))
        for k in np.unique(ks):
            pick = np.flatnonzero(ks == k)
            if len(pick) == pick[-1] - pick[0] + 1:
                pick = slice(pick[0], pick[-1] + 1)  # a view: divided in place
            rows = entries[pick]
            whole = all_rows and len(rows) == len(self.best)
            if whole:
                take = lambda x: x  # noqa: E731
            elif np.all(np.diff(rows) == 1):  # consecutive entries: a view, not a copy
                take = lambda x, r=slice(int(rows[0]), int(rows[-1]) + 1): x[r]  # noqa: E731
            else:
                take = lambda x: x[rows]  # noqa: B023, E731
            _divide_into(value, pick, take(self.value_sums[..., k - 1]), k)
            if aux is None:
                continue
            sums = take(self.aux_sums[..., k - 1]).astype(np.float64)
            if k < self.n:
                straddle = np.nonzero(take(self.best[..., k - 1]) == take(self.best[..., k]))
                if straddle[0].size:
                    where = (rows[straddle[0]],) + straddle[1:]
                    sums[straddle] = self._shared_block_sum(where, int(k))
            _divide_into(aux, pick, sums, k)
        return value, aux

    def _shared_block_sum(self, where: tuple, k: int) -> np.ndarray:
        """Top-k aux sums of rows whose tie block at rank k straddles the cut."""
        kk = np.full(len(where[0]), k)
        a, b = self._tie_block(where, kk)
        sums = self.aux_sums
        before = np.where(a > 0, sums[where + (np.maximum(a - 1, 0),)], 0.0)
        block = sums[where + (b - 1,)] - before
        return before + (k - a) * block / (b - a)

    def _tie_block(self, rows: tuple, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted positions ``a..b-1`` of the tie block holding rank ``k`` in each row
        (vectorised binary searches; rows are sorted, so "equal to the cut" is one run)."""
        best = self.best
        cut = best[rows + (k - 1,)]
        lo, hi = np.zeros_like(k), k - 1  # first position equal to the cut in [0, k-1]
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            eq = best[rows + (mid,)] == cut
            hi = np.where(eq, mid, hi)
            lo = np.where(eq, lo, np.minimum(mid + 1, hi))
        a = lo
        lo, hi = k.copy(), np.full_like(k, self.n)  # first position after the block in [k, n]
        while np.any(lo < hi):
            mid = (lo + hi) // 2
            ne = best[rows + (np.minimum(mid, self.n - 1),)] != cut
            hi = np.where(ne, mid, hi)
            lo = np.where(ne, lo, np.minimum(mid + 1, hi))
        return a, lo


def _divide_into(out: np.ndarray, pick, x: np.ndarray, k: int) -> None:
    """``out[pick] = x / k``: in place through a slice's view, by assignment for an index
    array (``out[array]`` is a copy, which ``np.divide(..., out=)`` would fill and drop)."""
    if isinstance(pick, slice):
        np.divide(x, k, out=out[pick])
    else:
        out[pick] = x / k


def top_k_by_key(key: np.ndarray, channels: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Top-k means of ``channels (n, C, m)`` (C quantities of m children) with the children
    ranked by one shared ``key (n, m)``, best (highest) first, for every k in ``ks``:
    ``(len(ks), n, C)`` float64.

    The fast path of :func:`.core.reduce_level` with a ``rank_key`` for top-k players (the same
    numbers, tests/test_solver.py): one stable sort per row, prefix sums of every channel, and a
    tie block of the key straddling rank k shares the mass of its ranks inside the top k.
    """
    ks = np.asarray(ks, dtype=np.int64)
    n, m = key.shape
    if np.any((ks < 1) | (ks > m)):
        raise ValueError(f"top-k needs 1 <= k <= {m}, got {ks.tolist()}")
    order = np.argsort(-key.astype(np.float64), axis=-1, kind="stable")
    best = np.take_along_axis(key, order, axis=-1)
    sums = np.zeros((n, channels.shape[1], m + 1))
    np.cumsum(np.take_along_axis(channels, order[:, None, :], axis=-1), axis=-1,
              dtype=np.float64, out=sums[..., 1:])  # fmt: skip
    # the tie block [start, end) of the key at every sorted position
    pos = np.arange(m)
    opens = np.ones((n, m), dtype=bool)
    opens[:, 1:] = best[:, 1:] != best[:, :-1]
    start = np.maximum.accumulate(np.where(opens, pos, 0), axis=-1)
    closes = np.ones((n, m), dtype=bool)
    closes[:, :-1] = opens[:, 1:]
    end = np.minimum.accumulate(np.where(closes, pos + 1, m)[:, ::-1], axis=-1)[:, ::-1]
    rows = np.arange(n)
    out = np.empty((len(ks), n, channels.shape[1]))
    for i, k in enumerate(ks):
        a, b = start[:, k - 1], end[:, k - 1]
        below = sums[rows, :, a]  # (n, C): everything ranked above the block
        block = sums[rows, :, b] - below
        out[i] = (below + ((k - a) / (b - a))[:, None] * block) / k
    return out
