"""Which writing systems a text's letters belong to, by code-point ranges.

`unicodedata.name` per character is far too slow for every response; one regular
expression per script runs in C. Digits, punctuation, symbols and emoji belong to no
script here. Han ideographs and kana are one system ("cjk") because Japanese mixes them.

Letters of alphabetic scripts count only in runs of two or more: an English answer about
physics uses Greek letters one by one as symbols (alpha, micro, delta), while real Greek
or Russian text is made of words.
Ideographs, kana and Hangul count one by one, since one character is already a word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

_ASCII_NON_LETTERS = bytes(b for b in range(128) if not chr(b).isalpha())
_LATIN = re.compile(r"[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]+")
_ALPHABETIC: Mapping[str, str] = {
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "cyrillic": "\u0400-\u052f",
    "armenian": "\u0531-\u058f",
    "georgian": "\u10a0-\u10ff",
    "hebrew": "\u0590-\u05ff",
    "arabic": "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff",
    "devanagari": "\u0900-\u097f",
    "bengali": "\u0980-\u09ff",
    "gurmukhi": "\u0a00-\u0a7f",
    "gujarati": "\u0a80-\u0aff",
    "oriya": "\u0b00-\u0b7f",
    "tamil": "\u0b80-\u0bff",
    "telugu": "\u0c00-\u0c7f",
    "kannada": "\u0c80-\u0cff",
    "malayalam": "\u0d00-\u0d7f",
    "sinhala": "\u0d80-\u0dff",
    "thai": "\u0e00-\u0e7f",
}
_SYLLABIC: Mapping[str, str] = {
    "hangul": "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
    "cjk": "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9d",
}
_PATTERNS: Mapping[str, re.Pattern[str]] = {
    **{name: re.compile(f"[{chars}]{{2,}}") for name, chars in _ALPHABETIC.items()},
    **{name: re.compile(f"[{chars}]+") for name, chars in _SYLLABIC.items()},
}

# A prompt that names a language (or asks for a translation) may rightly be answered in
# a script it does not itself contain.
_TRANSLATION_WORDS = ("translat", "tradu", "übersetz", "переведи", "перевод")
_LANGUAGE_WORDS: Mapping[str, tuple[str, ...]] = {
    "greek": ("greek", "grec", "griech", "grieg"),
    "cyrillic": ("russian", "ukrainian", "bulgarian", "serbian", "kazakh", "mongolian", "russ"),
    "armenian": ("armenian",),
    "georgian": ("georgian",),
    "hebrew": ("hebrew", "yiddish", "hébreu", "hebrä"),
    "arabic": ("arabic", "persian", "farsi", "urdu", "pashto", "arabe"),
    "devanagari": ("hindi", "marathi", "nepali", "sanskrit", "devanagari"),
    "bengali": ("bengali", "bangla"),
    "gurmukhi": ("punjabi",),
    "gujarati": ("gujarati",),
    "oriya": ("odia", "oriya"),
    "tamil": ("tamil",),
    "telugu": ("telugu",),
    "kannada": ("kannada",),
    "malayalam": ("malayalam",),
    "sinhala": ("sinhala", "sinhalese"),
    "thai": ("thai",),
    "hangul": ("korean", "coréen", "korea", "hangul"),
    "cjk": ("chinese", "japan", "mandarin", "cantonese", "kanji", "kana", "chino", "chinois"),
}
ALL_SCRIPTS = frozenset(_PATTERNS)
"""Every script name this module reports, besides "latin"."""


@dataclass(frozen=True, slots=True)
class ScriptLetters:
    """Letters of a text per script (alphabetic scripts only in runs of two or more)."""

    latin: int
    other: Mapping[str, int]

    @property
    def total(self) -> int:
        return self.latin + sum(self.other.values())


def script_letters(text: str) -> ScriptLetters:
    """Count the text's letters per script; ASCII text takes a fast path."""
    if text.isascii():
        ascii_letters = text.encode("ascii").translate(None, _ASCII_NON_LETTERS)
        return ScriptLetters(len(ascii_letters), {})
    latin = sum(map(len, _LATIN.findall(text)))
    other = {name: sum(map(len, pattern.findall(text))) for name, pattern in _PATTERNS.items()}
    return ScriptLetters(latin, {name: count for name, count in other.items() if count})


def expected_scripts(prompt: str) -> frozenset[str]:
    """Scripts an answer to this prompt may use besides Latin: those the prompt uses or names."""
    lowered = prompt.casefold()
    if any(word in lowered for word in _TRANSLATION_WORDS):
        return ALL_SCRIPTS
    present = set(script_letters(prompt).other)
    named = {name for name, words in _LANGUAGE_WORDS.items() if any(w in lowered for w in words)}
    return frozenset(present | named)
