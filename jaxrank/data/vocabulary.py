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

import sys
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
    as integers. Keys are spread over ``2^b`` shards by a multiplicative hash of the key (of its 8-byte
    words for longer bytes), each shard one sorted run of ``(keys, int32 ids)`` (12 bytes a key for
    integer keys); the shards double whenever the table outgrows ``SHARD_SIZE`` keys a shard, so a run
    and a settle's share of it stay cache-sized however large the table grows. The keys in id order
    (``keys``) are rebuilt on request.

    Keys arrive in batches and are settled together: ``stage`` takes a chunk's distinct keys and gives
    each a staging index, ``settle`` gives the id of every staged entry. A settle splits the staged keys
    by shard (each stage's keys radix-sorted by shard number and placed), then in each shard sorts its
    share, finds it in the run with one ``searchsorted`` and inserts the new keys in one pass over the
    run, in place (``_insert_sorted``: the run grows by ``realloc`` and no array of its size is
    allocated), so its cost is ``O(staged + n)`` with every sort and search on cache-sized arrays; a
    reader that settles once ``staged >= n / SETTLE_RATIO`` spends ``O(1)`` amortised work per key
    whatever the table's size, and holds at most ``n / SETTLE_RATIO`` staged keys (about 40 bytes each
    in the settle's batch-sized buffers, which a reader keeps from one settle to the next:
    ``settle(work)``)."""

    SHARD_SIZE = 1 << 20  # keys a shard's run holds (on average) before the shards double
    MAX_SHARD_BITS = 16  # shard numbers are uint16, radix-sorted by NumPy's stable argsort
    SETTLE_RATIO = 8
    MIN_SETTLE = 1 << 20  # staged keys below which a settle is never due
    INSERT_BLOCK = 1 << 20  # entries a settle moves at once when it inserts into a run
    _MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of key * 2^64 / phi

    def __init__(self, keys: np.ndarray):
        ints = _as_ints(keys)
        keys = keys if ints is None else ints
        self._size = keys.shape[0]
        self._dtype = keys.dtype
        self._stages, self._staged = [], 0  # (staging index, keys, first, min first, max first)
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

    def _bits_for(self, size: int) -> int:
        bits = 0
        while (self.SHARD_SIZE << bits) < size and bits < self.MAX_SHARD_BITS:
            bits += 1
        return bits

    def _shard(self, stored: np.ndarray, bits: int) -> np.ndarray:
        """``[N] u16`` the shard of each held key among ``2^bits``: the top bits of its mixed hash."""
        if not bits:
            return np.zeros(stored.shape[0], np.uint16)
        if stored.dtype.kind in "iu":
            h = np.ascontiguousarray(stored).view(np.uint64)
        else:  # bytes: a sum of the 8-byte words times odd constants (zero padding adds nothing)
            width = -(-stored.dtype.itemsize // 8) * 8
            padded = np.zeros((stored.shape[0], width), np.uint8)
            padded[:, :stored.dtype.itemsize] = np.ascontiguousarray(stored).view(np.uint8).reshape(stored.shape[0], -1)
            words = padded.view("<u8")
            h = np.zeros(stored.shape[0], np.uint64)
            for j in range(words.shape[1]):
                h += words[:, j] * np.uint64((0x9E3779B97F4A7C15 * (2 * j + 3)) % 2**64)
        return ((h * self._MIX) >> np.uint64(64 - bits)).astype(np.uint16)

    def _split(self, stored: np.ndarray):
        """``[(shard, index)]``: the positions of ``stored`` in each shard, each in the order given."""
        if not self._bits:
            return [(0, np.arange(stored.shape[0]))] if stored.shape[0] else []
        shard = self._shard(stored, self._bits)
        order = np.argsort(shard, kind="stable")  # a radix sort of 16-bit numbers: O(N)
        bounds = np.concatenate([[0], np.cumsum(np.bincount(shard, minlength=len(self._keys)))])
        return [(s, order[bounds[s]:bounds[s + 1]]) for s in range(len(self._keys)) if bounds[s + 1] > bounds[s]]

    def _set_runs(self, keys, ids):
        keys = self._store(keys)
        self._bits = self._bits_for(keys.shape[0])
        # each shard's run owns its arrays: settles grow them in place
        self._keys = [np.zeros(0, keys.dtype) for _ in range(1 << self._bits)]
        self._ids = [np.zeros(0, np.int32) for _ in range(1 << self._bits)]  # SessionLog ids are int32
        for s, index in self._split(keys):
            order = np.argsort(keys[index])  # distinct keys: no ties to keep in order
            self._keys[s], self._ids[s] = keys[index][order], ids[index][order].astype(np.int32)

    def _double_shards(self) -> None:
        """Splits every run into its shards under more hash bits (stable: each part stays sorted)."""
        bits = self._bits_for(self._size)
        spread = 1 << (bits - self._bits)
        keys, ids = [], []
        for s in range(len(self._keys)):
            run, run_ids = self._keys[s], self._ids[s]
            self._keys[s] = self._ids[s] = None  # each run is freed once split: the table is never held twice
            child = self._shard(run, bits) - np.uint16(s * spread)
            order = np.argsort(child, kind="stable")
            bounds = np.concatenate([[0], np.cumsum(np.bincount(child, minlength=spread))])
            for c in range(spread):
                part = order[bounds[c]:bounds[c + 1]]
                keys.append(run[part])
                ids.append(run_ids[part])
        self._keys, self._ids, self._bits = keys, ids, bits

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

    def copy(self) -> "IdTable":
        """A table with the same ids that owns its runs (settles grow the runs in place)."""
        if self._staged:
            raise RuntimeError("IdTable.copy with keys staged and not settled; settle them first.")
        clone = IdTable.__new__(IdTable)
        clone.__dict__.update(self.__dict__)
        clone._keys, clone._ids = [k.copy() for k in self._keys], [i.copy() for i in self._ids]
        clone._stages = []
        return clone

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
        first = np.asarray(first, np.int64)
        index = np.arange(self._staged, self._staged + unique.shape[0])
        if unique.shape[0]:
            self._stages.append((self._staged, self._common(unique), first, int(first.min()), int(first.max())))
        self._staged += unique.shape[0]
        return index

    def settle(self, work: Optional[dict] = None) -> np.ndarray:
        """``[M] i64`` the id of each entry staged since the last settle, adding the absent keys in the
        order of their ``first``.

        ``work``: a dict the caller keeps from one settle to the next (one for several tables settled
        in turn), holding the settle's batch-sized buffers, so that a reader's settles reuse their
        memory instead of faulting in fresh pages each time. The returned array is then one of those
        buffers: read it before the next settle given the same ``work``."""
        if not self._staged:
            return np.zeros(0, np.int64)
        work = {} if work is None else work
        k, stages = self._staged, self._stages
        self._stages, self._staged = [], 0
        stages = [(base, self._store(keys.astype(self._dtype, copy=False) if keys.dtype.kind == self._dtype.kind
                                     else _as_bytes(keys).astype(self._dtype)), first, lo, hi)
                  for base, keys, first, lo, hi in stages]
        # stages in order (each one's firsts after the last one's, as a reader's chunks): a key's
        # earliest staged entry holds its first appearance
        in_order = all(b[3] >= a[4] for a, b in zip(stages, stages[1:]))
        first = _buffer(work, "first", k, np.int64)
        np.concatenate([stage[2] for stage in stages], out=first)
        # the staged keys grouped by shard (each stage's keys placed after a radix sort of their shards)
        keys = _buffer(work, "keys", k, stages[0][1].dtype)
        if self._bits:
            slots = _buffer(work, "slots", k, np.int64)  # the staging index of each entry of keys
            shards = len(self._keys)
            sorted_stages, counts = [], np.zeros(shards, np.int64)
            for base, stage_keys, *_ in stages:
                shard = self._shard(stage_keys, self._bits)
                sorted_stages.append((np.argsort(shard, kind="stable"), np.bincount(shard, minlength=shards)))
                counts += sorted_stages[-1][1]
            bounds = np.concatenate([[0], np.cumsum(counts)])
            cursor = bounds[:-1].copy()
            for (base, stage_keys, *_), (order, count) in zip(stages, sorted_stages):
                dest = np.repeat(cursor - (np.cumsum(count) - count), count) + np.arange(order.size)
                keys[dest] = stage_keys[order]
                slots[dest] = order + base
                cursor += count
            del sorted_stages
        else:
            np.concatenate([stage[1] for stage in stages], out=keys)
            slots, bounds = None, np.array([0, k])
        out = _buffer(work, "out", k, np.int64)
        mark = _buffer(work, "mark", k, bool)  # the earliest staged entry of each new key
        mark[:] = False
        # a new key is inserted at once with a placeholder id, -1 - (its earliest staged entry), and
        # given its id once every shard's new keys are known
        block = min(self.INSERT_BLOCK, max(run.shape[0] for run in self._keys))
        scratch = np.empty(block, keys.dtype), np.empty(block, np.int32), np.empty(2 * block, bool)
        landed, new, new_first = [], [], []
        for s in np.flatnonzero(np.diff(bounds)):
            at_slot = slice(bounds[s], bounds[s + 1])
            unique, at, inverse = unique_first_inverse(keys[at_slot])
            run, run_ids = self._keys[s], self._ids[s]
            pos = np.searchsorted(run, unique)
            clipped = np.minimum(pos, max(run.size - 1, 0))
            hit = run[clipped] == unique if run.size else np.zeros(unique.size, bool)
            found = run_ids[clipped].astype(np.int64) if run.size else np.zeros(unique.size, np.int64)
            miss = np.flatnonzero(~hit)
            earliest = at[miss] if slots is None else slots[at_slot][at[miss]]
            found[miss] = -1 - earliest
            if slots is None:
                out[:] = found[inverse]
            else:
                out[slots[at_slot]] = found[inverse]
            if miss.size:
                if scratch[2].shape[0] < block + miss.size:
                    scratch = scratch[:2] + (np.empty(block + miss.size, bool),)
                _insert_sorted(run, run_ids, pos[miss], unique[miss], found[miss], scratch)
                landed.append((s, pos[miss] + np.arange(miss.size)))
                mark[earliest] = True
                if not in_order:
                    key_first = np.full(unique.size, np.iinfo(np.int64).max)
                    np.minimum.at(key_first, inverse, first[at_slot] if slots is None else first[slots[at_slot]])
                    new.append(earliest)
                    new_first.append(key_first[miss])
        # ids in order of first appearance; first, read no more, maps each earliest entry to its id
        size = self._size
        if in_order:  # staging order, then the order of first within each stage
            for base, stage_keys, *_ in stages:
                chosen = np.flatnonzero(mark[base:base + stage_keys.shape[0]]) + base
                chosen = chosen[np.argsort(first[chosen])]
                first[chosen] = np.arange(size, size + chosen.size)
                size += chosen.size
        elif new:
            chosen = np.concatenate(new)[np.argsort(np.concatenate(new_first), kind="stable")]
            first[chosen] = np.arange(size, size + chosen.size)
            size += chosen.size
        self._size = size
        for base, stage_keys, *_ in stages:
            part = out[base:base + stage_keys.shape[0]]
            placeholder = np.flatnonzero(part < 0)
            part[placeholder] = first[-1 - part[placeholder]]
        for s, where in landed:
            self._ids[s][where] = first[-1 - self._ids[s][where]]
        if self._bits_for(self._size) > self._bits:
            self._double_shards()
        return out

    def ids(self, unique: np.ndarray, first: np.ndarray) -> np.ndarray:
        """``[N] i64`` the ids of the distinct values ``unique``, adding the absent ones in the order of
        ``first`` (``stage`` then ``settle``; nothing else may be staged)."""
        if self._staged:
            raise RuntimeError("IdTable.ids with keys staged and not settled; settle them first.")
        index = self.stage(unique, first)
        return self.settle()[index]


def _buffer(work: dict, name: str, n: int, dtype) -> np.ndarray:
    """``work[name][:n]``, grown in place by a quarter (``realloc``: the pages it holds are kept) when
    short, so buffers reused from one settle to the next fault in no fresh pages."""
    a = work.get(name)
    # grown in place only when nothing else refers to it (the dict, a, getrefcount's argument): a view
    # still held keeps the old memory and a new buffer is made
    if a is not None and a.dtype == np.dtype(dtype) and a.shape[0] < n and sys.getrefcount(a) <= 3:
        a.resize(max(n, a.shape[0] + a.shape[0] // 4), refcheck=False)
    if a is None or a.dtype != np.dtype(dtype) or a.shape[0] < n:
        a = work[name] = np.empty(n, dtype)
    return a[:n]


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
            setattr(other, name, getattr(self, name).copy())
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
