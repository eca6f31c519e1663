from setuptools import Extension, setup

setup(ext_modules=[Extension("linkfail._ext", ["src/ext.c"], libraries=["geos_c"])])
