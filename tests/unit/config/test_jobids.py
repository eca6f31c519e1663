"""Job ids (#56): one per (interpreter, package) of a matrix -- two interpreter names whose ids
would be one ('ft 3.13t', 'ft/3.13t': the id replaces ' ' and '/') are refused as the matrix is
read, one line naming the file, the entry and the fix; a plan's ids are then all distinct."""

from __future__ import annotations

import itertools

import pytest

from harness.config import matrix, plan
from harness.core.errors import ConfigError
from harness.core.jobspec import id_part, job_id

SRC = 'version: "3.13.5", source: "debian:trixie"'


def _spec(interps: list[str], pkgs: list[str]) -> str:
    names = ", ".join(f"{{name: {n!r}, {SRC}}}" for n in interps)
    return f"interpreters: [{names}]\npackages: [{', '.join(f'{{name: {p!r}}}' for p in pkgs)}]\n"


@pytest.mark.parametrize(
    ("a", "b", "said"),
    [
        ("ft 3.13t", "ft/3.13t", "makes job ids 'ft_3.13t--<package>', as interpreters[0].name 'ft 3.13t' does:"),
        ("ft_3.13t", "ft:3.13t", "as interpreters[0].name 'ft_3.13t' does:"),
        ("ft", "_ft_", "as interpreters[0].name 'ft' does:"),
        ("ft", "FT", "as interpreters[0].name 'ft' does (up to case):"),
        ("!!", "x", "as interpreters[0].name '!!' does:"),
    ],
)
def test_interpreters_whose_job_ids_collide_are_refused(a, b, said):
    assert id_part(a).lower() == id_part(b).lower()
    with pytest.raises(ConfigError) as e:
        matrix.loads(_spec([a, b], ["six"]), file="m.yaml")
    assert (e.value.file, e.value.line) == ("m.yaml", 1)
    assert f"interpreters[1].name {b!r} " in str(e.value) and said in str(e.value)
    assert str(e.value).endswith("rename one (letters, digits, '.', '_', '-')")


def test_a_separator_in_an_interpreter_name_is_refused():
    """'a--b' on package 'c' and 'a' on package 'b--c' (a valid PEP 508 name) would be one job."""
    assert job_id("a--b", "c") == job_id("a", "b--c")
    with pytest.raises(ConfigError, match=r"interpreters\[0\]\.name 'a--b' holds '--'"):
        matrix.loads(_spec(["a--b", "a"], ["c", "b--c"]))
    with pytest.raises(ConfigError, match=r"interpreters\[0\]\.name 'a  --  b' holds '--'"):
        matrix.loads(_spec(["a  --  b"], ["six"]))


@pytest.mark.parametrize("name", [".ft", "-ft", "f" * 101])
def test_an_interpreter_name_that_is_no_file_name_is_refused(name):
    with pytest.raises(ConfigError, match="names its jobs' files"):
        matrix.loads(_spec([name], ["six"]))


def test_every_accepted_matrix_has_distinct_job_ids():
    names = ["ft", "ft 3.13t", "ft-3.13t", "ft.3.13t", "cpython3.14t", "a-", "a", "x_y", "3.13t"]
    pkgs = ["six", "b--c", "a-b-c", "c", "x"]
    for pair in itertools.combinations(names, 2):
        spec = matrix.loads(_spec(list(pair), pkgs))
        ids = [j.job_id for j in plan.make_plan(spec)]
        assert len(set(ids)) == len(ids) == 2 * len(pkgs), pair
