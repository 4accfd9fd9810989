"""Data loading: the only part of jaxrank that touches files."""

from jaxrank.data.atomic import write_atomic, write_json, write_npz, write_text
from jaxrank.data.cache import load_svmlight
from jaxrank.data.checkpoint import load_checkpoint, remove_stale_temporaries, save_checkpoint
from jaxrank.data.letor import load_fold, load_queries, split_file
from jaxrank.data.locations import cache_dir, data_dir, resolve
from jaxrank.data import preference
from jaxrank.data.preference import load_preference_matrix
from jaxrank.data.padding import bucket_size, group_queries, normalize_per_query, query_lengths, stack_batches
from jaxrank.data.svmlight import SVMLightData, parse_svmlight
from jaxrank.data.synthetic import synthetic_queries

__all__ = [
    "SVMLightData",
    "bucket_size",
    "cache_dir",
    "data_dir",
    "group_queries",
    "load_checkpoint",
    "load_fold",
    "load_preference_matrix",
    "load_queries",
    "load_svmlight",
    "normalize_per_query",
    "parse_svmlight",
    "preference",
    "query_lengths",
    "remove_stale_temporaries",
    "resolve",
    "save_checkpoint",
    "split_file",
    "stack_batches",
    "synthetic_queries",
    "write_atomic",
    "write_json",
    "write_npz",
    "write_text",
]
