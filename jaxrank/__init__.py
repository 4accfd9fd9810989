"""jaxrank: pure-JAX learning to rank and online ranker evaluation."""

from jaxrank.types import QueryBatch, RaggedQueries

__version__ = "0.1.0"

__all__ = ["QueryBatch", "RaggedQueries", "__version__"]
