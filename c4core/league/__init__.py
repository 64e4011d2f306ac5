"""The league: its members and roles, matchmaking, the learner processes, and the generation step.

Members are the two scripted bots plus one frozen snapshot per generation and role (``gen1``,
``gen2``, ... for the main agent; ``gen2-me`` and ``gen2-le`` for its exploiters). A generation
trains every role's learner at once, each in a process of its own (`processes.train_learners`);
which learner trains a role is the config's to say, and `c4core.learners.plugins` holds them all:

- the **main agent**, continuing from its previous snapshot: PPO against the bots, three
  snapshots and itself (the highest-rated, or drawn by prioritized fictitious self-play,
  `matchmaking.pfsp_weights`), or, from generation `alphazero_from` on, the AlphaZero-style learner against
  itself with search, a `league_share` of its games against members drawn by PFSP; or a tabular
  learner (`main_learner`) by self-play;
- the **main exploiter** (AlphaStar's), by PPO against the current champion only. It starts
  from `exploiter_base` and starts again once it beats the champion it trained on in
  `exploiter_reset_score` of its games, or after `exploiter_reset_generations` generations
  (`members.main_exploiter_start`);
- the **league exploiter**, by PPO against the whole league drawn by PFSP.

Every new snapshot then plays every member and every other new snapshot, and one joint Elo fit
over all recorded results rates everyone, whichever learner made it. The champion is the
best-rated main-agent snapshot: an exploiter is a teacher and a probe, never the champion.
How much the main exploiter beats the champion it trained on is the champion's
`members.exploitability`.

A learner can also train data-parallel on several processes (`PPOConfig.ranks`,
`AlphaZeroConfig.ranks`; `c4core.learners.ranks`), which puts both cores on one learner where the roles
would leave one idle.

The league's state lives behind `store.LeagueStore`, so the same steps run on a local folder (here)
or on MLflow (`c4core.tracking.store.MLflowStore`), and every step is idempotent: a snapshot or match that the
store already holds is reused, never redone, which is what makes a killed league resumable. The
config and the profiles live in `c4core.config`.

The modules, bottom up: `store` (where a league is kept), `seeds` (its random streams),
`members` (who is in it and what the records say), `matchmaking` (whom each learner trains
against), `processes` (the learner processes and ranks) and `generation` (one generation, and
the league run, that the CLI and the DAG's steps call).
"""
