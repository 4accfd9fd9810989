"""jaxrank: pure-JAX learning to rank and online ranker evaluation."""

__version__ = "0.1.0"

__all__ = ["QueryBatch", "RaggedQueries", "__version__"]


def __getattr__(name):
    # the query types import JAX; importing only a file reader (``jaxrank.data``) does not
    if name in ("QueryBatch", "RaggedQueries"):
        from jaxrank import types

        globals()[name] = value = getattr(types, name)
        return value
    raise AttributeError(f"module 'jaxrank' has no attribute {name!r}")
