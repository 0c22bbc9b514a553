"""The transports every SQL test runs on; the JVM one is marked so ``-m "not jdbc"`` leaves it out."""

import pytest

TRANSPORTS = ["druid", "avatica", pytest.param("jdbc", marks=pytest.mark.jdbc)]
