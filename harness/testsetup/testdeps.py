"""Which inferred test dependencies the job installs (#30).

A requirement read from the sdist may be a direct URL reference (``name @ https://...``, a VCS
URL, a local path): installing it fetches whatever the sdist names, with the network, and would
paste it into the laptop recipe. Such a one is installed only when matrix.yaml lists it in the
package's ``test_requires``; the job's test setup says which were left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement


def url_references(reqs: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(requirements by name, direct URL references and anything else that is not a plain
    requirement) among inferred test dependencies, each in its order."""
    named: list[str] = []
    urls: list[str] = []
    for r in reqs:
        try:
            (urls if Requirement(r).url else named).append(r)
        except InvalidRequirement:
            urls.append(r)
    return tuple(named), tuple(urls)
