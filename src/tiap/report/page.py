"""The HTML page every report is: one self-contained file (inline CSS and SVG, no
scripts, no external assets) whose title is escaped like every text from data."""

from __future__ import annotations

from tiap.text import inert_html as e

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top;
white-space:nowrap}
td.long{white-space:normal;min-width:12em}
th{background:#f4f4f4}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.wide{max-width:100%;overflow-x:auto;margin-bottom:1em}
.pass{color:#fff;background:#1a9850;padding:.1em .5em;border-radius:.2em}
.fail{color:#fff;background:#d73027;padding:.1em .5em;border-radius:.2em}
nav.toc{background:#f7f7f7;border:1px solid #e4e4e4;padding:.5em 1em;margin:1em 0}
nav.toc ol{margin:.3em 0;padding-left:1.5em}
details>summary{cursor:pointer}
details>summary>h2,details>summary>h3{display:inline-block;margin:1.2em 0 .4em;border:0}
""".strip()


def page(title: str, body: str) -> str:
    """A whole page: ``title`` (escaped) in its head, ``body`` (HTML, built escaped)."""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )
