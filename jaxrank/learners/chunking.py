"""How the learners' studies cut their work into the lane runner's calls (``jaxrank.lanes``)."""


def chunks_per_call(num_chunks: int, most: int = 32) -> int:
    """The largest divisor of ``num_chunks`` up to ``most``: chunks scanned by one call of the lane
    runner, so no padding chunk is ever run (the runner needs a multiple) and progress and
    checkpoints come every few chunks."""
    return max(d for d in range(1, min(num_chunks, most) + 1) if num_chunks % d == 0)
