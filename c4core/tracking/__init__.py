"""MLflow as the league's system of record: runs, match records, the model registry, the champion.

Layout in MLflow (experiment ``connect4-league``)::

    league run  "<league>"              tags c4.kind=league, league, config_hash; params = config
    |                                   metrics elo/<member> and league/exploitability
    |                                   (step = generation); artifact
    |                                   champion_history.json (who held the title, and when);
    |                                   report/ (`log_report`, redrawn after every generation),
    |                                   tag c4.report
    +-- generation run  "<league>/gen3" tags c4.kind=generation, league, generation, role,
    |                                   member, config_hash (one run per role: "<league>/gen3-me")
    |                                   params = the whole LeagueConfig; metrics per iteration;
    |                                   artifacts checkpoint/gen3.pt and model/ (the pyfunc)
    +-- match run  "<league>/gen3-vs-tactical"
                                        tags c4.kind=match, a, b, c4.pair, c4.record (the JSON
                                        record); params games/seed; metrics win/draw/loss, splits

    registered model "connect4": one version per snapshot of every role, tagged league,
    generation, role, member, config_hash, elo, elo_ci95, win_vs_tactical (and
    suite_keeps_result, suite_best_move, suite_counted, suite_file when a suite is given);
    stage Production + alias ``champion`` on the league's best-rated main-agent snapshot, whose
    version also has the final report (tag ``report``, the report/ folder on its source run, a
    link in its description).

The modules, bottom up, one job each: `lease` (one writer per league, one title move at a
time), `store` (the league's runs and records: `MLflowStore`), `versions` (registered versions
and their model cards), `champion` (each league's champion and the registry-wide title, with
its gating matches), `scores` (suites, NashConv and the exploiter, per generation), `reports`
(the league report, read back and logged), `runs` (a league run with the registry's steps after
every generation) and `uris` (``models:/`` URIs as checkpoints).
"""
