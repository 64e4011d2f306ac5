"""How players are measured, for any game of the interface: seeded matches with both seats equal
(`match`), the joint Bradley-Terry fit of every record (`elo`), every position of a small game
(`positions`), and exact NashConv over those positions (`exploitability`)."""
