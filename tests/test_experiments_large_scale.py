"""``large_scale`` end to end on the real MSLR matrices with tiny settings (K = 8, a few hundred
steps), its Copeland-subset search, and the survival probe of the eliminating algorithms."""

import math
import re

import jax
import numpy as np
import pytest

from experiments import large_scale
from experiments.analysis import large_scale as analysis
from jaxrank import bandits, envs
from jaxrank.bandits import relabel
from tests.conftest import launch_experiment


@pytest.fixture
def real_data(shared_data, monkeypatch):
    monkeypatch.setenv("JAXRANK_DATA", str(shared_data))
    return shared_data


def test_large_scale_tiny_run(tmp_path, real_data):
    run_dir, results = launch_experiment(
        tmp_path, "large_scale", "num_arms=8", "num_runs=2", "num_steps=300", "slow_num_steps=100",
        "algorithms=merge_dts@tuned,merge_rucb,dts@tuned,sparring@exp3", "long_algorithms=sparring@exp3",
        "long_num_steps=600", "long_num_runs=3", "copeland_algorithms=merge_dts,rucb", "copeland_num_arms=6",
        "copeland_num_subsets=1", "copeland_num_runs=2", "copeland_num_steps=200")
    assert "MSLR-Perfect" in results["matrices"]  # the other is skipped if its first 8 rankers lack a winner
    entry = results["matrices"]["MSLR-Perfect"]
    perfect = entry["algorithms"]
    assert set(perfect) == {"merge_dts@tuned", "merge_rucb", "dts@tuned", "sparring@exp3"}
    # The authors' tuned settings (individual_run.py: MergeDTSBest, DTSBEST) and Exp3's γ for K = 8, T = 300.
    assert perfect["merge_dts@tuned"]["settings"] == {"slots": 24, "alpha": pytest.approx(0.8**6), "epsilon": 0.01,
                                                      "partition_size": 16.0, "c": 400_000.0}
    assert perfect["dts@tuned"]["settings"]["alpha"] == pytest.approx(0.2097152)
    assert perfect["sparring@exp3"]["settings"]["inner"] == "exp3"
    assert perfect["sparring@exp3"]["settings"]["gamma"] == pytest.approx(math.sqrt(8 * math.log(8) / ((math.e - 1) * 300)))
    assert perfect["dts@tuned"]["num_steps"] == 100 and perfect["merge_dts@tuned"]["checkpoints"][-1] == 300
    assert perfect["merge_dts@tuned"]["winner_dropped_runs"] in (0, 1, 2)
    assert perfect["merge_dts@tuned"]["final"]["accuracy"] is None  # the probe's curve is survival
    regret = np.asarray(perfect["merge_dts@tuned"]["regret_mean"])
    assert np.all(np.diff(regret) >= 0) and regret[-1] > 0
    long = entry["long"]["sparring@exp3"]
    assert results["long_algorithms"] == ["sparring@exp3"] and long["num_steps"] == 600 and long["num_runs"] == 3
    assert long["settings"]["gamma"] == pytest.approx(math.sqrt(8 * math.log(8) / ((math.e - 1) * 600)))
    # Every run relabels the arms: the winner's label per run, as run_orders draws it for seed 0.
    orders = relabel.run_orders(jax.random.key(0), 2, 8)
    winner = envs.condorcet_winner(envs.select_rankers(np.loadtxt(real_data / "preference_matrices" / "MSLR-Perfect.txt"), 8)[0])
    assert entry["winner_label_by_run"] == [int(np.flatnonzero(o == winner)[0]) for o in orders]
    (key,) = [k for k in results["copeland"] if k.startswith("MSLR-Perfect")]
    sub = results["copeland"][key]
    assert len(sub["rankers"]) == 6 and set(sub["algorithms"]) == {"merge_dts", "rucb"}
    assert sub["construction"] == "cycle" and len(sub["copeland_winners"]) == 3 and sub["smallest_gap"] > 0
    assert all(0 <= s["sublinearity"] < 5 for s in sub["algorithms"].values())
    assert all(set(s["late_early"]) == {"early", "late", "excess", "excess_ci95"} for s in sub["algorithms"].values())
    for name in ("table.md", "large_scale.png", "large_scale_copeland.png", "arrays.npz"):
        assert (run_dir / name).is_file()
    text = (run_dir / "table.md").read_text()
    assert "MergeDTS (tuned)" in text and "Sparring-EXP3" in text and "Long stage" in text
    assert "| MSLR-Perfect: MergeDTS never drops the Condorcet winner |" in text
    assert "| *not testable here* | K = 8 here" in text  # the regret claims are about >= 100 rankers


