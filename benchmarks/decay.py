"""Working-memory benchmark: decay vs sliding window, PostgreSQL vs in-memory engine.

    python benchmarks/decay.py [--quick] [--sizes 10000,100000,1000000] [--tables-only]

The same as ``bitemporal bench decay``; see bitemporal/bench/decay.py.
"""

import sys

from bitemporal.bench.decay import main

if __name__ == "__main__":
    sys.exit(main())
