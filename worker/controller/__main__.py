"""``python -m worker.controller``: one node (its controller, I/O and business workers)."""

import sys

from worker.controller.controller import main

if __name__ == "__main__":
    sys.exit(main())
