"""One id space for the click logs of a study: query, document and (query, document) pair ids.

A ``Vocabulary`` gives every query token a dense query id, every document token a dense document
id and every (query id, document id) pair a dense pair id, each in order of first appearance. Reading
a test log with the training log's vocabulary (``read_click_log(..., vocabulary=train_vocabulary)``)
keeps every known id and appends the unseen queries, documents and pairs after the known ones, so an
id at or above the training size (``Vocabulary.num_pairs`` before the read) marks a pair the training
log never showed. Tokens are bytes: the decimal text of integer ids (``b"98435"``), the string of string
ids (PyClick's ``b"98435_1"``).

Lookup is vectorised: each table keeps its keys sorted beside their ids (a few sorted runs, merged as
they grow) and a chunk's distinct keys are found with ``np.searchsorted``; memory is 12 bytes per known
integer key (an ``int64`` key and an ``int32`` id).
"""

from pathlib import Path
from typing import Optional

import numpy as np

from jaxrank.data.atomic import write_npz

_PAIR_SHIFT = 32


def _as_ints(values: np.ndarray):
    """``values`` as ``int64`` when every token is a canonical decimal (digits, no leading zero, at most
    18), else ``None``."""
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    if not values.size:
        return np.zeros(0, np.int64)
    width = np.strings.str_len(values)
    ok = np.strings.isdigit(values) & (width <= 18) & ((width == 1) | ~np.strings.startswith(values, b"0"))
    return values.astype(np.int64) if ok.all() else None


def _as_bytes(values: np.ndarray) -> np.ndarray:
    return values.astype("S20") if values.dtype.kind in "iu" else values


