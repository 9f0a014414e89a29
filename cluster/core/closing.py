"""A resource that closes: ``with`` closes it on the way out."""

from __future__ import annotations

from typing import Self


class Closing:
    """Mixin: subclasses define ``close``; ``with obj:`` returns ``obj`` and closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
