from setuptools import Extension, setup

setup(ext_modules=[Extension("badbuild._ext", ["src/ext.c"])])
