"""``python -m benchmarks SUITE [options]``: run one benchmark; ``SUITE --help`` lists its
options."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from . import (
    anatomy,
    citus,
    decay,
    designs,
    facts,
    importing,
    load,
    notify,
    references,
    revisions,
    storage,
    tpcbih,
)

SUITES: dict[str, Callable[[list[str]], int]] = {
    "facts": facts.main,
    "decay": decay.main,
    "load": load.main,
    "import": importing.main,
    "tpcbih": tpcbih.main,
    "citus": citus.main,
    "storage": storage.main,
    "designs": designs.main,
    "notify": notify.main,
    "references": references.main,
    "revisions": revisions.main,
    "integer-key": revisions.integer_key,
    "anatomy": anatomy.main,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run one of the project's benchmarks from a checkout.",
    )
    parser.add_argument("suite", choices=SUITES)
    parser.add_argument("options", nargs=argparse.REMAINDER, help="the suite's own options")
    args = parser.parse_args(argv)
    return SUITES[args.suite](args.options)


if __name__ == "__main__":
    sys.exit(main())
