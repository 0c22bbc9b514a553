"""The one check of each kind of argument the client shares: a positive count, a project named by the user.

Every module that takes such an argument (the connection, the REST client, the process-mining answers, the
magics) calls these, so the same input is refused alike everywhere, with the same words.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from ._models import Project
from .errors import ConfigurationError, NotFound

__all__ = ["find_project", "positive_int"]


def positive_int(value: Any, name: str) -> int:
    """*value* as an ``int`` when it is a positive integer (NumPy's included, a bool never).

    >>> positive_int(3, "top")
    3

    :raises ConfigurationError: anything else, naming the argument *name*.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def find_project(projects: Iterable[Project], wanted: str) -> Project:
    """The project whose id is *wanted*, else whose name is, else whose name is, ignoring case.

    A name two projects share at the first level that matches is ambiguous, and refused: picking one of
    them would answer from the wrong project without a word.

    >>> find_project([Project("p-1", "Sales"), Project("p-2", "HR")], "hr").id
    'p-2'

    :raises NotFound: no project has that id or name (the hint lists the ones there are).
    :raises ConfigurationError: several projects have that name (the hint lists them with their ids).
    """
    listed = list(projects)
    for project in listed:
        if project.id == wanted:
            return project
    exact = [p for p in listed if p.name == wanted]
    matches = exact or [p for p in listed if (p.name or "").casefold() == wanted.strip().casefold()]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        known = ", ".join(f"{p.name!r} ({p.id})" for p in listed) or "none"
        raise NotFound(
            f"No project named or with id {wanted!r} in this workgroup.",
            hint=f"Projects you can see: {known}.",
        )
    candidates = ", ".join(f"{p.name!r} ({p.id})" for p in matches)
    raise ConfigurationError(
        f"{len(matches)} projects are named {wanted!r}.", hint=f"Use the project id instead: {candidates}."
    )
