from setuptools import setup
from setuptools_rust import Binding, RustExtension

setup(rust_extensions=[RustExtension("gitdep._rs", "rust/Cargo.toml", binding=Binding.NoBinding)])
