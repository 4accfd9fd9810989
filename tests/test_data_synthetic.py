"""Tests for ``jaxrank.data.synthetic.synthetic_queries``.

Every batch has the default shape, so the eager jax ops compile once; the "big" batch for the
statistical checks is 16 default batches (different keys) stacked along the query axis.
"""

import jax
import numpy as np
import pytest

from jaxrank.data import synthetic_queries

# The stacked batch: 16 x 32 queries of the default shape and settings.
BIG = dict(num_queries=512, list_size=16, num_features=8, num_informative=3, num_grades=3)


def _np(batch):
    return tuple(np.asarray(x) for x in batch)


@pytest.fixture(scope="module")
def big_batch():
    parts = [_np(synthetic_queries(key)) for key in jax.random.split(jax.random.PRNGKey(0), 16)]
    return tuple(np.concatenate(x) for x in zip(*parts))


def _ndcg(scores, labels, mask):
    """Mean NDCG (2^l - 1 gains, log2 discounts) over queries with a relevant document."""
    values = []
    for s, l, m in zip(scores, labels, mask):
        s, l = s[m], l[m]
        if l.max() == 0:
            continue
        discount = 1.0 / np.log2(np.arange(2, l.size + 2))
        gains = 2.0**l - 1.0
        dcg = np.sum(gains[np.argsort(-s, kind="stable")] * discount)
        ideal = np.sum(np.sort(gains)[::-1] * discount)
        values.append(dcg / ideal)
    return float(np.mean(values)), len(values)


def test_same_key_same_batch_different_key_different():
    a = _np(synthetic_queries(jax.random.PRNGKey(3)))
    b = _np(synthetic_queries(jax.random.PRNGKey(3)))
    c = _np(synthetic_queries(jax.random.PRNGKey(4)))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], c[0])
    assert not np.array_equal(a[2], c[2]) or not np.array_equal(a[1], c[1])


def test_default_shapes_and_dtypes():
    batch = synthetic_queries(jax.random.PRNGKey(0))
    features, labels, mask, qid = _np(batch)
    assert features.shape == (32, 16, 8) and features.dtype == np.float32
    assert labels.shape == (32, 16) and labels.dtype == np.float32
    assert mask.shape == (32, 16) and mask.dtype == np.bool_
    assert qid.shape == (32,)
    np.testing.assert_array_equal(qid, np.arange(32))
    assert batch.num_queries == 32 and batch.list_size == 16 and batch.num_features == 8


def test_structure(big_batch):
    features, labels, mask, qid = big_batch
    Q, L, D = features.shape
    assert (Q, L, D) == (BIG["num_queries"], BIG["list_size"], BIG["num_features"])
    lengths = mask.sum(1)
    assert lengths.min() >= 2 and lengths.max() <= L  # default min_docs = 2
    assert len(np.unique(lengths)) > L // 2  # lengths really vary
    # real documents come first
    np.testing.assert_array_equal(mask, np.arange(L) < lengths[:, None])
    assert set(np.unique(labels)) <= {0.0, 1.0, 2.0}
    assert set(np.unique(labels[mask])) == {0.0, 1.0, 2.0}
    assert not labels[~mask].any()
    assert not features[~mask].any()
    real = features[mask]
    assert real.min() >= 0.0 and real.max() <= 1.0
    # "most documents non-relevant, as in LETOR"
    assert 0.55 < np.mean(labels[mask] == 0) < 0.85
    np.testing.assert_array_equal(qid, np.tile(np.arange(32), 16))


def test_informative_features_predict_labels(big_batch):
    features, labels, mask, _ = big_batch
    k = BIG["num_informative"]
    ndcg = [_ndcg(features[..., d], labels, mask)[0] for d in range(features.shape[-1])]
    noise = max(ndcg[k:])
    for d in range(k):
        assert ndcg[d] > noise + 0.05, ndcg
    combined, count = _ndcg(features[..., :k].sum(-1), labels, mask)
    assert count > 300
    assert combined > max(ndcg[:k]) and combined > noise + 0.1, (combined, ndcg)
    real_x, real_y = features[mask], labels[mask]
    for d in range(features.shape[-1]):
        r = np.corrcoef(real_x[:, d], real_y)[0, 1]
        if d < k:
            assert r > 0.15, (d, r)
        else:
            assert abs(r) < 0.06, (d, r)


def test_min_docs_equal_list_size_fills_every_list():
    features, labels, mask, _ = _np(synthetic_queries(jax.random.PRNGKey(1), min_docs=16))
    assert mask.all()
    assert set(np.unique(labels)) <= {0.0, 1.0, 2.0}


_MIN_DOCS = r"need 1 <= min_docs <= list_size; got min_docs={}, list_size={}\."
_SIZES = r"need 0 <= num_informative <= num_features and num_grades >= 2; got num_informative={}, num_features={}, num_grades={}\."


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(min_docs=0), _MIN_DOCS.format(0, 16)),
        (dict(min_docs=-1), _MIN_DOCS.format(-1, 16)),
        (dict(min_docs=17), _MIN_DOCS.format(17, 16)),  # > list_size 16
        (dict(list_size=4, min_docs=5), _MIN_DOCS.format(5, 4)),
        (dict(num_informative=9), _SIZES.format(9, 8, 3)),  # > num_features 8
        (dict(num_informative=-1), _SIZES.format(-1, 8, 3)),
        (dict(num_grades=1), _SIZES.format(3, 8, 1)),
        (dict(num_grades=0), _SIZES.format(3, 8, 0)),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        synthetic_queries(jax.random.PRNGKey(0), **kwargs)
