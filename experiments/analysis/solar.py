"""The SOLAR paper's numbers (Wang et al., ACL 2015, Tables 2 and 3) and labels shared by the
analyses of ``solar_online``, ``solar_batch`` and ``solar_scalability`` (each in its own module)."""

LABELS = {"prank_pointwise": "Prank (pointwise)", "prank_pairwise": "Prank (pairwise)", "committee_perceptron": "Com-P",
          "solar_first_order": "SOLAR-I", "solar_second_order": "SOLAR-II", "ranksvm": "RankSVM (primal, ours)"}

# Table 2: online cumulative NDCG@1/5/10, mean of 10 permutations.
_T2_ALGOS = ("prank_pointwise", "prank_pairwise", "committee_perceptron", "solar_first_order", "solar_second_order")
_T2 = {
    "OHSUMED": (".2689 .2253 .2221", ".4456 .3953 .3904", ".4327 .3993 .3934", ".5060 .4479 .4337", ".5352 .4635 .4461"),
    "MQ2007": (".2439 .2748 .3039", ".2777 .3010 .3294", ".3640 .3828 .4135", ".3760 .3973 .4271", ".3897 .4095 .4383"),
    "MQ2008": (".2369 .3352 .4036", ".2834 .3823 .4403", ".3378 .4415 .4885", ".3490 .4584 .5022", ".3594 .4680 .5107"),
    "HP2003": (".0033 .0047 .0050", ".5267 .6491 .6745", ".6487 .7744 .7884", ".6993 .7796 .7917", ".7020 .7959 .8079"),
    "HP2004": (".0053 .0083 .0088", ".5107 .6438 .6717", ".5640 .7163 .7392", ".5347 .7072 .7335", ".5413 .7146 .7419"),
    "NP2003": (".0033 .0051 .0075", ".4033 .5926 .6255", ".5227 .7146 .7417", ".5527 .7486 .7792", ".5693 .7621 .7895"),
    "NP2004": (".0080 .0100 .0100", ".4213 .6039 .6290", ".4867 .6989 .7226", ".5613 .7649 .7869", ".5627 .7667 .7858"),
    "TD2003": (".0040 .0063 .0056", ".1920 .1707 .1737", ".3300 .2717 .2635", ".2160 .2968 .2916", ".2960 .3251 .3245"),
    "TD2004": (".0040 .0018 .0025", ".2773 .2235 .2071", ".3427 .2988 .2794", ".2533 .2750 .2625", ".2893 .2874 .2806"),
}
# Table 3: batch test NDCG@1/5/10, 5-fold average. RankSVM comes from the LETOR website (LETOR
# eval-script conventions), the SOLAR rows from the paper's own evaluation (§5.3.1 and its footnote 2).
T3 = {
    "OHSUMED": {"ranksvm": ".4958 .4164 .4140", "solar_first_order": ".5111 .4668 .4497", "solar_second_order": ".5397 .4690 .4490"},
    "MQ2007": {"ranksvm": ".4096 .4142 .4438", "solar_first_order": ".3886 .4101 .4361", "solar_second_order": ".4104 .4149 .4435"},
    "MQ2008": {"ranksvm": ".3626 .4695 .2279", "solar_first_order": ".3677 .4634 .5086", "solar_second_order": ".3720 .4771 .5171"},
    "HP2003": {"ranksvm": ".6933 .7954 .8077", "solar_first_order": ".7067 .8036 .8056", "solar_second_order": ".7000 .8068 .8137"},
    "HP2004": {"ranksvm": ".5733 .7512 .7687", "solar_first_order": ".5467 .7325 .7544", "solar_second_order": ".5733 .7394 .7640"},
    "NP2003": {"ranksvm": ".5800 .7823 .8003", "solar_first_order": ".5800 .7664 .7935", "solar_second_order": ".5667 .7691 .7917"},
    "NP2004": {"ranksvm": ".5067 .7957 .8062", "solar_first_order": ".5733 .7814 .7976", "solar_second_order": ".5733 .7830 .8013"},
    "TD2003": {"ranksvm": ".3200 .3621 .3461", "solar_first_order": ".2600 .3060 .3071", "solar_second_order": ".3000 .3652 .3462"},
    "TD2004": {"ranksvm": ".4133 .3240 .3078", "solar_first_order": ".3600 .3119 .3049", "solar_second_order": ".3333 .3167 .3056"},
}


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split()]


def paper_table2(dataset: str) -> dict:
    """``{algorithm: [N@1, N@5, N@10]}`` of Table 2 for ``dataset`` (empty if the paper has no row)."""
    row = _T2.get(dataset.upper(), ())
    return {a: _floats(v) for a, v in zip(_T2_ALGOS, row)}


def paper_table3(dataset: str) -> dict:
    return {a: _floats(v) for a, v in T3.get(dataset.upper(), {}).items()}


def cells(values, digits=4):
    return " | ".join(f"{v:.{digits}f}" for v in values)
