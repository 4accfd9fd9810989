"""One id space for the click logs of a study: query, document and (query, document) pair ids.

A ``Vocabulary`` gives every query token a dense query id, every document token a dense document
id and every (query id, document id) pair a dense pair id, each in order of first appearance. Reading
a test log with the training log's vocabulary (``read_click_log(..., vocabulary=train_vocabulary)``)
keeps every known id and appends the unseen queries, documents and pairs after the known ones, so an
id at or above the training size (``Vocabulary.num_pairs`` before the read) marks a pair the training
log never showed. Tokens are bytes: the decimal text of integer ids (``b"98435"``), the string of string
ids (PyClick's ``b"98435_1"``).

Lookup is vectorised: each table keeps its keys sorted beside their ids and a chunk's distinct keys are
found with one ``np.searchsorted``; memory is a few bytes per known key.
"""

from pathlib import Path

import numpy as np

from jaxrank.data.atomic import write_npz

_PAIR_SHIFT = 32


class IdTable:
    """Dense ids ``0 .. n-1`` for distinct keys (``int64`` or bytes), in order of first appearance."""

    def __init__(self, keys: np.ndarray):
        self.keys = keys
        order = np.argsort(keys, kind="stable")
        self.sorted_keys, self.sorted_ids = keys[order], order.astype(np.int64)

    def __len__(self) -> int:
        return self.keys.shape[0]

    def find(self, values: np.ndarray) -> np.ndarray:
        """``[N] i64`` the id of each value, -1 for a value not in the table."""
        if not len(self):
            return np.full(values.shape, -1, np.int64)
        pos = np.minimum(np.searchsorted(self.sorted_keys, values), len(self) - 1)
        return np.where(self.sorted_keys[pos] == values, self.sorted_ids[pos], -1)

    def ids(self, unique: np.ndarray, first: np.ndarray) -> np.ndarray:
        """The ids of the distinct values ``unique``, adding the absent ones in the order of ``first``
        (the position of each value's first appearance)."""
        ids = self.find(unique)
        new = np.flatnonzero(ids < 0)
        if new.size:
            new = new[np.argsort(first[new], kind="stable")]
            ids[new] = np.arange(len(self), len(self) + new.size)
            values = unique[new]
            dtype = np.promote_types(self.keys.dtype, values.dtype)  # bytes: the wider width, never truncating
            self.keys = np.concatenate([self.keys.astype(dtype), values.astype(dtype)])
            self.sorted_keys, values = self.sorted_keys.astype(dtype), values.astype(dtype)
            order = np.argsort(values, kind="stable")
            at = np.searchsorted(self.sorted_keys, values[order])
            self.sorted_keys = np.insert(self.sorted_keys, at, values[order])
            self.sorted_ids = np.insert(self.sorted_ids, at, ids[new][order])
        return ids


class Vocabulary:
    """Query, document and pair ids of a family of click logs (module docstring).

    Attributes (read-only views):
      queries: ``[Q]`` bytes, the token of each query id.
      docs: ``[D]`` bytes, the token of each document id.
      pair_query, pair_doc: ``[P] i32``, the query id and document id of each pair id.
    """

    def __init__(self, queries=(), docs=(), pair_query=(), pair_doc=()):
        queries = np.asarray(queries, dtype=bytes) if len(queries) else np.zeros(0, "S1")
        docs = np.asarray(docs, dtype=bytes) if len(docs) else np.zeros(0, "S1")
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
        pairs = (pair_query << _PAIR_SHIFT) | pair_doc
        if np.unique(pairs).size != pairs.size:
            raise ValueError("the vocabulary's (query, document) pairs repeat; each pair has one id.")
        self._pairs = IdTable(pairs)

    @property
    def queries(self) -> np.ndarray:
        return self._queries.keys

    @property
    def docs(self) -> np.ndarray:
        return self._docs.keys

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

    def copy(self) -> "Vocabulary":
        other = Vocabulary.__new__(Vocabulary)
        for name in ("_queries", "_docs", "_pairs"):
            table = getattr(self, name)
            clone = IdTable.__new__(IdTable)
            clone.keys, clone.sorted_keys, clone.sorted_ids = table.keys, table.sorted_keys, table.sorted_ids
            setattr(other, name, clone)  # arrays are replaced, never written in place, so sharing them is safe
        return other

    def query_ids(self, tokens) -> np.ndarray:
        """``[N] i64`` the query id of each token (bytes or str), -1 for an unknown query."""
        return self._queries.find(np.asarray([t.encode() if isinstance(t, str) else t for t in tokens], bytes))

    def pair_ids(self, query_tokens, doc_tokens) -> np.ndarray:
        """``[N] i64`` the pair id of each (query token, document token), -1 for an unknown pair."""
        q = self.query_ids(query_tokens)
        d = self._docs.find(np.asarray([t.encode() if isinstance(t, str) else t for t in doc_tokens], bytes))
        found = self._pairs.find((np.maximum(q, 0) << _PAIR_SHIFT) | np.maximum(d, 0))
        return np.where((q >= 0) & (d >= 0), found, -1)

    def add_queries(self, unique, first) -> np.ndarray:
        return self._queries.ids(unique, first)

    def add_docs(self, unique, first) -> np.ndarray:
        return self._docs.ids(unique, first)

    def add_pairs(self, query_ids: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
        """``[N] i64`` the pair id of each (query id, document id), adding unseen pairs in order."""
        keys = (query_ids.astype(np.int64) << _PAIR_SHIFT) | doc_ids.astype(np.int64)
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        return self._pairs.ids(unique, first)[inverse.reshape(-1)]

    def save(self, path) -> Path:
        """Writes the vocabulary to ``path`` (``.npz``) atomically."""
        return write_npz(path, queries=self.queries, docs=self.docs, pair_query=self.pair_query,
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
