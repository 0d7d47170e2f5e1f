"""Every suite refuses a count of nothing (``--rounds 0`` and the like) as a usage error,
before anything runs: with nothing timed there would be no median to report."""

from __future__ import annotations

import pytest

from benchmarks.__main__ import SUITES

CASES = [
    ("anatomy", "--writes"),
    ("anatomy", "--rounds"),
    ("facts", "--samples"),
    ("designs", "--keys"),
    ("revisions", "--rounds"),
    ("citus", "--samples"),
    ("tpcbih", "--lookups"),
    ("import", "--batch-size"),
    ("notify", "--rounds"),
    ("references", "--keys"),
]


@pytest.mark.parametrize(("suite", "option"), CASES)
@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_a_count_of_nothing_is_refused_before_anything_runs(
    suite: str, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        SUITES[suite]([option, value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    expected = "is not a whole number" if value == "two" else f"must be at least 1, not {value}"
    assert f"argument {option}: " in err and expected in err and "Traceback" not in err
