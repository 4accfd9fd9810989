"""Data loading: the only part of jaxrank that touches files, and the query layouts."""

from jaxrank.data.atomic import write_atomic, write_json, write_npz, write_text
from jaxrank.data.cache import load_svmlight
from jaxrank.data.click_log import ClickLogInfo, detect_format, read_click_log
from jaxrank.data.checkpoint import load_checkpoint, remove_stale_temporaries, save_checkpoint
from jaxrank.data.letor import LAYOUTS, load_fold, load_queries, split_file
from jaxrank.data.locations import cache_dir, data_dir, resolve
from jaxrank.data import preference
from jaxrank.data.preference import load_preference_matrix
from jaxrank.data.ragged import (
    Bucket,
    as_ragged,
    bucket_size,
    bucket_sizes,
    buckets,
    concat_queries,
    document_query,
    linear_query_values,
    map_queries,
    normalize_documents,
    pad_queries,
    query_lengths,
    ragged_queries,
    take_queries,
)
from jaxrank.data.sessions import SessionLog, read_sessions_tsv, session_log, take_sessions, write_sessions_tsv
from jaxrank.data.svmlight import SVMLightData, parse_svmlight
from jaxrank.data.synthetic import synthetic_queries
from jaxrank.data.vocabulary import Vocabulary
from jaxrank.data.yandex import YandexIds, read_yandex

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
