"""The per-principle table of a Dots and Boxes league (issue #27): each registered snapshot's
Elo, its suite scores and its score on each strategy probe, read back from MLflow's version tags.

    python benchmarks/probe_table.py --tracking-uri URI [--model dots-and-boxes-3x3] [--league NAME]

Prints a Markdown table, one row per version of the model (of one league if named), by
generation, and marks the champion.
"""

from __future__ import annotations

import argparse

from mlflow.tracking import MlflowClient

from c4core.games.dots_and_boxes.probes import TAGS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracking-uri", required=True)
    parser.add_argument("--model", default="dots-and-boxes-3x3")
    parser.add_argument("--league")
    args = parser.parse_args()
    client = MlflowClient(args.tracking_uri)
    versions = client.search_model_versions(f"name = '{args.model}'")
    if args.league:
        versions = [v for v in versions if v.tags.get("league") == args.league]
    champion = client.get_model_version_by_alias(args.model, "champion").version
    columns = ["suite_keeps_value", "suite_keeps_outcome", *(f"probe_{t}" for t in TAGS)]
    print(
        "| snapshot | Elo | keeps value | keeps outcome | "
        + " | ".join(t.replace("_", " ") for t in TAGS)
        + " |"
    )
    print("| --- " * (2 + len(columns)) + "|")
    for v in sorted(versions, key=lambda v: int(v.version)):
        name = v.tags.get("member", v.version) + (" (champion)" if v.version == champion else "")
        cells = [v.tags.get(c, "") for c in columns]
        print(f"| {name} | {v.tags.get('elo', '')} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