def test_rows_are_the_authors_baselines_in_default_and_tuned_settings():
    rows = large_scale.Config().algorithms
    assert {large_scale.row_algorithm(r)[0] for r in rows} == {
        "merge_dts", "merge_rucb", "dts", "rcs", "rmed", "self_sparring", "rex3", "sparring"}
    assert {r for r in rows if r.endswith("@tuned")} == {"merge_dts@tuned", "merge_rucb@tuned", "dts@tuned"}
    assert {large_scale.row_algorithm(r)[1].get("inner") for r in rows if r.startswith("sparring")} == {None, "ts", "exp3"}
    assert large_scale.row_algorithm("rex3@mergedts_code") == ("rex3", {"convention": "mergedts"})
    assert not any(r.endswith("mergedts_code") for r in rows)  # the authors' versions are opt-in rows
    assert large_scale.row_algorithm("merge_rucb@tuned")[1] == {"alpha": pytest.approx(0.262144), "c": 4e5,
                                                                "partition_size": 8.0}
    assert large_scale.row_algorithm("rucb") == ("rucb", {})
    with pytest.raises(ValueError, match="unknown row 'rcs@tuned'; a row is a registered bandit"):
        large_scale.row_algorithm("rcs@tuned")
    # Auer et al. (2002), Corollary 3.2 with g = T, by hand: K = 136, T = 10^6.
    assert float(bandits.sparring.exp3_gamma(136, 1_000_000)) == pytest.approx(0.019719, rel=1e-4)
    assert float(bandits.sparring.exp3_gamma(3, 1)) == 1.0


def _results(rows: dict, num_steps: int = 1000) -> dict:
    """A ``results.json`` of one 136-arm matrix: ``rows = {row: (mean at the horizon, ci, steps)}``."""
    algos = {row: {"checkpoints": [1, steps], "regret_mean": [0.5, mean], "regret_ci95": [0.1, ci],
                   "num_steps": steps, "num_runs": 10, "final": {"regret_mean": mean, "regret_ci95": ci}}
             for row, (mean, ci, steps) in rows.items()}
    return {"num_steps": num_steps, "paper_horizon": 100_000_000,
            "matrices": {"M": {"num_arms": 136, "algorithms": algos, "long": {}}}}


def test_best_rows_are_the_least_regret_rows_at_the_main_horizon():
    results = _results({"a": (50, 1, 1000), "b": (10, 1, 1000), "c": (30, 1, 1000), "d": (20, 1, 1000),
                        "slow": (1, 1, 100)})
    assert large_scale.best_rows(results) == ["b", "d", "c"]
    results["matrices"]["N"] = {"num_arms": 135, "algorithms": {
        k: results["matrices"]["M"]["algorithms"][k] for k in ("a", "c")}}
    assert large_scale.best_rows(results, 2) == ["c", "a"]  # only rows run on every matrix


def _verdict(results, start: str) -> tuple:
    (found,) = [v for v in analysis.verdicts(results) if v[0].startswith(start)]
    assert found[1] in ("holds", "does not hold", "not testable here")
    return found


