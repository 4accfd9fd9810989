"""One id space for the click logs of a study: query, document and (query, document) pair ids.

A ``Vocabulary`` gives every query token a dense query id, every document token a dense document
id and every (query id, document id) pair a dense pair id, each in order of first appearance. Reading
a test log with the training log's vocabulary (``read_click_log(..., vocabulary=train_vocabulary)``)
keeps every known id and appends the unseen queries, documents and pairs after the known ones, so an
id at or above the training size (``Vocabulary.num_pairs`` before the read) marks a pair the training
log never showed. Tokens are bytes: the decimal text of integer ids (``b"98435"``), the string of string
ids (PyClick's ``b"98435_1"``).

Lookup is vectorised: each table keeps its keys sorted beside their ids, and a reader stages the
distinct keys of its chunks and settles them in batches (``IdTable``), so the work per key does not
grow with the table; memory is 12 bytes per known integer key (an ``int64`` key and an ``int32`` id).
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


def _insert_sorted(keys: np.ndarray, ids: np.ndarray, pos: np.ndarray, new_keys: np.ndarray,
                   new_ids: np.ndarray, scratch: tuple) -> None:
    """Inserts ``new_keys`` and ``new_ids`` (``[k]``) before ``keys[pos]`` (``pos`` ``[k]``
    non-decreasing, from ``searchsorted``) into a sorted run and its ids (``[n]``, owning their data),
    in place: both arrays grow with ``ndarray.resize`` (``realloc``, which remaps a large array's pages
    instead of copying them) and the run moves right from its end, a block of ``scratch``'s length at a
    time, so no array of the run's size is allocated (fresh pages cost the kernel a fault each)."""
    n, k = keys.shape[0], pos.shape[0]
    keys.resize(n + k, refcheck=False)
    ids.resize(n + k, refcheck=False)
    at = pos + np.arange(k)  # where each new entry lands
    block_keys, block_ids, keep = scratch
    end = n
    while end > 0:
        start = max(0, end - block_keys.shape[0])
        lo, hi = np.searchsorted(pos, [start, end])  # new entries before start, before end
        if not hi:  # nothing is inserted before end: the run's head stays where it is
            break
        m = end - start
        np.copyto(block_keys[:m], keys[start:end])
        np.copyto(block_ids[:m], ids[start:end])
        gaps = keep[:m + hi - lo]
        gaps[:] = True
        gaps[at[lo:hi] - (start + lo)] = False
        keys[start + lo:end + hi][gaps] = block_keys[:m]  # the block, shifted right by its new entries
        ids[start + lo:end + hi][gaps] = block_ids[:m]
        end = start
    keys[at] = new_keys
    ids[at] = new_ids


