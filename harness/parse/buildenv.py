"""What a failed build lacked from its machine: a header, a library, a toolchain, a reachable
host, or memory.

``pip install`` of an sdist fails for two different reasons that look alike in its log: the
package does not build for the free-threaded interpreter (cffi refusing 3.13t, ``#error`` under
``Py_GIL_DISABLED``: the package's ``build-failure``), or the machine that built it lacked
something a CI runner has (libjpeg's headers, a Fortran compiler, cargo, a reachable crates.io).
``missing_piece`` reads the second kind from the log, pure, and names what was missing and the
Debian package that provides it (the names of harness.interpreters.images.PACKAGE_BUILD_DEPS).

Conservative by construction: a header or library counts only when it is one of a known system
library's (``HEADERS``/``LIBRARIES``, not the package's own ``foo.h``), and not when the log also
has another compiler error, which is then the package's (``harness.parse.install``).
Every pattern here is checked on a captured build log under tests/data/buildenv/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .install import COMPILER_RE

KINDS = ("header", "library", "toolchain", "registry", "memory", "disk")


@dataclass(frozen=True, kw_only=True)
class Missing:
    """One piece of the build machine a build needed and did not find."""

    kind: str  # one of KINDS
    what: str  # "jpeglib.h", "-lgeos_c", "cargo", "crates.io"
    group: str  # what a reader acts on, shared across packages: "Rust toolchain", "libjpeg"
    debian: str = ""  # the Debian package(s) that provide it, space-separated ("" for a host)
    line: str = ""  # the log line it was read from

    @property
    def cause(self) -> str:
        """The group as "Blocked by" shows it: "Rust toolchain (Debian: rustc cargo)"."""
        if self.kind == "memory":
            return f"{self.group} (the limit memory_bytes): a compiler was killed"
        if self.kind == "disk":
            return f"{self.group}: the build's writes were refused"
        if self.kind == "registry":
            return f"{self.group}: not reachable from the build"
        return f"{self.group} (Debian: {self.debian})" if self.debian else self.group

    @property
    def message(self) -> str:
        """The finding's message: what was missing, where it comes from, never the package's fault."""
        if self.kind == "memory":
            return (
                "build environment: a compiler process was killed for want of memory, the build past the "
                "limit memory_bytes (FT_HARNESS_LIMIT_MEMORY_BYTES raises it; not a problem of the "
                f"package): {self.line}"
            )
        if self.kind == "disk":
            return (
                "build environment: the build ran out of disk space where it wrote its temporary "
                f"files (not a problem of the package): {self.line}"
            )
        if self.kind == "registry":
            return (
                f"build environment: the build needs {self.group}, which was not reachable "
                f"from the build machine (not a problem of the package): {self.line}"
            )
        noun = {"header": "the header", "library": "the library", "toolchain": "the toolchain"}[self.kind]
        where = f"; Debian package: {self.debian}" if self.debian else ""
        return (
            f"build environment: {noun} {self.what} ({self.group}) is missing on the build "
            f"machine{where} (not a problem of the package): {self.line}"
        )


# a system library: its label, the Debian -dev package, its headers' names (or directory), its
# -l names, its pkg-config / meson / Pillow names
_LIBS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    ("libyaml", "libyaml-dev", ("yaml.h",), ("yaml",), ("yaml-0.1", "yaml")),
    ("libjpeg", "libjpeg-dev", ("jpeglib.h", "jconfig.h", "jerror.h"), ("jpeg",), ("libjpeg", "jpeg")),
    ("libpng", "libpng-dev", ("png.h",), ("png", "png16"), ("libpng", "libpng16", "png")),
    ("zlib", "zlib1g-dev", ("zlib.h",), ("z",), ("zlib",)),
    ("libtiff", "libtiff-dev", ("tiff.h", "tiffio.h"), ("tiff",), ("libtiff-4", "libtiff", "tiff")),
    (
        "libwebp",
        "libwebp-dev",
        ("webp/",),
        ("webp", "webpmux", "webpdemux", "sharpyuv"),
        ("libwebp", "webp", "libwebpmux", "libwebpdemux"),
    ),
    ("FreeType", "libfreetype-dev", ("ft2build.h", "freetype/"), ("freetype",), ("freetype2", "freetype")),
    ("Little CMS 2", "liblcms2-dev", ("lcms2.h",), ("lcms2",), ("lcms2", "littlecms")),
    ("OpenJPEG", "libopenjp2-7-dev", ("openjpeg.h",), ("openjp2",), ("libopenjp2", "jpeg2000")),
    ("libxml2", "libxml2-dev", ("libxml/",), ("xml2",), ("libxml-2.0", "libxml2")),
    ("libxslt", "libxslt1-dev", ("libxslt/", "libexslt/"), ("xslt", "exslt"), ("libxslt", "libexslt")),
    (
        "BLAS/LAPACK (OpenBLAS)",
        "libopenblas-dev liblapack-dev",
        ("cblas.h", "lapacke.h", "f77blas.h"),
        ("openblas", "blas", "cblas", "lapack"),
        ("openblas", "blas", "cblas", "lapack", "scipy-openblas"),
    ),
    ("GEOS", "libgeos-dev", ("geos_c.h",), ("geos_c", "geos"), ("geos",)),
    ("libsodium", "libsodium-dev", ("sodium.h",), ("sodium",), ("libsodium",)),
    ("libpq", "libpq-dev", ("libpq-fe.h", "pg_config.h"), ("pq",), ("libpq",)),
    ("zstd", "libzstd-dev", ("zstd.h", "zdict.h"), ("zstd",), ("libzstd",)),
    ("LZ4", "liblz4-dev", ("lz4.h", "lz4frame.h", "lz4hc.h"), ("lz4",), ("liblz4",)),
    ("Snappy", "libsnappy-dev", ("snappy-c.h", "snappy.h"), ("snappy",), ("snappy",)),
    (
        "Brotli",
        "libbrotli-dev",
        ("brotli/",),
        ("brotlienc", "brotlidec", "brotlicommon"),
        ("libbrotlienc", "libbrotlidec", "libbrotlicommon"),
    ),
    ("libffi", "libffi-dev", ("ffi.h",), ("ffi",), ("libffi",)),
    ("OpenSSL", "libssl-dev", ("openssl/",), ("ssl", "crypto"), ("openssl", "libssl", "libcrypto")),
    ("bzip2", "libbz2-dev", ("bzlib.h",), ("bz2",), ("bzip2",)),
    ("liblzma", "liblzma-dev", ("lzma.h",), ("lzma",), ("liblzma",)),
    ("SQLite", "libsqlite3-dev", ("sqlite3.h",), ("sqlite3",), ("sqlite3",)),
    # not in the images (yet): a package needing one is still bound by the machine, not itself
    ("OpenLDAP", "libldap-dev", ("lber.h", "ldap.h"), ("ldap", "lber"), ("ldap",)),
    ("Cyrus SASL", "libsasl2-dev", ("sasl/",), ("sasl2",), ("libsasl2",)),
    ("Kerberos", "libkrb5-dev", ("krb5.h", "gssapi/"), ("krb5", "gssapi_krb5"), ("krb5", "krb5-gssapi")),
    ("libcurl", "libcurl4-openssl-dev", ("curl/",), ("curl",), ("libcurl",)),
    (
        "MySQL client",
        "default-libmysqlclient-dev",
        ("mysql.h", "mysql/"),
        ("mysqlclient", "mariadb"),
        ("mysqlclient", "mariadb", "libmariadb"),
    ),
    ("cairo", "libcairo2-dev", ("cairo.h", "cairo/"), ("cairo",), ("cairo",)),
    ("HDF5", "libhdf5-dev", ("hdf5.h",), ("hdf5",), ("hdf5",)),
    ("GMP", "libgmp-dev", ("gmp.h",), ("gmp",), ("gmp",)),
    ("MPFR", "libmpfr-dev", ("mpfr.h",), ("mpfr",), ("mpfr",)),
    ("libgfortran", "gfortran", (), ("gfortran",), ()),
)
HEADERS = {h: (label, deb) for label, deb, hs, _, _ in _LIBS for h in hs}
LIBRARIES = {lib: (label, deb) for label, deb, _, libs, _ in _LIBS for lib in libs}
NAMES = {n.lower(): (label, deb) for label, deb, _, _, ns in _LIBS for n in ns}
# helper programs a setup.py asks for the flags of a library (or that a build runs)
TOOLS = {
    "pg_config": ("libpq", "libpq-dev"),
    "geos-config": ("GEOS", "libgeos-dev"),
    "xml2-config": ("libxml2", "libxml2-dev"),
    "xslt-config": ("libxslt", "libxslt1-dev"),
    "mysql_config": ("MySQL client", "default-libmysqlclient-dev"),
    "llvm-config": ("LLVM", "llvm-dev"),
    "pkg-config": ("pkg-config", "pkg-config"),
    "cmake": ("CMake", "cmake"),
    "ninja": ("Ninja", "ninja-build"),
    "patchelf": ("patchelf", "patchelf"),
}
RUST = ("Rust toolchain", "rustc cargo")
FORTRAN = ("Fortran compiler", "gfortran")
C_COMPILER = ("C compiler", "gcc")
CXX_COMPILER = ("C++ compiler", "g++")
CRATES = "the crate registry (crates.io)"
# the line a failed build's log showed its missing piece in, kept in the phase's excerpt when the
# excerpt's tail cut it (``note``): maturin says "Rust not found" 100 lines above its traceback
NOTE = "[ft-harness parse] build environment: "
# a line of the log, or the same line kept as a note (``note``)
_LINE_START = rf"^(?:{re.escape(NOTE)}|\s*)"
MEMORY = "memory"
DISK = "disk space"
# a write of the build refused for space (grpcio 1.85.4 in the 1 GiB tmpfs /tmp it had before
# TMPDIR moved to the disk: tests/data/buildenv/grpcio-nospace.log)
_NOSPACE_RE = re.compile(
    _LINE_START + r"(?P<line>\S.*(?:[Ff]atal error|OSError|IOError).*"
    r"No space left on device.*)$",
    re.M,
)
# the kernel's OOM killer took a compiler of a build inside its memory cap: gcc's driver says so
# (grpcio 1.85.4's C++ build at 2 GiB: tests/data/buildenv/grpcio-oom.log)
_KILLED_RE = re.compile(
    _LINE_START + r"(?P<line>(?:\S*/)?(?:gcc|g\+\+|cc|c\+\+|gfortran|clang|clang\+\+)(?:-\d+)?: fatal error: "
    r"Killed signal terminated program \S+)",
    re.M,
)

# gcc/clang: "x.c:3:10: fatal error: jpeglib.h: No such file or directory"
_HEADER_RE = re.compile(
    r"^\s*(?P<line>\S+:\d+(?::\d+)?: fatal error: (?P<h>[\w./+-]+\.h(?:pp)?)"
    r"(?:: No such file or directory| file not found)[^\n]*)$",
    re.M,
)
# GNU ld (2.40+: ": No such file or directory" after it) and lld
_LIB_RE = re.compile(
    r"^\s*(?P<line>\S*ld(?:\.\w+)?: (?:error: )?(?:cannot find|unable to find library) "
    r"-l(?P<lib>[\w.+-]+)[^\n]*)$",
    re.M,
)
_PKGCONFIG_RE = re.compile(
    r"^\s*(?P<line>(?:Package|No package) '?(?P<name>[\w.+-]+)'? "
    r"(?:was not found in the pkg-config search path|found)[^\n]*)$",
    re.M,
)
_MESON_DEP_RE = re.compile(
    r'^\s*(?P<line>(?:\S+:\d+:\d+: )?ERROR: Dependency (?:lookup for )?"?'
    r'(?P<name>[\w.+-]+)"?[^\n]*(?:not found|failed)[^\n]*)$',
    re.M,
)
_PILLOW_RE = re.compile(r"^\s*(?P<line>[\w.]*RequiredDependencyException: (?P<name>[\w.+-]+)[^\n]*)$", re.M)
_LXML_RE = re.compile(
    r"^\s*(?P<line>Error: Please make sure the libxml2 and libxslt development "
    r"packages are installed\.?)",
    re.M,
)
_TOOL_NAMES = "|".join(re.escape(t) for t in TOOLS)
_TOOL_RES = (  # "pg_config executable not found", "sh: 1: xslt-config: not found",
    # "[Errno 2] No such file or directory: 'llvm-config'", "Could not find geos-config executable"
    re.compile(
        rf"^\s*(?P<line>[^\n]*?\b(?P<tool>{_TOOL_NAMES})'?(?: executable)?:? "
        r"(?:not found|executable not found|command not found)[^\n]*)$",
        re.M,
    ),
    re.compile(
        rf"^\s*(?P<line>[^\n]*(?:No such file or directory: '|Could not find |"
        rf"Did not find pkg-config by name ')(?P<tool>{_TOOL_NAMES})\b[^\n]*)$",
        re.M,
    ),
)
# meson: "ERROR: Unknown compiler(s): [['gfortran'], ['flang-new'], ...]"
_MESON_COMPILERS_RE = re.compile(
    r"^\s*(?P<line>(?:\S+:\d+:\d+: )?ERROR: Unknown compiler\(s\): "
    r"(?P<list>[^\n]*))$",
    re.M,
)
_CMAKE_COMPILER_RE = re.compile(
    r"^\s*(?P<line>[^\n]*No CMAKE_(?P<lang>Fortran|C|CXX)_COMPILER "
    r"could be found[^\n]*)$",
    re.M,
)
_FORTRAN_RE = re.compile(
    r"^\s*(?P<line>[^\n]*(?:don't know how to compile Fortran code|"
    r"f(?:77|90) not supported by \w+|No Fortran compiler found|"
    r"could not find a Fortran compiler|fortran compiler not found)[^\n]*)$",
    re.M | re.I,
)
_RUST_RE = re.compile(
    r"^\s*(?P<line>[^\n]*(?:can't find Rust compiler|"
    r"Rust not found, installing into a temporary directory|"
    r"Unable to find (?:cargo|rustc)|cargo(?:, the Rust package manager,)? is not "
    r"installed|rustc: not found|cargo: not found|"
    r"No such file or directory: '(?:cargo|rustc)')[^\n]*)$",
    re.M | re.I,
)
_CC_RE = re.compile(
    r"^\s*(?P<line>[^\n]*(?:command '(?:\S*/)?(?P<cc>[\w.+-]*(?:gcc|cc|g\+\+|c\+\+|"
    r"clang(?:\+\+)?))' failed: No such file or directory|unable to execute "
    r"'(?:\S*/)?(?P<cc2>[\w.+-]*(?:gcc|cc|g\+\+|c\+\+))': No such file)[^\n]*)$",
    re.M,
)
# cargo: its registry, a git dependency, a download from a build script
_CRATES_RE = re.compile(
    r"^\s*(?P<line>[^\n]*(?:(?:index|static)\.crates\.io|registry `crates-io`|"
    r"crates-io index)[^\n]*)$",
    re.M,
)
_GIT_RE = re.compile(
    r"^\s*(?P<line>[^\n]*(?:failed to clone into|failed to fetch into|"
    r"fatal: unable to access|failed to authenticate when downloading repository"
    r")[^\n]*)$",
    re.M,
)
_DOWNLOAD_RE = re.compile(
    r"^\s*(?P<line>[^\n]*(?:urlopen error|URLError|Could not resolve host:?|"
    r"Failed to resolve|NameResolutionError|Max retries exceeded with url|"
    r"Temporary failure in name resolution|Name or service not known)[^\n]*)$",
    re.M,
)
# pip's own index traffic: not a build's download (harness.parse.install says it is ours)
_PIP_OWN = re.compile(
    r"Could not fetch URL|/simple/|Retrying \(Retry\(|No matching distribution|"
    r"Looking in indexes"
)
# the output of a build backend, as pip shows it: "╰─> [N lines of output]" … "[end of output]"
_BLOCK_RE = re.compile(r"lines of output\]\n(?P<body>.*?)\n\s*\[end of output\]", re.S)


def _build_output(text: str) -> str:
    blocks = [m.group("body") for m in _BLOCK_RE.finditer(text)]
    notes = [ln for ln in text.splitlines() if ln.startswith(NOTE)]
    return "\n".join([*blocks, *notes]) if blocks else text


def note(text: str, excerpt: str) -> str:
    """A line for a failed install's excerpt (harness.parse): the log line that shows the missing
    piece, when ``excerpt`` (the log's tail) does not have it and so would not show it again;
    "" otherwise. The verdict reads the excerpt alone (a result file decides itself again)."""
    found = missing_piece(text)
    if found is None or missing_piece(excerpt) == found:
        return ""
    return NOTE + found.line


def _lib(label_deb: tuple[str, str], kind: str, what: str, line: str) -> Missing:
    label, deb = label_deb
    return Missing(kind=kind, what=what, group=label, debian=deb, line=line.strip()[:300])


def _header(m: re.Match[str]) -> tuple[str, str] | None:
    h = m.group("h")
    return HEADERS.get(h) or next((v for k, v in HEADERS.items() if k.endswith("/") and h.startswith(k)), None)


def _only_missing_pieces(text: str) -> bool:
    """Every compiler diagnostic in the log is a missing system header: no error of the package."""
    for m in COMPILER_RE.finditer(text):
        line = m.group("line")
        hm = _HEADER_RE.match(line)
        if hm is None or _header(hm) is None:
            return False
    return True


def missing_piece(text: str) -> Missing | None:
    """The first missing piece of the build machine the log shows, or None (the package's own
    failure, pip's own trouble, or no failure at all). Toolchains are checked first (maturin
    without cargo then fails to download one: the cause is cargo, not the download), then
    libraries and headers, then hosts a build could not reach. A compiler killed for memory comes
    first of all: the errors after it are of the files it did not finish."""
    out = _build_output(text)
    if m := _KILLED_RE.search(out):
        return Missing(kind="memory", what="memory_bytes", group=MEMORY, line=m.group("line").strip())
    if m := _NOSPACE_RE.search(out):
        return Missing(kind="disk", what="ENOSPC", group=DISK, line=m.group("line").strip()[:300])
    return _toolchain(out) or _library(text, out) or _unreachable(out)


def _toolchain(out: str) -> Missing | None:
    for m in _MESON_COMPILERS_RE.finditer(out):
        names = m.group("list")
        if "fortran" in names or "flang" in names:
            return _lib(FORTRAN, "toolchain", "gfortran", m.group("line"))
        if "'g++'" in names or "'c++'" in names or "clang++" in names:
            return _lib(CXX_COMPILER, "toolchain", "g++", m.group("line"))
        return _lib(C_COMPILER, "toolchain", "gcc", m.group("line"))
    cm = _CMAKE_COMPILER_RE.search(out)
    if cm:
        pick = {"Fortran": (FORTRAN, "gfortran"), "CXX": (CXX_COMPILER, "g++")}.get(
            cm.group("lang"), (C_COMPILER, "gcc")
        )
        return _lib(pick[0], "toolchain", pick[1], cm.group("line"))
    fm = _FORTRAN_RE.search(out)
    if fm:
        return _lib(FORTRAN, "toolchain", "gfortran", fm.group("line"))
    rm = _RUST_RE.search(out)
    if rm:
        return _lib(RUST, "toolchain", "cargo", rm.group("line"))
    cc = _CC_RE.search(out)
    if cc:
        name = cc.group("cc") or cc.group("cc2") or "gcc"
        return _lib(CXX_COMPILER if name.endswith("++") else C_COMPILER, "toolchain", name, cc.group("line"))
    return None


def _library(text: str, out: str) -> Missing | None:
    if _only_missing_pieces(text):
        lm = _LIB_RE.search(out)
        if lm and lm.group("lib") in LIBRARIES:
            return _lib(LIBRARIES[lm.group("lib")], "library", f"-l{lm.group('lib')}", lm.group("line"))
        for hm in _HEADER_RE.finditer(out):
            found = _header(hm)
            if found is not None:
                return _lib(found, "header", hm.group("h"), hm.group("line"))
    for rx in (_PILLOW_RE, _PKGCONFIG_RE, _MESON_DEP_RE):
        for m in rx.finditer(out):
            named = NAMES.get(m.group("name").lower())
            if named is not None:
                return _lib(named, "library", m.group("name"), m.group("line"))
    xm = _LXML_RE.search(out)
    if xm:
        return Missing(
            kind="library",
            what="libxml2, libxslt",
            group="libxml2 and libxslt",
            debian="libxml2-dev libxslt1-dev",
            line=xm.group("line").strip(),
        )
    for m in (m for rx in _TOOL_RES for m in rx.finditer(out)):
        tool = m.group("tool")
        label, deb = TOOLS[tool]
        kind = "library" if tool.endswith("-config") or tool == "pg_config" else "toolchain"
        return Missing(kind=kind, what=tool, group=label, debian=deb, line=m.group("line").strip()[:300])
    return None


def _unreachable(out: str) -> Missing | None:
    m = _CRATES_RE.search(out)
    if m:
        lines = [ln.strip() for ln in out.splitlines()]
        err = next((ln for ln in lines if ln.startswith("error:")), "")  # cargo's own error line
        host = next((ln for ln in lines if "crates.io" in ln and "Could not resolve" in ln), "")
        line = "; ".join(x for x in (err, host) if x) or m.group("line").strip()
        return Missing(kind="registry", what="crates.io", group=CRATES, line=line[:300])
    m = _GIT_RE.search(out)
    if m:
        line, host = _with_host(out, m)
        return Missing(kind="registry", what=host, group=f"a git repository on {host}", line=line)
    downloads = [m for m in _DOWNLOAD_RE.finditer(out) if not _PIP_OWN.search(m.group("line"))]
    if downloads:  # the last: a traceback's final exception, not the first frame's
        line, host = _with_host(out, downloads[-1])
        return Missing(kind="registry", what=host, group=f"a download during the build ({host})", line=line)
    return None


_RESOLVE_RE = re.compile(
    r"(?:failed to resolve address for|Could not resolve host:|resolve host) "
    r"'?(?P<host>[\w-]+(?:\.[\w-]+)+)"
)
_UPDATE_RE = re.compile(
    r"(?:Unable to update|unable to access) '?(?P<url>(?:https?|git|ssh)://\S+?)'?(?:[:\s]|$)", re.M
)
_URL_RE = re.compile(r"(?:https?|git|ssh)://(?:[^@/\s'\"]+@)?(?P<host>[\w-]+(?:\.[\w-]+)+)[^\s'\")]*")
_NOT_A_SOURCE = ("doc.rust-lang.org", "pypi.org", "files.pythonhosted.org", "github.com/pypa/pip")


def _with_host(out: str, m: re.Match[str]) -> tuple[str, str]:
    """The error line, with the URL it failed on when the line does not name it, and that host.
    The URL is the one the build named (cargo's "Unable to update URL", a resolver's host, or the
    last URL in the build's output: a setup.py's download call in its traceback)."""
    line = m.group("line").strip()
    found = _RESOLVE_RE.search(line) or _UPDATE_RE.search(out) or _RESOLVE_RE.search(out)
    url = ""
    if found is not None and "url" in found.groupdict():
        url = found.group("url")
        host_m = _URL_RE.search(url)
        host = host_m.group("host") if host_m else url
    elif found is not None:
        host = found.group("host")
    else:
        urls = [u for u in _URL_RE.finditer(out) if not any(x in u.group(0) for x in _NOT_A_SOURCE)]
        url = urls[-1].group(0) if urls else ""
        host = urls[-1].group("host") if urls else "a download host"
    if url and url not in line:
        line = f"{line} (fetching {url})"
    return line[:300], host
