"""Ranking metrics (rax-style ``where=``, ``topn=``, ``key=``, ``reduce_fn=``), dueling-bandit regret, and the
statistics of runs (``statistics``: means, Student t intervals, paired t-tests)."""

from jaxrank.metrics.duel_regret import copeland_scores, copeland_winners, regret_table
from jaxrank.metrics.ranking import average_precision, dcg, err, ndcg, precision, ranked_dcg
from jaxrank.metrics.statistics import mean_ci, paired_t_test

__all__ = ["average_precision", "copeland_scores", "copeland_winners", "dcg", "err", "mean_ci", "ndcg", "paired_t_test",
           "precision", "ranked_dcg", "regret_table"]
