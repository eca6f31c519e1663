# The image an installed interpreter (``source: python:PATH``) runs in on the docker backend,
# built by harness/dockerpython.py through the docker SDK (classic builder, tar context).
# The interpreter is not in it: its prefix is mounted read-only at /opt/ft-installed per job.
#
# The first lines are interpreter.Dockerfile's, word for word, so the classic builder reuses
# the layer with the build dependencies that an interpreter image of the same base made.
ARG BASE
FROM ${BASE}

ARG BUILD_DEPS
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
# The same Debian build dependencies as the local builder (harness.interpreters.BUILD_DEPS);
# they stay in the image because packages' C extensions are compiled here too.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends $BUILD_DEPS \
 && rm -rf /var/lib/apt/lists/*

# Commands suites call (harness.interpreters.TEST_TOOLS): ps, git, gpg, gpgsm, ssh-keygen.
ARG TEST_TOOLS
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends $TEST_TOOLS \
 && rm -rf /var/lib/apt/lists/*

# What packages' own builds need, as a CI runner has it (harness.interpreters.images.PACKAGE_BUILD_DEPS):
# gfortran, Debian's rustc/cargo, cmake, ninja, and the -dev libraries of the top compiled projects.
# A layer of its own after the others, so a change of the list rebuilds only this layer.
ARG PACKAGE_BUILD_DEPS
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends $PACKAGE_BUILD_DEPS \
 && rm -rf /var/lib/apt/lists/*

# The per-job runtime: a non-root user, a writable work dir, a pip cache mount point
# (a named volume created from here inherits the owner), the interpreter's mount point.
RUN useradd --uid 1000 --user-group --create-home --shell /bin/sh ft \
 && mkdir -p /work /cache/pip /opt/ft-installed \
 && chown ft:ft /work /cache/pip
ENV PATH=/opt/ft-installed/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 1000:1000
WORKDIR /work
CMD ["/opt/ft-installed/bin/python3", "-c", "import sys; print(sys.version)"]
