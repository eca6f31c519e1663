"""Small pure helpers of the job runner."""

from __future__ import annotations

import pytest

from harness.job import pinned_version


@pytest.mark.parametrize(("spec", "version"), [
    ("==2.1.1", "2.1.1"), ("===1.0", "1.0"), ("==3.*", ""), (">=1,<2", ""), ("", ""), ("~=1.4", ""),
    ("not a spec", ""),
])
def test_pinned_version(spec, version):
    assert pinned_version(spec) == version
