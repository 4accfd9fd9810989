"""Data loading: the only part of jaxrank that touches files, and the query layouts.

Names load with their module on first use, so a process that only reads click logs or svmlight
files (``read_click_log``, ``load_svmlight``) never imports JAX.
"""

import importlib

_HOME = {
    "Bucket": "ragged",
    "ClickLogInfo": "click_log",
    "LAYOUTS": "letor",
    "SVMLightData": "svmlight",
    "SessionLog": "sessions",
    "Vocabulary": "vocabulary",
    "YandexIds": "yandex",
    "as_ragged": "ragged",
    "bucket_size": "ragged",
    "bucket_sizes": "ragged",
    "buckets": "ragged",
    "cache_dir": "locations",
    "concat_queries": "ragged",
    "data_dir": "locations",
    "detect_format": "click_log",
    "document_query": "ragged",
    "linear_query_values": "ragged",
    "load_checkpoint": "checkpoint",
    "load_fold": "letor",
    "load_preference_matrix": "preference",
    "load_queries": "letor",
    "load_svmlight": "cache",
    "map_queries": "ragged",
    "normalize_documents": "ragged",
    "pad_queries": "ragged",
    "parse_svmlight": "svmlight",
    "query_lengths": "ragged",
    "ragged_queries": "ragged",
    "read_click_log": "click_log",
    "read_sessions_tsv": "sessions",
    "read_yandex": "yandex",
    "remove_stale_temporaries": "checkpoint",
    "resolve": "locations",
    "save_checkpoint": "checkpoint",
    "session_log": "sessions",
    "split_file": "letor",
    "synthetic_queries": "synthetic",
    "take_queries": "ragged",
    "take_sessions": "sessions",
    "write_atomic": "atomic",
    "write_json": "atomic",
    "write_npz": "atomic",
    "write_sessions_tsv": "sessions",
    "write_text": "atomic",
}

__all__ = [
    "Bucket",
    "ClickLogInfo",
    "LAYOUTS",
    "SVMLightData",
    "SessionLog",
    "Vocabulary",
    "YandexIds",
    "as_ragged",
    "bucket_size",
    "bucket_sizes",
    "buckets",
    "cache_dir",
    "concat_queries",
    "data_dir",
    "detect_format",
    "document_query",
    "linear_query_values",
    "load_checkpoint",
    "load_fold",
    "load_preference_matrix",
    "load_queries",
    "load_svmlight",
    "map_queries",
    "normalize_documents",
    "pad_queries",
    "parse_svmlight",
    "preference",
    "query_lengths",
    "read_click_log",
    "read_sessions_tsv",
    "read_yandex",
    "ragged_queries",
    "remove_stale_temporaries",
    "resolve",
    "save_checkpoint",
    "session_log",
    "split_file",
    "synthetic_queries",
    "take_queries",
    "take_sessions",
    "write_atomic",
    "write_json",
    "write_npz",
    "write_sessions_tsv",
    "write_text",
]


def __getattr__(name):
    if name in _HOME:
        value = getattr(importlib.import_module(f"jaxrank.data.{_HOME[name]}"), name)
    else:
        try:
            value = importlib.import_module(f"jaxrank.data.{name}")  # a submodule, e.g. preference
        except ModuleNotFoundError:
            raise AttributeError(f"module 'jaxrank.data' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
