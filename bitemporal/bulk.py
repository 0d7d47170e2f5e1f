"""Deprecated alias (until 1.0) of :mod:`bitemporal.record_many` and
:mod:`bitemporal.importing` and :mod:`bitemporal.errors` and :mod:`bitemporal.cli_output`:
record_many, the file importer (importing), ImportFailed (errors) and the CLI's progress bar
and problem listing (cli_output).
"""

from . import cli_output as _cli_output
from . import errors as _errors
from . import importing as _importing
from . import record_many as _record_many
from ._deprecated import forward

__getattr__ = forward(__name__, _record_many, _importing, _errors, _cli_output)
