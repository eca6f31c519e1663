"""What pyproject.toml cannot say: every harness.* directory is a package (found, never listed),
and containers/ stays at the top of the repository, where people read and edit it, while the wheel
carries it as harness/containers (harness.interpreters.images finds it there through importlib.resources)."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["harness", "harness.*"], exclude=["*__pycache__"]),
              "harness.containers"],
    package_dir={"harness.containers": "containers"},
)
