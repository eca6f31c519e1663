"""Write docs/reference/cli.md from the argument parser (tests/unit/cli/test_clihelp.py checks it).

python tools/cli_reference.py           # rewrite the page
python tools/cli_reference.py --check   # exit 1 when the page is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.__main__ import build_parser  # noqa: E402
from harness.cli import clihelp  # noqa: E402


def main() -> int:
    page = ROOT / clihelp.CLI_PAGE
    text = clihelp.reference(build_parser())
    if "--check" in sys.argv[1:]:
        if page.read_text(encoding="utf-8") != text:
            print(f"{clihelp.CLI_PAGE} is stale: run python tools/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    print(f"wrote {clihelp.CLI_PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
