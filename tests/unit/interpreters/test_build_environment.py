"""The build environment's package list (issue #43): one list in the code, the same in the docs
and in both images, and every Debian package the build-failure classifier names for the gaps
the published slices showed is on it."""

from __future__ import annotations

import re
from pathlib import Path

from harness.interpreters import images
from harness.interpreters.images import PACKAGE_BUILD_DEPS

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "howto" / "build-environment.md"


def test_the_docs_list_is_the_codes_list():
    text = PAGE.read_text()
    block = text.split("<!-- PACKAGE_BUILD_DEPS: the test reads the block below -->\n```\n", 1)[1]
    assert block.split("\n```", 1)[0].split() == list(PACKAGE_BUILD_DEPS)
    install = text.split("sudo apt-get install --no-install-recommends build-essential", 1)[1].split("```", 1)[0]
    assert install.replace("\\", " ").split() == list(PACKAGE_BUILD_DEPS)


def test_both_images_install_the_list_in_a_layer_after_the_others():
    for dockerfile in ("interpreter.Dockerfile", "runtime.Dockerfile"):
        text = (ROOT / "containers" / dockerfile).read_text()
        assert "ARG PACKAGE_BUILD_DEPS" in text and "$PACKAGE_BUILD_DEPS" in text
        assert text.index("$PACKAGE_BUILD_DEPS") > text.index("$TEST_TOOLS") > text.index("$BUILD_DEPS")
    assert images.build_args("b")["PACKAGE_BUILD_DEPS"] == " ".join(PACKAGE_BUILD_DEPS)


def test_a_changed_list_is_a_new_image_tag(monkeypatch):
    from harness.interpreters import dockerpython

    before = (images.interpreter_tag("k"), dockerpython.runtime_tag("b"))
    monkeypatch.setattr(images, "PACKAGE_BUILD_DEPS", (*PACKAGE_BUILD_DEPS, "libhdf5-dev"))
    monkeypatch.setattr(dockerpython, "PACKAGE_BUILD_DEPS", images.PACKAGE_BUILD_DEPS)
    after = (images.interpreter_tag("k"), dockerpython.runtime_tag("b"))
    assert before[0] != after[0] and before[1] != after[1]


def test_the_list_has_the_compilers_the_rust_toolchain_and_the_libraries_of_the_issue():
    need = {
        "gfortran",
        "rustc",
        "cargo",
        "cmake",
        "ninja-build",
        "pkg-config",
        "libyaml-dev",
        "libjpeg-dev",
        "libpng-dev",
        "zlib1g-dev",
        "libtiff-dev",
        "libwebp-dev",
        "libfreetype-dev",
        "liblcms2-dev",
        "libopenjp2-7-dev",
        "libxml2-dev",
        "libxslt1-dev",
        "libopenblas-dev",
        "libgeos-dev",
        "libsodium-dev",
        "libpq-dev",
        "libzstd-dev",
        "liblz4-dev",
        "libsnappy-dev",
        "libbrotli-dev",
        "libffi-dev",
        "libssl-dev",
    }
    assert need <= set(PACKAGE_BUILD_DEPS)
    assert len(set(PACKAGE_BUILD_DEPS)) == len(PACKAGE_BUILD_DEPS)
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", p) for p in PACKAGE_BUILD_DEPS)
