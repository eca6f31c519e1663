# The free-threaded interpreter image, built by harness/images.py through the docker SDK
# (classic builder, tar context).  FROM names the local base image made by
# bootstrap-base.sh + `docker import`, so no registry is needed.
#
# Context: this file as Dockerfile, source.tar (the same CPython tarball the local
# builder uses) and build.sh (the same configure/make/install commands and flags,
# rendered from harness.interpreters.build_commands).
ARG BASE
FROM ${BASE}

ARG BUILD_DEPS
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
# The same Debian build dependencies as the local builder (harness.interpreters.BUILD_DEPS);
# they stay in the image because packages' C extensions are compiled here too.
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends $BUILD_DEPS \
 && rm -rf /var/lib/apt/lists/*

COPY source.tar build.sh /tmp/ft-build/
RUN sh /tmp/ft-build/build.sh && rm -rf /tmp/ft-build

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
# (a named volume created from here inherits the owner), nothing else.
RUN useradd --uid 1000 --user-group --create-home --shell /bin/sh ft \
 && mkdir -p /work /cache/pip \
 && chown ft:ft /work /cache/pip
ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 1000:1000
WORKDIR /work
CMD ["/opt/python/bin/python3", "-c", "import sys; print(sys.version)"]
