"""``python -m bitemporal``: the same as the ``bitemporal`` command."""

import sys

from .cli import main

sys.exit(main())
