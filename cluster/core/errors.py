"""Errors shown to a person at the command line: one line, no traceback."""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix (bad config, missing file, busy port)."""

    exit_code = 2


class ConfigError(UserError):
    """A configuration file or option is invalid. ``str()`` names the file and key."""
