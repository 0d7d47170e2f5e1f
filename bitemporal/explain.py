"""Deprecated alias (until 1.0) of :mod:`bitemporal.answers` and :mod:`bitemporal.reply_check`:
the answer object (answers) and the reply checker (reply_check).
"""

from . import answers as _answers
from . import reply_check as _reply_check
from ._deprecated import forward

__getattr__ = forward(__name__, _answers, _reply_check)
