"""Ranking metrics (rax-style ``where=``, ``topn=``, ``key=``, ``reduce_fn=``) and dueling-bandit regret."""

from jaxrank.metrics.duel_regret import copeland_scores, copeland_winners, regret_table
from jaxrank.metrics.ranking import average_precision, dcg, err, ndcg, precision, ranked_dcg

__all__ = ["average_precision", "copeland_scores", "copeland_winners", "dcg", "err", "ndcg", "precision", "ranked_dcg",
           "regret_table"]
