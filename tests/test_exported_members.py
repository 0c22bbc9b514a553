"""The public surface of ``pm_notebook`` is a tested artefact: ``__all__`` lists exactly the public names."""

from __future__ import annotations
import __future__

import inspect

import pm_notebook


def test_all_lists_every_public_name_sorted() -> None:
    public = sorted(
        name
        for name in dir(pm_notebook)
        if (not name.startswith("_") or name == "__version__")
        and not inspect.ismodule(getattr(pm_notebook, name))
        and not isinstance(getattr(pm_notebook, name), __future__._Feature)  # `from __future__ import ...`
    )
    assert pm_notebook.__all__ == public
    assert pm_notebook.__all__ == sorted(pm_notebook.__all__)


def test_errors_show_the_public_path() -> None:
    for name in pm_notebook.__all__:
        obj = getattr(pm_notebook, name)
        if inspect.isclass(obj) and issubclass(obj, Exception):
            assert obj.__module__ == "pm_notebook", name


def test_every_error_is_exported_and_documented() -> None:
    from pm_notebook import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if inspect.isclass(obj):
            assert getattr(pm_notebook, name) is obj
            assert obj.__doc__ and obj.__doc__.strip(), name


def test_public_callables_have_docstrings() -> None:
    for name in pm_notebook.__all__:
        obj = getattr(pm_notebook, name)
        if callable(obj):
            assert inspect.getdoc(obj), name
    for name in (
        "projects",
        "project",
        "tables",
        "workgroup",
        "variants",
        "completed_cases",
        "graph",
        "graph_instance",
        "column_mapping",
        "mapping_infos",
        "column_names",
        "close",
    ):
        assert inspect.getdoc(getattr(pm_notebook.Connection, name)), name


def test_every_error_is_drawn_in_the_error_tree() -> None:
    from pm_notebook import errors

    tree = errors.__doc__ or ""
    for name in errors.__all__:
        obj = getattr(errors, name)
        if inspect.isclass(obj) and issubclass(obj, pm_notebook.PMError):
            assert f" {name} " in tree, name
    assert issubclass(pm_notebook.QueryTimeout, pm_notebook.QueryError)
    assert not issubclass(pm_notebook.QueryTimeout, pm_notebook.QueryCancelled)
