"""README_return_codes.md lists every return code the server can answer."""

from pathlib import Path

from horde.errors import all_return_codes

DOC = Path(__file__).resolve().parents[2] / "README_return_codes.md"


def test_every_return_code_is_documented():
    text = DOC.read_text()
    missing = sorted({cls.rc for cls in all_return_codes() if f"`{cls.rc}`" not in text})
    assert missing == []
