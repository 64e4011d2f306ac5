"""The learners and what they train: the policy-value network and checkpoints (`net`), tables of
every position (`tabular`), the batched search (`search`), data-parallel ranks (`ranks`), PPO
(`ppo`), the AlphaZero-style learner (`alphazero`), and the interface the league trains them
through, with every learner by name (`plugins`)."""
