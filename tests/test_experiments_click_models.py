"""The ``click_models`` experiment end to end with tiny settings (synthetic data): its numbers are the
library's own fit and metrics of the same log, the verdicts follow the numbers, a Yandex-format log
runs, a killed run resumes with identical results, and bad configs are refused with the value named."""

import json
import re
import time

import numpy as np
import pytest

from experiments import click_models as experiment
from experiments.analysis import click_models as analysis
from experiments.common import registry
from jaxrank.click_models import CLICK_MODELS, conditional_perplexity, fit_em, log_likelihood, perplexity
from tests.conftest import assert_same_run, killed_after_checkpoints, launch_experiment as _launch

TINY = ("num_sessions=300", "num_seeds=2", "num_iterations=4", "models=pbm,dbn,dctr",
        "simulators=navigational,pbm")


def test_synthetic_run_is_the_library_fit_of_each_lane(tmp_path, no_data, capsys):
    run_dir, results = _launch(tmp_path, "click_models", *TINY)
    out = capsys.readouterr().out
    assert "using synthetic data instead" in out
    assert re.search(r"measured [\d,]+ session-iterations/s so far: the 2 fits left take about", out), out
    assert results["simulators"] == ["navigational", "pbm"] and results["dataset"] == "synthetic"
    assert set(results["table"]["pbm"]) == {"pbm/em", "dbn/em", "dctr/em"}
    assert (results["train_sessions"], results["test_sessions"]) == (225, 75)
    arrays = np.load(run_dir / "arrays.npz")
    # Lane (pbm simulator, seed 1), fitted and scored alone through the public API.
    config = registry.make_config(registry.get("click_models"), list(TINY))
    _, _, queries = experiment.load_queries(config)
    grades = experiment.num_grades(queries)
    train, test = experiment.simulate(config, queries, "pbm", 1, grades)
    lane = 1 * config.num_seeds + 1
    for name in ("pbm", "dbn"):
        model = CLICK_MODELS.build(name)
        params = fit_em(train, model, num_iterations=4, num_pairs=int(train.num_pairs))
        np.testing.assert_allclose(arrays[f"{name}__em__log_likelihood"][lane], log_likelihood(model, params, test),
                                   rtol=1e-5)
        np.testing.assert_allclose(arrays[f"{name}__em__perplexity_per_rank"][lane],
                                   perplexity(model, params, test).per_rank, rtol=1e-5)
        np.testing.assert_allclose(arrays[f"{name}__em__conditional_perplexity"][lane],
                                   conditional_perplexity(model, params, test).overall, rtol=1e-5)
    np.testing.assert_allclose(arrays["true_position_bias"][lane], 1.0 / np.arange(1, 11))
    pbm_ll = arrays["pbm__em__log_likelihood"].reshape(2, 2)
    mean, half = results["table"]["pbm"]["pbm/em"]["log_likelihood"]
    assert mean == pytest.approx(pbm_ll[1].mean(), abs=1e-6) and half > 0
    assert 0 < results["production_ndcg@10"]["pbm"][0] <= 1
    # The verdicts, from the lanes' own arrays: the claims this run cannot test say so, and the rest
    # follow the per-lane numbers (means over the pbm simulator's 2 seeds, lanes 2 and 3).
    verdict = {claim.split(" ")[0] if "clicks:" not in claim else claim.split(":")[0]: (v, d)
               for claim, v, d in results["verdicts"]}
    assert verdict["DBN"] == (analysis.UNTESTABLE, "needs DBN, CCM and PBM fits")  # no CCM among the models
    assert verdict["On"][0] == analysis.UNTESTABLE and verdict["Gradient"][0] == analysis.UNTESTABLE
    truth = arrays["true_position_bias"][2:] / arrays["true_position_bias"][2:, :1]
    bias_error = np.nanmax(np.abs(arrays["pbm__em__position_bias"][2:] - truth), axis=1).mean()
    assert verdict["PBM"][0] == (analysis.HOLDS if bias_error < analysis.BIAS_TOLERANCE else analysis.FAILS)
    assert f"max error {bias_error:.3f}" in verdict["PBM"][1]
    perplexity_pbm = {m: arrays[f"{m}__em__perplexity"][2:].mean() for m in ("pbm", "dbn", "dctr")}
    other = min(("dbn", "dctr"), key=perplexity_pbm.get)
    gap = perplexity_pbm["pbm"] - perplexity_pbm[other]
    half = max(results["table"]["pbm"][f"{m}/em"]["perplexity"][1] for m in ("pbm", other))
    assert verdict["pbm clicks"][0] == (analysis.HOLDS if gap <= half else analysis.FAILS)
    assert f"best other {other}/em" in verdict["pbm clicks"][1]
    for name in ("table.md", "per_rank_perplexity.png", "position_bias.png", "timings.json"):
        assert (run_dir / name).is_file(), name
    assert "fit_s" in json.loads((run_dir / "timings.json").read_text())["fits"]["dbn/em"]
    assert "fit s" not in (run_dir / "table.md").read_text()  # wall times stay out of the results
    assert "[click_models] work: 10,800 session-iterations; about" in out  # 4 lanes x 3 models x 4 x 225 sessions


