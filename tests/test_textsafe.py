"""Tests of calibrate.textsafe: terminal, Markdown and CSV safety of record text."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibrate.textsafe import csv_cell, csv_row, escape_markdown, strip_control


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("ok\x1b[31m red\x1b[0m", "ok red"),
        ("title\x1b]0;pwned\x07 after", "title after"),  # OSC: sets the window title
        ("bell\x07 and nul\x00", "bell and nul"),
        ("c1\x9b31m csi", "c1 csi"),
        ("rtl \u202eevil\u202c", "rtl evil"),
        ("two\nlines\tand tab", "two lines and tab"),
        (None, ""),
        (3.5, "3.5"),
    ],
)
def test_strip_control(raw, clean):
    assert strip_control(raw) == clean


def test_strip_control_keeps_newlines_on_request():
    assert strip_control("a\nb\x1b[2J", keep_newlines=True) == "a\nb"


@given(st.text())
def test_strip_control_leaves_no_control_characters(text):
    out = strip_control(text)
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in out)


def test_escape_markdown_keeps_table_and_html_inert():
    out = escape_markdown("a|b *c* <script>x</script>\nnext [l](u)")
    assert "\n" not in out
    assert "\\|" in out and "\\*c\\*" in out and "\\<script\\>" in out and "\\[l\\]\\(u\\)" in out
    # Every special character is escaped exactly once.
    assert escape_markdown("\\") == "\\\\"


@pytest.mark.parametrize("value", ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx"])
def test_csv_cell_neutralises_formulas(value):
    assert csv_cell(value) == "'" + value


def test_csv_cell_leaves_data_alone():
    assert csv_cell("step 1") == "step 1"
    assert csv_cell(-0.25) == -0.25 and csv_cell(None) is None and csv_cell(True) is True
    buf = io.StringIO()
    csv.writer(buf).writerow(csv_row(['=HYPERLINK("x")', 1, "ok"]))
    assert buf.getvalue().startswith('"\'=HYPERLINK(""x"")",1,ok')
