"""What the registered experiments share: the registry and launcher (``registry``), per-algorithm
settings (``params``), data sources (``letor_datasets``, ``matrices``) and dueling-bandit runs
summarised over matrices (``duel_runs``). No module here registers an experiment."""
