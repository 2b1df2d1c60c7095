"""A module logger that imports :mod:`logging` only when it first logs.

``logging`` pulls in ``traceback``, ``threading``, ``string`` and more: a
tenth of what ``ssa hook`` may cost when nothing is pending. The modules of
that cold path (and the package ``__init__`` files, for their
``NullHandler``) use :func:`get_logger` instead of ``logging.getLogger``;
everything else in the library logs as usual.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["LazyLogger", "get_logger", "lazy_export", "quiet_package"]


def quiet_package(name: str) -> None:
    """Give the package logger ``name`` its ``NullHandler`` (once; imports logging).

    A library adds one so that, in a program that configured no logging,
    its warnings do not reach stderr through ``logging.lastResort``. Any
    thread; idempotent.
    """
    import logging  # noqa: PLC0415 - the point of this module

    logger = logging.getLogger(name)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


class LazyLogger:
    """Stands for ``logging.getLogger(name)``; the real logger is made at the first call.

    Supports ``debug``, ``info``, ``warning``, ``error``, ``exception``,
    ``log`` and ``isEnabledFor`` with ``logging.Logger``'s signatures. Any
    thread.
    """

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def _real(self) -> Any:
        if self._logger is None:
            import logging  # noqa: PLC0415 - the point of this module

            quiet_package(self._name.split(".", 1)[0])
            self._logger = logging.getLogger(self._name)
        return self._logger

    def debug(self, msg: object, *args: object, **kwargs: Any) -> None:
        """``Logger.debug``."""
        self._real().debug(msg, *args, stacklevel=2, **kwargs)

    def info(self, msg: object, *args: object, **kwargs: Any) -> None:
        """``Logger.info``."""
        self._real().info(msg, *args, stacklevel=2, **kwargs)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        """``Logger.warning``."""
        self._real().warning(msg, *args, stacklevel=2, **kwargs)

    def error(self, msg: object, *args: object, **kwargs: Any) -> None:
        """``Logger.error``."""
        self._real().error(msg, *args, stacklevel=2, **kwargs)

    def exception(self, msg: object, *args: object, **kwargs: Any) -> None:
        """``Logger.exception``."""
        self._real().exception(msg, *args, stacklevel=2, **kwargs)

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        """``Logger.log``."""
        self._real().log(level, msg, *args, stacklevel=2, **kwargs)

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - logging's name
        """``Logger.isEnabledFor``."""
        return bool(self._real().isEnabledFor(level))


def get_logger(name: str) -> LazyLogger:
    """The lazy logger of module ``name`` (pass ``__name__``). Pure; any thread."""
    return LazyLogger(name)




def lazy_export(package: str, exports: dict[str, str], namespace: dict[str, Any],
                name: str) -> Any:
    """A package's PEP 562 ``__getattr__``: import ``name`` from its module on first use.

    Args:
        package: the package's ``__name__``.
        exports: ``{public name: module that defines it}``.
        namespace: the package's ``globals()`` (the value is cached there).
        name: the attribute asked for.

    Returns:
        The attribute's value (also the library's ``NullHandler`` is added:
        logging is about to be in use).

    Raises:
        AttributeError: ``name`` is not one of ``exports``.

    Any thread; blocks on the import.
    """
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    quiet_package(package)
    import importlib  # noqa: PLC0415 - cheap; only on a first use

    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
