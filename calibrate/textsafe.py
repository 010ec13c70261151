"""Make record text safe to show: in a terminal, in Markdown, in a spreadsheet.

Process names, step ids, question text, approver names and notes come from
exported records, which are untrusted input. Before any face shows them they
pass through one of these functions, so that a value cannot move the cursor or
recolour the terminal (ANSI escapes), break a Markdown table, or run as a
formula when a CSV file is opened in a spreadsheet; a paste-ready YAML block
is written by :func:`yaml_block`, so a value that looks like YAML syntax
(``chk #1: a``) is quoted and reads back as itself.

References
----------
.. [1] OWASP. CSV Injection.
   https://owasp.org/www-community/attacks/CSV_Injection
.. [2] CommonMark Spec 0.31, §2.4 Backslash escapes. https://spec.commonmark.org/
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and two-byte ESC sequences.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
# C0 controls except tab and newline, DEL, C1 controls, and the Unicode bidi
# overrides/isolates that can make a terminal show text in another order.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_NEWLINES = re.compile(r"[\t\n]+")

#: A spreadsheet treats a cell starting with one of these as a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

# CommonMark lets any ASCII punctuation be backslash-escaped; these are the
# ones that can start or end markup (emphasis, links, code, tables, HTML, math).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|~&$])")


#: How a name a record did not give is shown (never "None", "nan" or "-").
NO_PROCESS, NO_STEP, NO_MODEL = "(no process)", "(no step)", "(unknown model)"


def shown_name(value: Any, missing: str) -> str:
    """``value`` as text, or ``missing`` when the record gave none (None, NaN, NA or "").

    Examples
    --------
    >>> shown_name(float("nan"), NO_MODEL), shown_name(None, NO_PROCESS), shown_name("m", NO_MODEL)
    ('(unknown model)', '(no process)', 'm')
    """
    if value is None or value == "" or type(value).__name__ == "NAType":
        return missing
    if isinstance(value, float) and value != value:  # NaN
        return missing
    return str(value)


def step_name(process: Any, step: Any, *, sep: str = " / ") -> str:
    """``process / step`` with :func:`shown_name`'s placeholders for what a record did not give."""
    return f"{shown_name(process, NO_PROCESS)}{sep}{shown_name(step, NO_STEP)}"


def strip_control(text: Any, *, keep_newlines: bool = False) -> str:
    """Remove ANSI escape sequences and control characters from ``text``.

    Parameters
    ----------
    text : Any
        The value to show; non-strings are converted with ``str`` (``None``
        becomes ``""``).
    keep_newlines : bool, default=False
        Keep newlines and tabs (for multi-line notes). Otherwise each run of
        them becomes one space, so a value stays on its table row.

    Returns
    -------
    str

    Examples
    --------
    >>> strip_control("ok\\x1b[31m red\\x1b[0m\\x07")
    'ok red'
    >>> strip_control("two\\nlines")
    'two lines'
    """
    if text is None:
        return ""
    out = _CONTROL.sub("", _ANSI.sub("", str(text)))
    return out if keep_newlines else _NEWLINES.sub(" ", out)


def escape_markdown(text: Any) -> str:
    """Escape ``text`` so Markdown shows it literally, on one line.

    Control characters are removed first (:func:`strip_control`), newlines
    become spaces (so a value cannot end a table row), and every character
    that could start markup, including ``|`` and ``<``, is backslash-escaped.

    Examples
    --------
    >>> escape_markdown("a|b *c* <script>")
    'a\\\\|b \\\\*c\\\\* \\\\<script\\\\>'
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", strip_control(text))


def csv_cell(value: Any) -> Any:
    """Neutralise a spreadsheet formula in one CSV cell.

    A string starting with ``= + - @``, a tab or a carriage return gets a
    leading apostrophe, which spreadsheets show as text. Numbers, booleans and
    missing values pass through unchanged (a negative number such as a kappa
    of ``-0.1`` is data we wrote, not a formula).

    Examples
    --------
    >>> csv_cell("=HYPERLINK(1)"), csv_cell(-0.5), csv_cell("step 1")
    ("'=HYPERLINK(1)", -0.5, 'step 1')
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_row(values: Any) -> list[Any]:
    """:func:`csv_cell` applied to every value of a row."""
    return [csv_cell(v) for v in values]


def yaml_block(value: Any, *, indent: int = 0, width: int = 88) -> str:
    """``value`` as a paste-ready YAML block: every scalar quoted or escaped as YAML needs.

    Written by ``yaml.safe_dump`` (block style, keys in their order), so record text such as
    a step id ``chk #1: a`` comes back from ``yaml.safe_load`` as itself, never as other keys.

    Parameters
    ----------
    value : Any
        Plain data: dicts, lists, strings, numbers, booleans.
    indent : int, default=0
        Spaces before every line (a block placed inside a larger one).
    width : int, default=88
        Line width at which long strings are folded.

    Returns
    -------
    str
        Ending with a newline.

    Examples
    --------
    >>> print(yaml_block([{"id": "chk #1: a", "advisory": True}]), end="")
    - id: 'chk #1: a'
      advisory: true
    """
    import yaml  # here, not at the top: the CLI starts without it (tests/test_lazy.py)

    text = yaml.safe_dump(
        value, sort_keys=False, allow_unicode=True, default_flow_style=False, width=width
    )
    return textwrap.indent(text, " " * indent) if indent else text