def test_regret_verdicts_compare_the_means_against_their_ci():
    tuned = "M: MergeDTS has less cumulative regret than MergeRUCB (tuned settings"
    default = "M: MergeDTS has less cumulative regret than MergeRUCB (default settings"
    others = "M: MergeDTS has less cumulative regret than every other baseline, at the main horizon"
    slow = "M: MergeDTS has less cumulative regret than the baselines run to a shorter horizon only"
    # 100 ± 10 against 200 ± 10: the gap 100 exceeds sqrt(10² + 10²) = 14.1.
    results = _results({"merge_dts@tuned": (100, 10, 1000), "merge_rucb@tuned": (200, 10, 1000),
                        "merge_dts": (300, 10, 1000), "merge_rucb": (310, 10, 1000),
                        "rcs": (400, 30, 1000), "dts@tuned": (2, 0.5, 100)})
    claim, verdict, detail = _verdict(results, tuned)
    assert verdict == "holds" and "gap 100 ± 14" in detail and "T = 1,000" in detail
    claim, verdict, detail = _verdict(results, default)
    assert verdict == "does not hold" and "gap 10 ± 14" in detail  # within the CI
    assert detail.endswith("— measured at T <= 1,000, 100,000x short of the paper's 100,000,000 steps")
    claim, verdict, detail = _verdict(results, others)  # MergeDTS tuned against the default MergeRUCB too
    assert verdict == "holds" and "MergeRUCB (gap 210 ± 14 at T = 1,000)" in detail
    assert "RCS (gap 300 ± 32 at T = 1,000)" in detail and "D-TS" not in detail
    # D-TS ran 100 steps: compared there, MergeDTS's curve read between its checkpoints (0.5 + 99.5 * 99/999).
    claim, verdict, detail = _verdict(results, slow)
    assert verdict == "does not hold" and detail.startswith("not below: D-TS (tuned) (more regret: ")
    assert "MergeDTS (tuned) 10 ± 1 vs D-TS (tuned) 2 ± 0 at T = 100 " in detail
    assert detail.endswith("— measured at T <= 100, 1,000,000x short of the paper's 100,000,000 steps")
    results["matrices"]["M"]["algorithms"]["dts@tuned"]["regret_mean"] = [0.5, 20]
    assert _verdict(results, slow)[1] == "holds"
    results["matrices"]["M"]["algorithms"]["rcs"]["regret_mean"] = [0.5, 110]
    claim, verdict, detail = _verdict(results, others)
    assert verdict == "does not hold" and "not below: RCS (within the CI: " in detail
    results["matrices"]["M"]["algorithms"].pop("dts@tuned")
    assert _verdict(results, slow)[1:] == ("not testable here", "no MergeDTS row, or no baseline row of this kind")
    # The longest horizon both rows reached: a long-stage entry of both decides.
    results["matrices"]["M"]["long"] = {r: {**_results({r: (m, c, 10_000)})["matrices"]["M"]["algorithms"][r],
                                            "num_runs": 4} for r, m, c in (("merge_dts@tuned", 500, 10),
                                                                           ("merge_rucb@tuned", 480, 10))}
    claim, verdict, detail = _verdict(results, tuned)
    assert verdict == "does not hold" and "T = 10,000 (4/4 runs): gap -20 ± 14" in detail
    results["matrices"]["M"]["algorithms"].pop("merge_rucb")
    assert _verdict(results, default)[1:] == ("not testable here", "rows merge_dts and merge_rucb were not both run")
    results["matrices"]["M"]["num_arms"] = 8
    assert _verdict(results, tuned)[1] == "not testable here" and "K = 8 here" in _verdict(results, tuned)[2]
    assert _verdict(results, others)[1] == "not testable here"


def test_winner_and_copeland_verdicts():
    results = _results({"merge_dts": (1, 1, 1000), "merge_dts@tuned": (1, 1, 1000), "rcs": (1, 1, 1000)})
    algos = results["matrices"]["M"]["algorithms"]
    algos["merge_dts"]["winner_dropped_runs"] = algos["merge_dts@tuned"]["winner_dropped_runs"] = 0
    claim, verdict, detail = _verdict(results, "M: MergeDTS never drops")
    assert verdict == "holds" and detail.startswith("no run dropped it (MergeDTS: 0 of 10 runs to T = 1,000, "
                                                    "P(drop) <= 0.30; MergeDTS (tuned): 0 of 10 runs")
    # a long stage reruns the same seeds further: each row counts once, at its longest horizon
    results["matrices"]["M"]["long"] = {"merge_dts": {**algos["merge_dts"], "num_steps": 10_000,
                                                      "winner_dropped_runs": 1}}
    claim, verdict, detail = _verdict(results, "M: MergeDTS never drops")
    assert verdict == "does not hold" and detail.startswith("1 run dropped it (MergeDTS: 1 of 10 runs to T = 10,000")
    results["matrices"]["M"].pop("long")
    algos["merge_dts@tuned"]["winner_dropped_runs"] = 2
    claim, verdict, detail = _verdict(results, "M: MergeDTS never drops")
    assert verdict == "does not hold" and detail.startswith("2 runs dropped it")
    for row in ("merge_dts", "merge_dts@tuned"):
        algos.pop(row)
    assert _verdict(results, "M: MergeDTS never drops")[1] == "not testable here"

    assert _verdict(results, "Without a Condorcet winner, CCB")[1] == "not testable here"  # no Copeland runs
    late_early = {"ccb": {"early": 0.01, "late": 0.001, "excess": -0.004, "excess_ci95": 0.002},
                  "scb": {"early": 0.01, "late": 0.004, "excess": -0.001, "excess_ci95": 0.003}}
    results["copeland"] = {f"S {i}": {"algorithms": {a: {"late_early": le, "num_runs": 10, "num_steps": 1000,
                                                          "sublinearity": le["late"] / le["early"]}
                                                      for a, le in late_early.items()}} for i in range(2)}
    claim, verdict, detail = _verdict(results, "Without a Condorcet winner, CCB")
    assert verdict == "holds" and "late - early/2 -4.00e-03 ± 2.0e-03" in detail
    claim, verdict, detail = _verdict(results, "Without a Condorcet winner, SCB")
    assert verdict == "does not hold" and "on 2 of 2 subsets" in detail
    results["copeland"]["S 1"]["algorithms"]["ccb"].pop("late_early")
    assert _verdict(results, "Without a Condorcet winner, CCB")[1] == "not testable here"