def _summary(perplexities, lls=None, bias_error=0.02):
    """A hand-made results dict: one simulator per key of ``perplexities`` ({sim: {label: value}})."""
    table = {sim: {label: {"perplexity": [value, 0.001], "log_likelihood": [(lls or {}).get(sim, {}).get(label, -0.5),
                                                                              0.001], "ndcg@10": [0.6, 0.01]}
                   for label, value in rows.items()} for sim, rows in perplexities.items()}
    summary = {"simulators": list(perplexities), "estimators": ["em"], "table": table,
               "production_ndcg@10": {sim: [0.5, 0.01] for sim in perplexities}}
    if "pbm" in perplexities:
        summary["position_bias"] = {"pbm": {"pbm/em max error": [bias_error, 0.01]}}
    return summary


def test_verdicts_follow_the_numbers():
    summary = _summary({"pbm": {"pbm/em": 1.30, "dbn/em": 1.35, "gctr/em": 1.5},
                        "navigational": {"dbn/em": 1.40, "ccm/em": 1.38, "pbm/em": 1.45}},
                       lls={"navigational": {"dbn/em": -0.40, "ccm/em": -0.41, "pbm/em": -0.45}})
    got = {claim.split(":")[0] if "clicks:" in claim else claim.split(" ")[0]: (verdict, detail)
           for claim, verdict, detail in analysis.verdicts(summary)}
    assert got["pbm clicks"][0] == analysis.HOLDS  # PBM 1.30 below DBN 1.35
    assert got["navigational clicks"][0] == analysis.FAILS  # CCM 1.38 beats DBN 1.40 by more than the CIs
    assert "ccm/em 1.3800" in got["navigational clicks"][1]
    assert got["DBN"][0] == analysis.HOLDS  # both above PBM's -0.45
    assert got["PBM"][0] == analysis.HOLDS  # position-bias error 0.02 < 0.05
    assert got["The"][0] == analysis.HOLDS  # NDCG 0.6 > the production ranker's 0.5
    assert got["On"][0] == analysis.UNTESTABLE and got["Gradient"][0] == analysis.UNTESTABLE
    worse = _summary({"pbm": {"pbm/em": 1.30, "gctr/em": 1.5}}, bias_error=0.2)
    worse["table"]["pbm"]["pbm/em"]["ndcg@10"] = [0.4, 0.01]
    got = {claim.split(" ")[0]: verdict for claim, verdict, _ in analysis.verdicts(worse)}
    assert got["PBM"] == analysis.FAILS and got["The"] == analysis.FAILS and got["DBN"] == analysis.UNTESTABLE
    worse.update(train_sessions=3000, num_queries=784)
    (detail,) = [d for c, _, d in analysis.verdicts(worse) if c.startswith("PBM")]
    assert detail.endswith("fitted from 3,000 training sessions over 784 queries (3.8 a query): a small log, "
                           "where EM's error shrinks with sessions")
    # The real-log claim is on the LL and the conditional perplexity (the unconditional one is left out).
    real = {"simulators": ["log"], "estimators": ["em"],
            "table": {"log": {f"{m}/em": {"perplexity": [1.0, 0.001], "conditional_perplexity": [p, 0.001],
                                          "log_likelihood": [ll, 0.001]}
                              for m, p, ll in (("ubm", 1.30, -0.28), ("dbn", 1.31, -0.29), ("pbm", 1.32, -0.30),
                                               ("gctr", 1.5, -0.37))}}}
    got = {claim.split(" ")[0]: (verdict, detail) for claim, verdict, detail in analysis.verdicts(real)}
    assert got["On"] == (analysis.HOLDS, "UBM -0.2800 / 1.3000, DBN -0.2900 / 1.3100, PBM -0.3000 / 1.3200, "
                                         "GCTR -0.3700 / 1.5000 (LL / cond. perplexity)")
    assert got["The"][0] == analysis.UNTESTABLE
    real["table"]["log"]["pbm/em"]["log_likelihood"] = [-0.285, 0.001]  # PBM above DBN's LL
    assert {c.split(" ")[0]: v for c, v, _ in analysis.verdicts(real)}["On"] == analysis.FAILS


