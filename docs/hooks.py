"""MkDocs hooks: pages made from files that live outside docs/, so that nothing is written twice.

- ``index.md`` is the README (the front page), its ``docs/`` links made site-relative;
- ``benchmarks.md`` is ``benchmarks/README.md`` (the figures and how to reproduce them),
  with its plots; links to the benchmark's other files become their paths in code;
- the error reference in ``errors.md`` is generated from ``bitemporal/errors.py``: every
  exception class, the SQLSTATEs :func:`bitemporal.errors.error_for` maps to it (found by
  asking it), its base classes and its docstring.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import psycopg
from mkdocs.structure.files import File, Files

import bitemporal  # noqa: F401 - every exception class, those outside errors.py included
from bitemporal.errors import BitemporalError, DatabaseError, error_for

ROOT = Path(__file__).resolve().parents[1]


def _front_page(text: str) -> str:
    text = text.replace("[`docs/`](docs/)", "`docs/`")
    text = text.replace("](docs/", "](")
    return text.replace("(benchmarks/README.md)", "(benchmarks.md)")


def _benchmarks_page(text: str) -> str:
    def link(match: re.Match[str]) -> str:
        bang, label, target = match.group(1), match.group(2), match.group(3)
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            return match.group(0)
        if bang:  # a plot: published next to the page
            return f"![{label}](benchmarks/{target})"
        return (
            f"{label} (`benchmarks/{target}`)"
            if label.strip("`") != target
            else f"`benchmarks/{target}`"
        )

    return re.sub(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)", link, text)


def on_files(files: Files, config: Any) -> Files:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "index.md", content=_front_page(readme)))
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    files.append(File.generated(config, "benchmarks.md", content=_benchmarks_page(bench)))
    for plot in sorted((ROOT / "benchmarks").glob("*.png")):
        files.append(File.generated(config, f"benchmarks/{plot.name}", abs_src_path=str(plot)))
    return files


# -- the error reference, generated from bitemporal/errors.py ---------------------------------

#: Where docs/errors.md wants the generated reference.
ERROR_REFERENCE = "<!-- generated: error reference -->"


def error_classes() -> list[type[BitemporalError]]:
    """Every exception class of the package, depth first from :class:`BitemporalError`."""

    def walk(cls: type[BitemporalError]) -> list[type[BitemporalError]]:
        return [cls, *(c for sub in cls.__subclasses__() for c in walk(sub))]

    return list(dict.fromkeys(walk(BitemporalError)))


def _probe(sqlstate: str) -> psycopg.Error:
    """A driver error of that SQLSTATE, as the server would report it (no context)."""
    probe: type[psycopg.Error] = type("Probe", (psycopg.DatabaseError,), {"sqlstate": sqlstate})
    return probe(f"probe {sqlstate}")


def sqlstates() -> dict[type[BitemporalError], list[str]]:
    """What :func:`bitemporal.errors.error_for` makes of every SQLSTATE psycopg knows and
    every one an error class declares (and of the driver's own errors, "none"), by class."""
    known: set[str] = {
        o.sqlstate
        for o in vars(psycopg.errors).values()
        if isinstance(o, type) and issubclass(o, psycopg.Error) and o.sqlstate
    }
    declared = {c.sqlstate for c in error_classes() if c.sqlstate is not None}
    found: dict[type[BitemporalError], list[str]] = {}
    for code in sorted(known | declared):
        found.setdefault(type(error_for(_probe(code))), []).append(code)
    for driver_error in (psycopg.OperationalError, psycopg.DataError, psycopg.InterfaceError):
        found.setdefault(type(error_for(driver_error("probe"))), []).append("none")
    # A class of SQLSTATEs that all map to one exception is shown as the class.
    shown: dict[type[BitemporalError], list[str]] = {}
    for cls, codes in found.items():
        if cls is DatabaseError:
            shown[cls] = ["any other", *(["none"] if "none" in codes else [])]
            continue
        prefixes = {c[:2] for c in codes if c != "none"}
        out: list[str] = []
        for prefix in sorted(prefixes):
            members = [c for c in codes if c[:2] == prefix]
            whole = {c for c in known if c[:2] == prefix}
            if prefix != "BT" and len(whole) > 1 and whole <= set(members):
                out.append(f"class {prefix}")
            else:
                out += [f"`{c}`" for c in members]
        shown[cls] = out + (["none"] if "none" in codes else [])
    return shown


def _markdown(docstring: str) -> str:
    text = " ".join(docstring.split())
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?(\w+)`", r"`\1`", text)
    return text.replace("``", "`").replace("|", "\\|")


def error_reference() -> str:
    codes = sqlstates()
    rows = [
        "| exception | SQLSTATE | is a | raised when |",
        "|---|---|---|---|",
    ]
    for cls in error_classes():
        bases = ", ".join(f"`{b.__name__}`" for b in cls.__bases__)
        where = "" if cls.__module__ == "bitemporal.errors" else f" (`{cls.__module__}`)"
        sqlstate = ", ".join(codes.get(cls, [])) or "-"
        doc = _markdown(inspect.getdoc(cls) or "")
        rows.append(f"| `{cls.__name__}`{where} | {sqlstate} | {bases} | {doc} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if ERROR_REFERENCE in markdown:
        return markdown.replace(ERROR_REFERENCE, error_reference())
    return markdown