def test_late_early_by_hand():
    # Checkpoints 1, 50, 100: early = R(50) / 50, late = (R(100) - R(50)) / 50 per run.
    stats = large_scale.late_early(np.array([1, 50, 100]), np.array([[0.0, 10, 11], [0.0, 10, 12]]))
    assert stats["early"] == pytest.approx(0.2) and stats["late"] == pytest.approx(0.03)
    # late - early / 2 = -0.08 and -0.06: mean -0.07, Student t: t(0.975; 1 df) * 0.01414 / sqrt(2)
    # = 12.7062 * 0.01 (t from tables).
    assert stats["excess"] == pytest.approx(-0.07) and stats["excess_ci95"] == pytest.approx(0.127062, rel=1e-5)
    linear = large_scale.late_early(np.array([1, 50, 100]), np.array([[0.0, 5, 10], [0.0, 6, 12]]))
    assert linear["excess"] == pytest.approx(0.055)  # a linear curve keeps its rate: late = early


def test_unknown_algorithm_fails_before_running(tmp_path, real_data):
    from experiments.common import registry

    with pytest.raises(ValueError, match="unknown bandit"):
        registry.launch("large_scale", tmp_path, ["copeland_algorithms=nope"])


@pytest.mark.parametrize("overrides, message", [
    # the Copeland stage used to fail after the Condorcet stage had run (and again on --resume)
    (["copeland_num_arms=200"], "copeland_num_arms = 200 exceeds the 136 rankers of MSLR-Perfect; pick at most 136."),
    (["params=scb.delta=0.5"], "bandit 'scb' has no setting 'delta'; hyperparameters: epsilon, first_epoch; options: none."),
    (["params=scb.first_epoch=1e10"], "first_epoch must be in [1, 64]; got 10000000000.0"),
    (["algorithms=merge_dts@fast"], "unknown row 'merge_dts@fast'; a row is a registered bandit"),
    (["params=nope.alpha=1"], "params set nope, which this run does not run; rows: rcs; Copeland algorithms: scb, rucb."),
    # a row's own setting over its preset: M = 16 does not fit 8 slots
    (["algorithms=merge_dts@tuned", "params=merge_dts@tuned.slots=8"], "partition_size must be in [2, 5.33"),
    (["long_num_steps=100", "long_algorithms=rucb"], "long_algorithms names 'rucb', which is not a row of this run"),
])
def test_bad_settings_fail_before_any_work(tmp_path, real_data, monkeypatch, overrides, message):
    from experiments.common import registry

    monkeypatch.setattr(bandits, "run_sweep", lambda *a, **k: pytest.fail("a sweep ran before the settings were checked"))
    args = ["num_arms=8", "num_runs=2", "num_steps=100", "algorithms=rcs", "copeland_algorithms=scb,rucb",
            "copeland_num_runs=2", "copeland_num_steps=100", *overrides]
    with pytest.raises(registry.ExperimentError, match=re.escape(message)):
        registry.launch("large_scale", tmp_path, args)
    assert not list((tmp_path / "large_scale").iterdir())  # no run directory left to --resume