def _write_yandex(path, num_sessions=80, seed=0):
    """A small WSCD-format log: 6 queries of 5 URLs each, random clicks."""
    rng = np.random.default_rng(seed)
    lines = []
    for s in range(num_sessions):
        q = int(rng.integers(6))
        urls = [100 + 10 * q + d for d in rng.permutation(5)]
        lines.append(f"{s}\t0\tQ\t{q}\t1\t" + "\t".join(map(str, urls)))
        for r, url in enumerate(urls):
            if rng.random() < 0.5 / (r + 1):
                lines.append(f"{s}\t{r + 1}\tC\t{url}")
    path.write_text("\n".join(lines) + "\n")


def test_a_yandex_log_runs(tmp_path, no_data):
    log = tmp_path / "clicks.tsv"
    _write_yandex(log)
    run_dir, results = _launch(tmp_path, "click_models", f"log={log}", "num_seeds=2", "num_iterations=3",
                               "models=pbm,ubm,gctr", "num_positions=5")
    assert results["simulators"] == ["log"] and results["num_sessions"] == 80 and results["num_queries"] == 6
    assert "production_ndcg@10" not in results and "position_bias" not in results
    assert "ndcg@10" not in results["table"]["log"]["pbm/em"]
    verdict = {claim.split(" ")[0]: (v, d) for claim, v, d in results["verdicts"]}
    # Clicks 0.5 / rank whatever the document: position-based users. The claim's numbers are the
    # lanes' LL and conditional perplexities, and its verdict is UBM above PBM and GCTR on the first
    # and below them on the second.
    arrays = np.load(run_dir / "arrays.npz")
    perplexity = {m: arrays[f"{m}__em__perplexity"].mean() for m in ("ubm", "pbm", "gctr")}
    assert perplexity["gctr"] > perplexity["pbm"]  # a model without positions loses on position-driven clicks
    ll = {m: arrays[f"{m}__em__log_likelihood"].mean() for m in ("ubm", "pbm", "gctr")}
    cond = {m: arrays[f"{m}__em__conditional_perplexity"].mean() for m in ("ubm", "pbm", "gctr")}
    holds = ll["ubm"] > max(ll["pbm"], ll["gctr"]) and cond["ubm"] < min(cond["pbm"], cond["gctr"])
    assert verdict["On"][0] == (analysis.HOLDS if holds else analysis.FAILS)
    values = ", ".join(f"{m.upper()} {ll[m]:.4f} / {cond[m]:.4f}" for m in ("ubm", "pbm", "gctr"))
    assert verdict["On"][1].startswith(values + " (LL / cond. perplexity)")


@pytest.mark.slow
def test_a_killed_run_resumes_with_identical_results(tmp_path, no_data, monkeypatch):
    overrides = ["num_sessions=200", "num_seeds=2", "num_iterations=4", "models=pbm,dbn", "simulators=pbm"]
    full_dir = registry.launch("click_models", tmp_path / "full", overrides)
    with killed_after_checkpoints(monkeypatch, 6):  # 4 chunks of PBM, then inside DBN
        registry.launch("click_models", tmp_path / "killed", overrides)
    (run_dir,) = (tmp_path / "killed" / "click_models").iterdir()
    assert not (run_dir / "results.json").exists()
    registry.resume(run_dir)
    assert_same_run(full_dir, run_dir)


@pytest.mark.parametrize("overrides, match", [
    (["models=pbm,clicky"], "models must be one of .*got 'clicky'"),
    (["simulators=perfect,perfect"], "names an entry twice"),
    (["estimators=newton"], "estimators must be one of 'em', 'gradient'; got 'newton'"),
    (["conventions=clax"], "conventions must be one of 'jaxrank', 'pyclick'; got 'clax'"),
    (["test_fraction=1.5"], r"test_fraction must be in \(0, 1\); got 1.5"),
    (["num_sessions=1"], "num_sessions must be an int >= 2; got 1"),
    (["num_sessions=3", "test_fraction=0.1"], "leaves 3 training sessions; both parts need at least one"),
    (["pbm_attraction=0.5,0.2"], r"pbm_attraction must be two probabilities eps- <= eps\+"),
    (["log=/no/such/log.tsv"], "log=/no/such/log.tsv: no such file"),
    (["dataset=no-such-folder"], "no-such-folder"),
    # Sizes beyond memory or int32: one line naming the value and the largest that fits, before any work.
    (["num_sessions=1000000000000"], r"^`num_sessions=1000000000000`: the run would hold .* is available; the largest "
                                     r"that fits is \d+\.$"),
    (["num_seeds=1000000000"], r"^`num_seeds=1000000000`: the run would hold .*; the largest that fits is \d+\.$"),
    (["num_positions=1000000"], r"^`num_positions=1000000`: the run would hold .*; the largest that fits is \d+\.$"),
    (["num_iterations=1000000000000"], r"^`num_iterations=1000000000000`: num_iterations = 1,000,000,000,000 "
                                       r"overflows the int32 .*; the largest that fits is 2147483647\.$"),
    (["learning_rate=inf", "estimators=gradient"], r"^`learning_rate=inf`: must be a finite number > 0\.$"),
])
def test_bad_configs_are_refused(tmp_path, no_data, overrides, match):
    start = time.perf_counter()
    with pytest.raises(registry.ExperimentError, match=match):
        registry.launch("click_models", tmp_path, overrides)
    assert time.perf_counter() - start < 30  # refused before any data is made or program compiled
    assert not (tmp_path / "click_models").exists() or not any((tmp_path / "click_models").iterdir())