def unique_first_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True, return_inverse=True)`` for a ``[N]`` array: the sorted
    distinct values, the position of each one's first appearance and the index of each value in
    them. One unstable argsort (SIMD-sorted where NumPy has it) and a segmented minimum for the first
    positions, instead of NumPy's stable argsort."""
    n = values.shape[0]
    if not n:
        return values[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(values)
    ordered = values[order]
    starts = np.empty(n, bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    group = np.cumsum(starts) - 1
    starts = np.flatnonzero(starts)
    inverse = np.empty(n, np.int64)
    inverse[order] = group
    return ordered[starts], np.minimum.reduceat(order, starts), inverse


class IdTable:
    """Dense ids ``0 .. n-1`` for distinct keys, in order of first appearance.

    Keys are ``int64`` while every token is a canonical decimal and bytes otherwise. The table holds
    only sorted runs of ``(keys, int32 ids)``, 12 bytes a key for ``int64`` keys; the keys in id order
    (``keys``) are rebuilt on request. Integer keys are spread over ``SHARDS`` shards by a
    multiplicative hash, so a merge copies one shard (a sixteenth of the table), never the whole
    table. In each shard, a chunk's new keys form a run, merged into the run before it once it is at
    least a quarter of its size: the runs shrink geometrically (about ``log4(n / chunk)`` of them), a
    key is copied ``O(log n)`` times in all, and a lookup searches the largest run first and the
    smaller ones only for the keys still missing."""

    SHARDS = 16
    _RATIO = 4
    _MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key * 2^64 / phi

    def __init__(self, keys: np.ndarray):
        ints = _as_ints(keys)
        keys = keys if ints is None else ints
        self._size = keys.shape[0]
        self._dtype = keys.dtype
        self._set_runs(keys, np.arange(self._size, dtype=np.int64))

    def _shard(self, keys: np.ndarray) -> np.ndarray:
        """``[N] u8`` the shard of each key (0 for bytes keys: one shard)."""
        if self._dtype.kind not in "iu":
            return np.zeros(keys.shape[0], np.uint8)
        return ((keys.view(np.uint64) * self._MIX) >> np.uint64(60)).astype(np.uint8)

    def _split(self, keys: np.ndarray):
        """``[(shard, index)]``: the positions of ``keys`` in each shard, each in the order given."""
        shard = self._shard(keys)
        order = np.argsort(shard, kind="stable")  # radix sort of bytes
        bounds = np.concatenate([[0], np.cumsum(np.bincount(shard, minlength=len(self._shards)))])
        return [(s, order[bounds[s]:bounds[s + 1]]) for s in range(len(self._shards)) if bounds[s + 1] > bounds[s]]

    def _set_runs(self, keys, ids):
        self._shards = [[] for _ in range(self.SHARDS if self._dtype.kind in "iu" else 1)]
        for s, index in self._split(keys):
            self._shards[s].append(self._sorted(keys[index], ids[index]))

    @staticmethod
    def _sorted(keys, ids):
        order = np.argsort(keys)  # distinct keys: no ties to keep in order
        return keys[order], ids[order].astype(np.int32)  # ids < 2^31 (SessionLog ids are int32)

    @staticmethod
    def _merge(a, b):
        """Two sorted runs ``(keys, ids)`` as one, in ``O(len(a) + len(b))``."""
        at = np.searchsorted(a[0], b[0])
        return np.insert(a[0], at, b[0]), np.insert(a[1], at, b[1])

    @property
    def _runs(self):
        return [run for runs in self._shards for run in runs]

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + i.nbytes for k, i in self._runs)

    @property
    def keys(self) -> np.ndarray:
        """``[n]`` the key of each id (``int64`` or bytes), built on each call."""
        out = np.empty(self._size, self._dtype)
        for keys, ids in self._runs:
            out[ids] = keys
        return out

    @property
    def tokens(self) -> np.ndarray:
        """``[n]`` bytes, the token of each id."""
        return _as_bytes(self.keys)

    def _common(self, values: np.ndarray) -> np.ndarray:
        """``values`` in the table's key kind, turning the table's keys to bytes when needed."""
        if self._dtype.kind in "iu":
            ints = _as_ints(values)
            if ints is not None:
                return ints
            keys = _as_bytes(self.keys)  # bytes sort in another order than integers: sort again
            self._dtype = keys.dtype
            self._set_runs(keys, np.arange(self._size, dtype=np.int64))
        values = _as_bytes(values)
        dtype = np.promote_types(self._dtype, values.dtype)
        if dtype != self._dtype:
            self._dtype = dtype
            self._shards = [[(k.astype(dtype), i) for k, i in runs] for runs in self._shards]
        return values.astype(dtype, copy=False)

    def find(self, values: np.ndarray, absent: Optional[np.ndarray] = None) -> np.ndarray:
        """``[N] i64`` the id of each value, -1 for a value not in the table (without a search where
        ``absent``, ``[N]`` bool, says so)."""
        values = self._common(values)
        ids = np.full(values.shape, -1, np.int64)
        for s, todo in self._split(values if absent is None else values[~absent]):
            if absent is not None:
                todo = np.flatnonzero(~absent)[todo]
            for keys, run_ids in self._shards[s]:
                if not todo.size:
                    break
                wanted = values[todo]
                pos = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
                hit = keys[pos] == wanted
                ids[todo[hit]] = run_ids[pos[hit]]
                todo = todo[~hit]
        return ids

    def ids(self, unique: np.ndarray, first: np.ndarray, absent: Optional[np.ndarray] = None) -> np.ndarray:
        """The ids of the sorted distinct values ``unique``, adding the absent ones in the order of
        ``first`` (the position of each value's first appearance); ``absent`` marks values known to be
        new, not searched for."""
        ids = self.find(unique, absent)
        unique = self._common(unique)
        new = np.flatnonzero(ids < 0)
        if new.size:
            by_first = new[np.argsort(first[new])]
            ids[by_first] = np.arange(self._size, self._size + new.size)
            self._size += new.size
            for s, index in self._split(unique[new]):
                run = (unique[new[index]], ids[new[index]].astype(np.int32))
                if run[0].size > 1 and not (run[0][1:] > run[0][:-1]).all():  # integers turned to bytes sort anew
                    run = self._sorted(*run)
                runs = self._shards[s]
                runs.append(run)
                while len(runs) > 1 and runs[-1][0].size * self._RATIO >= runs[-2][0].size:
                    small = runs.pop()
                    runs[-1] = self._merge(runs[-1], small)
        return ids


class Vocabulary:
    """Query, document and pair ids of a family of click logs (module docstring).

    Attributes (read-only views):
      queries: ``[Q]`` bytes, the token of each query id.
      docs: ``[D]`` bytes, the token of each document id.
      pair_query, pair_doc: ``[P] i32``, the query id and document id of each pair id.
    """

    def __init__(self, queries=(), docs=(), pair_query=(), pair_doc=()):
        queries, docs = (np.asarray(a) if len(a) else np.zeros(0, np.int64) for a in (queries, docs))
        for name, keys in (("queries", queries), ("docs", docs)):
            if keys.ndim != 1 or keys.dtype.kind not in "iuS":
                raise ValueError(f"{name} must be a [N] array of bytes tokens or integer ids; got {keys.dtype} "
                                 f"{keys.shape}.")
        pair_query, pair_doc = np.asarray(pair_query, np.int64), np.asarray(pair_doc, np.int64)
        if pair_query.shape != pair_doc.shape or pair_query.ndim != 1:
            raise ValueError(f"pair_query and pair_doc must be [P] arrays of one length; got {pair_query.shape} and "
                             f"{pair_doc.shape}.")
        if pair_query.size and (pair_query.min() < 0 or pair_query.max() >= len(queries) or pair_doc.min() < 0
                                or pair_doc.max() >= len(docs)):
            raise ValueError(f"a pair names a query outside [0, {len(queries)}) or a document outside [0, {len(docs)}).")
        for name, keys in (("query", queries), ("document", docs)):
            if np.unique(keys).size != keys.size:
                raise ValueError(f"the vocabulary's {name} tokens repeat; each token has one id.")
        self._queries, self._docs = IdTable(queries), IdTable(docs)
        if len(np.unique(self._queries.keys)) != len(queries) or len(np.unique(self._docs.keys)) != len(docs):
            raise ValueError("the vocabulary's tokens repeat as integers (e.g. b'7' and 7); each token has one id.")
        pairs = (pair_query << _PAIR_SHIFT) | pair_doc
        if np.unique(pairs).size != pairs.size:
            raise ValueError("the vocabulary's (query, document) pairs repeat; each pair has one id.")
        self._pairs = IdTable(pairs)
        self._pair_bounds = (len(queries), len(docs))  # every pair's query and document ids are below

    @property
    def queries(self) -> np.ndarray:
        return self._queries.tokens

    @property
    def docs(self) -> np.ndarray:
        return self._docs.tokens

    @property
    def pair_query(self) -> np.ndarray:
        return (self._pairs.keys >> _PAIR_SHIFT).astype(np.int32)

    @property
    def pair_doc(self) -> np.ndarray:
        return (self._pairs.keys & ((1 << _PAIR_SHIFT) - 1)).astype(np.int32)

    @property
    def num_queries(self) -> int:
        return len(self._queries)

    @property
    def num_docs(self) -> int:
        return len(self._docs)

    @property
    def num_pairs(self) -> int:
        return len(self._pairs)

    @property
    def nbytes(self) -> int:
        """Bytes the vocabulary holds (its sorted keys and their ids: 12 a key for integer tokens)."""
        return self._queries.nbytes + self._docs.nbytes + self._pairs.nbytes

    def copy(self) -> "Vocabulary":
        other = Vocabulary.__new__(Vocabulary)
        for name in ("_queries", "_docs", "_pairs"):
            table = getattr(self, name)
            clone = IdTable.__new__(IdTable)
            clone._size, clone._dtype, clone._shards = table._size, table._dtype, [list(r) for r in table._shards]
            setattr(other, name, clone)  # arrays are replaced, never written in place, so sharing them is safe
        other._pair_bounds = self._pair_bounds
        return other

    def query_ids(self, tokens) -> np.ndarray:
        """``[N] i64`` the query id of each token (bytes or str), -1 for an unknown query."""
        return self._queries.find(np.asarray([t.encode() if isinstance(t, str) else t for t in tokens]))

    def pair_ids(self, query_tokens, doc_tokens) -> np.ndarray:
        """``[N] i64`` the pair id of each (query token, document token), -1 for an unknown pair."""
        q = self.query_ids(query_tokens)
        d = self._docs.find(np.asarray([t.encode() if isinstance(t, str) else t for t in doc_tokens]))
        found = self._pairs.find((np.maximum(q, 0) << _PAIR_SHIFT) | np.maximum(d, 0))
        return np.where((q >= 0) & (d >= 0), found, -1)

    def add_queries(self, unique, first) -> np.ndarray:
        return self._queries.ids(unique, first)

    def add_docs(self, unique, first) -> np.ndarray:
        return self._docs.ids(unique, first)

    def add_pairs(self, query_ids: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
        """``[N] i64`` the pair id of each (query id, document id), adding unseen pairs in order."""
        keys = (query_ids.astype(np.int64) << _PAIR_SHIFT) | doc_ids.astype(np.int64)
        unique, first, inverse = unique_first_inverse(keys)
        # a pair of a query or document added since the last call cannot be known: no search for it
        absent = ((unique >> _PAIR_SHIFT) >= self._pair_bounds[0]) | ((unique & 0xFFFFFFFF) >= self._pair_bounds[1])
        self._pair_bounds = (self.num_queries, self.num_docs)
        return self._pairs.ids(unique, first, absent)[inverse]

    def save(self, path) -> Path:
        """Writes the vocabulary to ``path`` (``.npz``) atomically."""
        return write_npz(path, queries=self._queries.keys, docs=self._docs.keys, pair_query=self.pair_query,
                         pair_doc=self.pair_doc)

    @classmethod
    def load(cls, path) -> "Vocabulary":
        """The vocabulary ``save`` wrote to ``path``.

        Raises:
          ValueError: naming the file, when it is not a saved vocabulary.
        """
        path = Path(path)
        try:
            with np.load(path, allow_pickle=False) as f:
                return cls(f["queries"], f["docs"], f["pair_query"], f["pair_doc"])
        except (KeyError, OSError, ValueError) as e:
            raise ValueError(f"{path}: not a saved jaxrank Vocabulary ({e}).") from None

    def __repr__(self) -> str:
        return f"Vocabulary({self.num_queries:,} queries, {self.num_docs:,} documents, {self.num_pairs:,} pairs)"
