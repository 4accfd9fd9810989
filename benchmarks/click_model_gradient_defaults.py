"""The gradient fit's defaults against log size: test log-likelihood of EM and of gradient settings on
logs generated from MQ2008, the figures in ``jaxrank/click_models/gradient.py``'s docstring.

    python benchmarks/click_model_gradient_defaults.py [--sessions 4000 46667] [--models gctr pbm ubm dbn]
                                                       [--simulator informational] [--json PATH]

Each log is the ``click_models`` experiment's simulation (every MQ2008 query, the production ranker of
seed 0 shown by a Plackett–Luce draw at temperature 1, top 10 positions, clicked by ``--simulator``);
its first three quarters train, the rest test. Per model: EM with PyClick's settings (50 iterations,
pseudo-counts (1, 2)) and with none (the MLE), then each gradient setting below (key 0); the table
gives the test log-likelihood per session (PyClick's; ``--json`` writes null for -inf), the epoch
the fit returns and the wall seconds (compile included). Needs ``JAXRANK_DATA`` (MQ2008).
"""

import argparse
import json
import math
import sys
import time
from pathlib import Path

import jax

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from experiments import click_models as experiment  # noqa: E402
from jaxrank.click_models import CLICK_MODELS, fit_em, fit_gradient, metrics  # noqa: E402

SETTINGS = {
    "defaults": {},
    "defaults, validation=0.1": {"validation": 0.1},
    "defaults, prior=None": {"prior": None},
    "lr 0.01, batch 4096, prior=None (CLAX's Yandex)": {"learning_rate": 0.01, "batch_size": 4096, "prior": None},
    "lr 0.05, batch 1024, prior=None": {"batch_size": 1024, "prior": None},
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[4000, 46667], help="sessions a log (train + test)")
    parser.add_argument("--models", nargs="+", default=["gctr", "pbm", "ubm", "dbn"])
    parser.add_argument("--simulator", default="informational", choices=experiment.SIMULATORS)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    _, _, queries = experiment.load_queries(experiment.Config())
    grades = experiment.num_grades(queries)
    rows = []
    for sessions in args.sessions:
        config = experiment.Config(num_sessions=sessions, num_positions=10)
        train, test = experiment.simulate(config, queries, args.simulator, 0, grades)
        print(f"\n{args.simulator} log: {train.pair.shape[0]:,} training, {test.pair.shape[0]:,} test sessions\n")
        print("| model | fit | test LL | epoch | s |\n|---|---|---|---|---|")
        for name in args.models:
            model = CLICK_MODELS.build(name)
            fits = {}
            for label, prior in (("EM, prior (1, 2)", (1.0, 2.0)), ("EM, no prior", (0.0, 0.0))):
                start = time.perf_counter()
                fits[label] = (jax.block_until_ready(fit_em(train, model, prior=prior)), 50,
                               time.perf_counter() - start)
            for label, options in SETTINGS.items():
                start = time.perf_counter()
                params, infos = fit_gradient(jax.random.key(0), train, model, return_info=True, **options)
                fits[label] = (jax.block_until_ready(params), int(infos.best_epoch[-1]), time.perf_counter() - start)
            for label, (params, epoch, seconds) in fits.items():
                value = float(metrics.log_likelihood(model, params, test))
                rows.append({"train_sessions": int(train.pair.shape[0]), "model": name, "fit": label,
                             "test_log_likelihood": value if math.isfinite(value) else None, "epoch": epoch,
                             "seconds": round(seconds, 1)})
                print(f"| {name} | {label} | {value:.5f} | {epoch} | {seconds:.1f} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