class IdTable:
    """Dense ids ``0 .. n-1`` for distinct keys, in order of first appearance.

    Keys are ``int64`` while every token is a canonical decimal and bytes otherwise; bytes of at most 8
    are held as ``uint64`` (big-endian, so integer order is byte order), which sort and search as fast
    as integers. Integer keys are spread over ``SHARDS`` shards by a multiplicative hash, each shard
    one sorted run of ``(keys, int32 ids)`` (12 bytes a key for integer keys); the keys in id order
    (``keys``) are rebuilt on request.

    Keys arrive in batches and are settled together: ``stage`` takes a chunk's distinct keys and gives
    each a staging index, ``settle`` gives the id of every staged entry. A settle sorts the staged keys,
    finds them in each shard's run with one ``searchsorted`` and inserts the new ones in one pass over
    the run, in place (``_insert_sorted``: the run grows by ``realloc`` and no array of its size is
    allocated), so its cost is ``O(staged + n)``; a reader that settles once ``staged >= n /
    SETTLE_RATIO`` spends ``O(1)`` amortised work per key whatever the table's size, and holds at most
    ``n / SETTLE_RATIO`` staged keys (16 bytes each)."""

    SHARDS = 16  # a power of 2, at most 256 (shard numbers are bytes)
    SETTLE_RATIO = 8
    MIN_SETTLE = 1 << 20  # staged keys below which a settle is never due
    INSERT_BLOCK = 1 << 20  # entries a settle moves at once when it inserts into a run
    _MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key * 2^64 / phi

    def __init__(self, keys: np.ndarray):
        ints = _as_ints(keys)
        keys = keys if ints is None else ints
        self._size = keys.shape[0]
        self._dtype = keys.dtype
        self._staged_keys, self._staged_first, self._staged = [], [], 0
        self._set_runs(keys, np.arange(self._size, dtype=np.int64))

    @property
    def _packed(self) -> bool:
        return self._dtype.kind == "S" and self._dtype.itemsize <= 8

    def _store(self, values: np.ndarray) -> np.ndarray:
        """Keys of the table's kind as held in its runs."""
        if self._packed:
            return np.ascontiguousarray(values.astype("S8")).view(">u8").astype(np.uint64)
        return values

    def _load(self, stored: np.ndarray) -> np.ndarray:
        return stored.astype(">u8").view("S8").astype(self._dtype) if self._packed else stored

    def _shard(self, keys: np.ndarray) -> np.ndarray:
        """``[N] u8`` the shard of each held key (0 for wide bytes keys: one shard)."""
        if keys.dtype.kind not in "iu":
            return np.zeros(keys.shape[0], np.uint8)
        return ((keys.view(np.uint64) * self._MIX) >> np.uint64(64 - self.SHARDS.bit_length() + 1)).astype(np.uint8)

    def _split(self, keys: np.ndarray):
        """``[(shard, index)]``: the positions of ``keys`` in each shard, each in the order given."""
        shard = self._shard(keys)
        order = np.argsort(shard, kind="stable")  # radix sort of bytes
        bounds = np.concatenate([[0], np.cumsum(np.bincount(shard, minlength=len(self._keys)))])
        return [(s, order[bounds[s]:bounds[s + 1]]) for s in range(len(self._keys)) if bounds[s + 1] > bounds[s]]

    def _set_runs(self, keys, ids):
        keys = self._store(keys)
        shards = self.SHARDS if keys.dtype.kind in "iu" else 1
        # each shard's run owns its arrays: settles grow them in place
        self._keys = [np.zeros(0, keys.dtype) for _ in range(shards)]
        self._ids = [np.zeros(0, np.int32) for _ in range(shards)]  # SessionLog ids are int32
        for s, index in self._split(keys):
            order = np.argsort(keys[index])  # distinct keys: no ties to keep in order
            self._keys[s], self._ids[s] = keys[index][order], ids[index][order].astype(np.int32)

    def __len__(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        return sum(k.nbytes + i.nbytes for k, i in zip(self._keys, self._ids))

    @property
    def keys(self) -> np.ndarray:
        """``[n]`` the key of each id (``int64`` or bytes), built on each call."""
        out = np.empty(self._size, self._dtype)
        for keys, ids in zip(self._keys, self._ids):
            out[ids] = self._load(keys)
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
            packed, keys = self._packed, self.keys
            self._dtype = dtype
            if not (packed and self._packed):  # held keys change form
                self._set_runs(keys.astype(dtype), np.arange(self._size, dtype=np.int64))
        return values.astype(dtype, copy=False)

    def find(self, values: np.ndarray) -> np.ndarray:
        """``[N] i64`` the id of each value, -1 for a value not in the table (staged keys not settled
        are not in it)."""
        values = self._store(self._common(values))
        ids = np.full(values.shape, -1, np.int64)
        for s, index in self._split(values):
            keys, run_ids = self._keys[s], self._ids[s]
            if keys.size:
                wanted = values[index]
                pos = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
                hit = keys[pos] == wanted
                ids[index[hit]] = run_ids[pos[hit]]
        return ids

    @property
    def staged(self) -> int:
        """Entries staged since the last settle."""
        return self._staged

    @property
    def settle_due(self) -> bool:
        return self._staged >= max(self.MIN_SETTLE, self._size // self.SETTLE_RATIO)

    def stage(self, unique: np.ndarray, first: np.ndarray) -> np.ndarray:
        """``[N] i64`` the staging index of each of the distinct values ``unique`` (``[N]``); ``first``
        (``[N]`` int) orders first appearances across the batch: new keys get ids in its order."""
        index = np.arange(self._staged, self._staged + unique.shape[0])
        self._staged_keys.append(self._common(unique))
        self._staged_first.append(np.asarray(first, np.int64))
        self._staged += unique.shape[0]
        return index

    def settle(self) -> np.ndarray:
        """``[M] i64`` the id of each entry staged since the last settle, adding the absent keys in the
        order of their ``first``."""
        if not self._staged:
            return np.zeros(0, np.int64)
        staged = np.concatenate([k.astype(self._dtype, copy=False) if k.dtype.kind == self._dtype.kind
                                 else _as_bytes(k).astype(self._dtype) for k in self._staged_keys])
        staged = self._store(staged)
        first = np.concatenate(self._staged_first)
        self._staged_keys, self._staged_first, self._staged = [], [], 0
        unique, at, inverse = unique_first_inverse(staged)
        del staged
        first = first[at]
        ids = np.full(unique.shape, -1, np.int64)
        places = []
        for s, index in self._split(unique):
            keys, run_ids = self._keys[s], self._ids[s]
            wanted = unique[index]
            pos = np.searchsorted(keys, wanted)
            hit = keys[np.minimum(pos, keys.size - 1)] == wanted if keys.size else np.zeros(index.size, bool)
            ids[index[hit]] = run_ids[pos[hit]]
            places.append((s, index[~hit], pos[~hit]))
        new = np.flatnonzero(ids < 0)
        ids[new[np.argsort(first[new])]] = np.arange(self._size, self._size + new.size)
        self._size += new.size
        block = min(self.INSERT_BLOCK, max(k.shape[0] for k in self._keys))
        scratch = np.empty(block, unique.dtype), np.empty(block, np.int32), np.empty(block + unique.shape[0], bool)
        for s, index, pos in places:
            if index.size:
                _insert_sorted(self._keys[s], self._ids[s], pos, unique[index], ids[index], scratch)
        return ids[inverse]

    def ids(self, unique: np.ndarray, first: np.ndarray) -> np.ndarray:
        """``[N] i64`` the ids of the distinct values ``unique``, adding the absent ones in the order of
        ``first`` (``stage`` then ``settle``; nothing else may be staged)."""
        if self._staged:
            raise RuntimeError("IdTable.ids with keys staged and not settled; settle them first.")
        index = self.stage(unique, first)
        return self.settle()[index]


def pair_keys(query_ids: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """``[N] i64`` the pair table's key of each (query id, document id)."""
    return (query_ids.astype(np.int64) << _PAIR_SHIFT) | doc_ids.astype(np.int64)


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
        pairs = pair_keys(pair_query, pair_doc)
        if np.unique(pairs).size != pairs.size:
            raise ValueError("the vocabulary's (query, document) pairs repeat; each pair has one id.")
        self._pairs = IdTable(pairs)

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
            if table.staged:
                raise RuntimeError("Vocabulary.copy with keys staged and not settled; settle them first.")
            clone = IdTable.__new__(IdTable)
            clone._size, clone._dtype = table._size, table._dtype
            clone._keys, clone._ids = [k.copy() for k in table._keys], [i.copy() for i in table._ids]
            clone._staged_keys, clone._staged_first, clone._staged = [], [], 0
            setattr(other, name, clone)  # settles grow the runs in place: a copy owns its own
        return other

    def query_ids(self, tokens) -> np.ndarray:
        """``[N] i64`` the query id of each token (bytes or str), -1 for an unknown query."""
        return self._queries.find(np.asarray([t.encode() if isinstance(t, str) else t for t in tokens]))

    def pair_ids(self, query_tokens, doc_tokens) -> np.ndarray:
        """``[N] i64`` the pair id of each (query token, document token), -1 for an unknown pair."""
        q = self.query_ids(query_tokens)
        d = self._docs.find(np.asarray([t.encode() if isinstance(t, str) else t for t in doc_tokens]))
        found = self._pairs.find(pair_keys(np.maximum(q, 0), np.maximum(d, 0)))
        return np.where((q >= 0) & (d >= 0), found, -1)

    @property
    def tables(self) -> dict[str, IdTable]:
        """The query, document and pair ``IdTable`` s, for staging a reader's keys (``pair_keys``)."""
        return {"queries": self._queries, "docs": self._docs, "pairs": self._pairs}

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
