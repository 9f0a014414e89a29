"""``python -m worker.controller``: one node (its controller, I/O and business workers)."""

import sys

from worker import compiled

# before the node is imported: its hottest modules then load compiled (worker.compiled)
compiled.install()

from worker.controller.controller import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
