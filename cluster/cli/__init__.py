"""The ``pynamesrv`` command line (``main``) and the ``node`` subcommand."""
