import urllib.request

from setuptools import setup

# what a vendoring build does: fetch the library's release tarball before compiling it
urllib.request.urlretrieve("https://github.com/google/snappy/archive/refs/tags/1.2.1.tar.gz", "snappy.tar.gz")
setup()