def test_a_learning_rate_that_breaks_the_fit_stops_naming_it_and_keeps_no_checkpoint(tmp_path, no_data):
    """Adam steps of 10⁶ drive PBM's logits to ±10⁷: the test log-likelihood is -inf; the run stops with
    the value named and leaves nothing that ``--resume`` would repeat."""
    with pytest.raises(registry.ExperimentError, match=r"^`learning_rate=1000000.0`: the test log-likelihood of "
                                                       r"pbm/gradient became non-finite \([12] of 2 values\)"):
        registry.launch("click_models", tmp_path, ["num_sessions=300", "num_seeds=2", "num_epochs=2", "models=pbm",
                                                   "simulators=pbm", "estimators=gradient", "learning_rate=1e6"])
    assert not list(tmp_path.glob("click_models/*/checkpoints/*.npz"))


def test_train_and_test_logs_follow_pyclicks_protocol(tmp_path, no_data):
    """Training log: queries 0-5, URLs 100 + 10q + d for d < 5. Test log: queries 0-7 (6, 7 unseen:
    dropped), and d < 6 (d = 5 never trained: unseen pairs, at 0.5 under the "prior" rule). The
    experiment's lanes are the library's fit of the training log scored on the kept test sessions."""
    from jaxrank import data
    from jaxrank.data.sessions import take_sessions

    train_path, test_path = tmp_path / "train.tsv", tmp_path / "test.tsv"
    _write_yandex(train_path, num_sessions=80, seed=0)
    rng = np.random.default_rng(1)
    lines, kept, unseen = [], 0, set()
    for s in range(60):
        q = int(rng.integers(8))
        urls = [100 + 10 * q + d for d in rng.permutation(6)[:5]]
        kept += q < 6
        unseen |= {(q, u) for u in urls if q < 6 and u % 10 == 5}
        lines.append(f"{s}\t0\tQ\t{q}\t1\t" + "\t".join(map(str, urls)))
        lines += [f"{s}\t{r + 1}\tC\t{u}" for r, u in enumerate(urls) if rng.random() < 0.4]
    test_path.write_text("\n".join(lines) + "\n")
    run_dir, results = _launch(tmp_path, "click_models", f"train_log={train_path}", f"test_log={test_path}",
                               "num_seeds=1", "num_iterations=3", "models=pbm,gctr", "num_positions=5")
    assert results["test"] == {"sessions": kept, "sessions_of_unseen_queries": 60 - kept,
                               "unseen_pairs": len(unseen), "positions_of_unseen_pairs": results["test"][
                                   "positions_of_unseen_pairs"], "unseen_rule": "prior"}
    assert results["test"]["positions_of_unseen_pairs"] >= len(unseen) > 0
    assert results["test_sessions"] == kept and results["train_sessions"] == 80
    train, vocab, _ = data.read_click_log(train_path, num_positions=5)
    test, vocab, info = data.read_click_log(test_path, vocabulary=vocab, num_positions=5)
    test = take_sessions(test, np.flatnonzero(np.asarray(test.query) < 6))
    model = CLICK_MODELS.build("pbm")
    params = fit_em(train, model, num_iterations=3, num_pairs=vocab.num_pairs)
    np.testing.assert_array_equal(np.asarray(params.attraction)[info.known_pairs:], 0.0)  # logit 0.5: PyClick's
    arrays = np.load(run_dir / "arrays.npz")
    np.testing.assert_allclose(arrays["pbm__em__log_likelihood"][0], log_likelihood(model, params, test), rtol=1e-5)
    assert "unseen pairs" in (run_dir / "table.md").read_text()
