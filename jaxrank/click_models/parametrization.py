"""Where a click model's parameters come from when it is fitted by gradient: tables or functions of
features (CLAX's pluggable parameters, Hager, Zoeter, de Rijke, 2025: embedding tables, linear and
deep modules on query-document features).

A ``Parametrization`` maps trainable values to the model's own logit NamedTuple (``PBMParams``,
``DBNParams``, ...), so every model of ``jaxrank.click_models`` is fitted unchanged:

* ``tables()``: the logit NamedTuple itself is trained, one logit per pair, rank or scalar (the
  parameters EM fits);
* ``features(fields, hidden=...)``: each named per-pair field (``attraction``, ``satisfaction``)
  is ``f(x_p)`` of the pair's features ``x [P, D]``: linear (``hidden=()``) or an MLP with ELU
  units (CLAX's ``DeepParameter``: ELU, two layers of 16 by default); the model's other fields stay
  tables. A fitted function predicts pairs the log never showed.

A ``Parametrization`` is a hashable value (a static argument of ``jit``); the functions are
``init(parametrization, key, model, num_pairs, num_positions, *, prob, dtype, features)``: every table
at probability ``prob`` and every network at logit 0 (last layer zero, hidden layers LeCun-normal),
so both kinds start from the same predictions; ``apply(parametrization, model, trainable, features)``:
the model's logits; ``logit_tables(parametrization, trainable)``: the trained logit tables (where a
Beta prior applies, see ``jaxrank.click_models.gradient``).
"""

from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp

from jaxrank.types import Array


class Parametrization(NamedTuple):
    """``fields`` computed from features by a network with ``hidden`` widths; ``fields = ()``: tables."""

    fields: tuple = ()
    hidden: tuple = ()

    @property
    def name(self) -> str:
        if not self.fields:
            return "tables"
        net = "linear" if not self.hidden else "mlp" + "x".join(map(str, self.hidden))
        return f"features({','.join(self.fields)}; {net})"


class FeatureParams(NamedTuple):
    """The trainable values of a ``features`` parametrization."""

    tables: dict  # {field: logits} the fields kept as tables
    nets: dict  # {field: ((w [D, H1], b [H1]), ..., (w [Hn, 1], b [1]))}


def tables() -> Parametrization:
    """Every parameter is a trained logit (the model's NamedTuple as it is)."""
    return Parametrization()


def features(fields=("attraction",), *, hidden=()) -> Parametrization:
    """The per-pair ``fields`` as functions of the pairs' features ``[P, D]``, the rest as tables.

    Args:
      fields: per-pair fields of the model's params (``pair_fields(model)``), e.g. ``("attraction",)``
        or ``("attraction", "satisfaction")`` for DBN.
      hidden: widths of the hidden layers; ``()`` is linear (``logit = x·w + b``), CLAX's deep default
        is ``(16, 16)``.

    Raises:
      ValueError: for no field, a repeated field or a width below 1 (a field the model lacks is named
        when the fit starts).
    """
    fields, hidden = tuple(fields), tuple(hidden)
    if not fields or len(set(fields)) != len(fields) or not all(isinstance(f, str) for f in fields):
        raise ValueError(f"features needs distinct field names, e.g. ('attraction',); got {fields}.")
    if any(isinstance(h, bool) or not isinstance(h, int) or h < 1 for h in hidden):
        raise ValueError(f"hidden widths must be ints >= 1 (() for linear); got {hidden}.")
    return Parametrization(fields, hidden)


def check_parametrization(parametrization: Optional[Parametrization], model, features=None,
                          num_pairs: Optional[int] = None) -> Parametrization:
    """``tables()`` for ``None``; raises ``ValueError`` for anything else that is not a ``Parametrization``,
    a field ``model`` does not keep per pair, or missing / misshapen ``features``."""
    if parametrization is None:
        parametrization = tables()
    if not isinstance(parametrization, Parametrization):
        raise ValueError(f"parametrization must be jaxrank.click_models.parametrization.tables() or features(...); "
                         f"got {type(parametrization).__name__}.")
    if parametrization.fields:
        per_pair = pair_fields(model)
        bad = [f for f in parametrization.fields if f not in per_pair]
        if bad:
            raise ValueError(f"click model {model.name!r} has no per-pair field {bad[0]!r} to compute from features; "
                             f"its per-pair fields: {', '.join(per_pair) or 'none'}.")
        shape = None if features is None else jnp.shape(features)
        if shape is None or len(shape) != 2 or (num_pairs is not None and shape[0] != num_pairs):
            raise ValueError(f"{parametrization.name} needs features= of shape [P={num_pairs}, D] (row p: pair id p's "
                             f"features); got {shape}.")
    elif features is not None:
        raise ValueError("features= is for a features(...) parametrization; the tables parametrization reads none.")
    return parametrization


def pair_fields(model) -> tuple[str, ...]:
    """The fields of ``model``'s params whose size is the number of pairs (those ``features`` can compute)."""
    small = jax.eval_shape(lambda: model.init_params(2, 1))
    large = jax.eval_shape(lambda: model.init_params(3, 1))
    return tuple(f for f, a, b in zip(small._fields, small, large) if a.shape != b.shape)


def _mlp(layers, x: Array) -> Array:
    """``[P]`` logits of ``x [P, D]``: ELU between the affine layers."""
    for w, b in layers[:-1]:
        x = jax.nn.elu(x @ w + b)
    w, b = layers[-1]
    return (x @ w + b)[..., 0]


def init(key, parametrization: Parametrization, model, num_pairs: int, num_positions: int, *, prob=0.5,
         dtype=jnp.float32, features=None):
    """The trainable values: the model's logits at ``prob``, or ``FeatureParams`` (networks at logit 0)."""
    template = model.init_params(num_pairs, num_positions, prob=prob, dtype=dtype)
    if not parametrization.fields:
        return template
    widths = (jnp.shape(features)[1], *parametrization.hidden, 1)
    nets = {}
    for i, field in enumerate(parametrization.fields):
        layers = []
        for j, (fan_in, fan_out) in enumerate(zip(widths[:-1], widths[1:])):
            if j == len(widths) - 2:  # the last layer at zero: logit 0, the start of a table at 0.5
                w = jnp.zeros((fan_in, fan_out), dtype)
            else:
                key_layer = jax.random.fold_in(jax.random.fold_in(key, i), j)
                w = jax.random.normal(key_layer, (fan_in, fan_out), dtype) / jnp.sqrt(jnp.asarray(fan_in, dtype))
            layers.append((w, jnp.zeros((fan_out,), dtype)))
        nets[field] = tuple(layers)
    kept = {f: v for f, v in zip(template._fields, template) if f not in parametrization.fields}
    return FeatureParams(kept, nets)


def apply(parametrization: Parametrization, model, trainable, features=None):
    """The model's logit NamedTuple from the trainable values (``features [P, D]`` for a features kind)."""
    if not parametrization.fields:
        return trainable
    cls = type(jax.eval_shape(lambda: model.init_params(1, 1)))
    dtype = jax.tree.leaves(trainable.nets)[0].dtype
    x = jnp.asarray(features, dtype)
    computed = {f: _mlp(layers, x) for f, layers in trainable.nets.items()}
    return cls(**trainable.tables, **computed)


def logit_tables(parametrization: Parametrization, trainable):
    """The trained logit tables among the trainable values (all of them for ``tables()``)."""
    return trainable.tables if parametrization.fields else trainable
