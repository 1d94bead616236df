"""Case text made unable to open or close a fence of the prompt.

A rendered prompt fences each case field as ``<name>`` ... ``</name>``. Data that
holds something a reader takes for one of those tags — or for a chat template's
control token such as ``<|im_end|>``, which an open-weights server may read as the
end of the message — could end its fence early, or open a fake one, and pose as
instructions. :func:`defuse` escapes every such *delimiter* in data, however it is
spelt, and leaves all other text exactly as it was.

The rule. Data is read as a reader would see it, one character (or character
reference) at a time:

- an HTML character reference — named, decimal or hexadecimal, with or without
  its ``;``, also escaped again as ``&amp;`` (``&lt;``, ``&LT``, ``&#60;``,
  ``&#x3C;``, ``&sol;``, ``&amp;lt;``) — is the character it stands for;
- a format or default-ignorable character (zero-width space and joiners, word
  joiner, soft hyphen, byte-order mark, bidi controls, variation selectors, tag
  characters, the Hangul fillers, the combining grapheme joiner) is nothing;
- a character that Unicode's confusables list as ``<`` (``˂ ᐸ ᚲ ‹ ❮ 𝈶``) or ``/``
  (``᜵ ⁁ ⁄ ∕ ╱ ⟋ ⧸ Ⳇ ⼃ 〳 ノ ㇓ 丿 𝈺``) is that character;
- any other character is its NFKC form (fullwidth ``＜／ｍ`` are ``</m``), case-folded.

A *delimiter* is then ``<``, whitespace, an optional ``/`` and whitespace, and the
name of a fenced field followed by anything but a letter, digit or ``_`` (or the
end): ``</memory>``, ``< / MEMORY``, ``<evidence attr>``; or ``<``, whitespace,
``|``, one to 64 characters that are neither whitespace nor ``<``, ``>``, ``|``, then
``|``, whitespace and ``>`` (``<|im_end|>``, DeepSeek's ``<｜end▁of▁sentence｜>``).
Each delimiter's head — its ``<`` through the name, or its ``<`` and first ``|``
— is replaced by the ASCII escape ``<\\/name``, ``<\\name`` or ``<\\|``; the rest of
the text stays as it was (``&lt;/memory&gt;`` becomes ``<\\/memory&gt;``). An
escaped delimiter is no longer one, so defusing twice changes nothing.

Text without ``&`` and without any character that reads as ``<`` is returned
unchanged at once, and text holding no delimiter is returned unchanged: ordinary
text, ``a < b``, ``<b>``, ``</s>``, ``<memoryless>``, emoji with joiners, Persian
with non-joiners and fullwidth punctuation render as they always did.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache

__all__ = ["LOOKALIKES", "defuse"]

#: characters that read as ``<``: itself, its NFKC compatibility forms (small and
#: fullwidth) and its confusables (Unicode's confusables.txt).
LOOKALIKES = "<\ufe64\uff1c\u02c2\u1438\u16b2\u2039\u276e\U0001d236"
#: the confusables of ``/`` (its fullwidth form is NFKC's).
_SLASHES = (
    "\u1735\u2041\u2044\u2215\u2571\u27cb\u29f8\u2cc6\u2f03\u3033\u30ce\u31d3\u4e3f\U0001d23a"
)
_CONFUSABLES = str.maketrans({**dict.fromkeys(LOOKALIKES, "<"), **dict.fromkeys(_SLASHES, "/")})

#: Default_Ignorable_Code_Point characters that are not of category Cf (those are
#: ignorable too).
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u3164\ufe00-\ufe0f\uffa0"
    "\ufff0-\ufff8\U000e0000-\U000e0fff]"
)
#: an HTML character reference, also one escaped again as ``&amp;``.
_REFERENCE = re.compile(
    r"&(?:amp;)*(#0*[0-9]{1,7};?|#[xX]0*[0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};?)"
)
#: where a delimiter can start.
_START = re.compile("[" + LOOKALIKES + "&]")
#: the most characters between the bars of a control token.
TOKEN_CHARS = 64


def _ignorable(c: str) -> bool:
    return unicodedata.category(c) == "Cf" or _IGNORABLE.match(c) is not None


@lru_cache(maxsize=8192)
def _fold(c: str) -> str:
    """What one character reads as (see the module docstring)."""
    if c < "\x80":
        return c.lower()
    if _ignorable(c):
        return ""
    mapped = c.translate(_CONFUSABLES)
    if mapped != c:
        return mapped
    folded = unicodedata.normalize("NFKC", c).casefold().translate(_CONFUSABLES)
    return "".join(ch for ch in folded if not _ignorable(ch))


def _units(text: str, i: int) -> Iterator[tuple[str, int]]:
    """From ``text[i]`` on: what each character or character reference reads as,
    and where in ``text`` it ends."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "&":
            ref = _REFERENCE.match(text, i)
            if ref is not None:
                decoded = html.unescape("&" + ref.group(1))
                if decoded != "&" + ref.group(1):
                    yield "".join(_fold(ch) for ch in decoded), ref.end()
                    i = ref.end()
                    continue
        yield _fold(c), i + 1
        i += 1


def _chars(text: str, i: int) -> Iterator[tuple[str, int, str]]:
    """From ``text[i]`` on, one read character at a time: it, where its unit ends in
    ``text``, and the rest of its unit after it."""
    for read, end in _units(text, i):
        for k, ch in enumerate(read):
            yield ch, end, read[k + 1 :]


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _delimiter(text: str, i: int, names: Mapping[str, str], longest: int) -> tuple[int, str] | None:
    """``(end, escape)`` when a delimiter starts at ``text[i]``: the head ends at
    ``end`` and is replaced by ``escape``."""
    chars = _chars(text, i)
    cur = next(chars, None)
    if cur is None or cur[0] != "<":
        return None
    cur = next(chars, None)
    while cur is not None and cur[0].isspace():
        cur = next(chars, None)
    if cur is None:
        return None
    if cur[0] == "|":
        bar = cur
        body = 0
        cur = next(chars, None)
        while cur is not None and not cur[0].isspace() and cur[0] not in "<>|":
            body += 1
            if body > TOKEN_CHARS:
                return None
            cur = next(chars, None)
        if body == 0 or cur is None or cur[0] != "|":
            return None
        cur = next(chars, None)
        while cur is not None and cur[0].isspace():
            cur = next(chars, None)
        if cur is None or cur[0] != ">":
            return None
        return bar[1], "<\\|" + bar[2]
    slash = cur[0] == "/"
    if slash:
        cur = next(chars, None)
        while cur is not None and cur[0].isspace():
            cur = next(chars, None)
    word: list[str] = []
    last = None
    while cur is not None and _word(cur[0]):
        if len(word) == longest:
            return None
        word.append(cur[0])
        last = cur
        cur = next(chars, None)
    name = names.get("".join(word))
    if name is None or last is None:
        return None
    return last[1], ("<\\/" if slash else "<\\") + name + last[2]


def defuse(text: str, names: Iterable[str]) -> str:
    """``text`` with every delimiter of the fences ``names`` (and every chat-template
    control token) escaped, by the rule of the module docstring."""
    if _START.search(text) is None:
        return text
    fold = {name.casefold(): name for name in names}
    longest = max(map(len, fold), default=0)
    out: list[str] = []
    last = 0
    for start in _START.finditer(text):
        i = start.start()
        if i < last:
            continue
        hit = _delimiter(text, i, fold, longest)
        if hit is not None:
            end, escape = hit
            out += [text[last:i], escape]
            last = end
    if not out:
        return text
    return "".join(out) + text[last:]
