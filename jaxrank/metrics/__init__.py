"""Ranking metrics (rax-style ``where=``, ``topn=``, ``key=``, ``reduce_fn=``)."""

from jaxrank.metrics.ranking import average_precision, dcg, err, ndcg, precision

__all__ = ["average_precision", "dcg", "err", "ndcg", "precision"]
