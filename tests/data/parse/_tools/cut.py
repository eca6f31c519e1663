"""Make truncated and garbled copies of captured cases (for robustness tests)."""
import shutil
from pathlib import Path

D = Path("/work/main/tests/data/parse")
for case in ("crash", "hang", "mix", "install-build-failure"):
    for kind in ("cut", "garbled"):
        dst = D / f"{case}-{kind}"
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(D / case, dst)
        for f in list(dst.glob("logs/*")) + list(dst.glob("junit/*")):
            b = f.read_bytes()
            if kind == "cut":
                f.write_bytes(b[: len(b) // 2])
            else:  # every 97th byte replaced by junk, plus a NUL and invalid UTF-8
                bb = bytearray(b)
                for i in range(0, len(bb), 97):
                    bb[i] = (0xFF, 0x00, 0x3C)[i % 3]
                f.write_bytes(bytes(bb))
        (dst / "CMD").write_text(f"# {kind} copy of ../{case} made by cutting/garbling each file\n"
                                 + (D / case / "CMD").read_text())
print("ok")
