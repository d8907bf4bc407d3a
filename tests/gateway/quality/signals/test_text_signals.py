"""The text signals on realistic outputs: loops must fire, healthy text of any kind must not."""

# ruff: noqa: RUF001  (text in other scripts is the point of these tests)

from __future__ import annotations

import random

import pytest

from gateway.quality.config import SignalParams
from gateway.quality.signals import loops, scripts
from gateway.quality.signals.loops import find_loop, has_repeated_trigram, words_of
from gateway.quality.signals.observation import Observation
from gateway.quality.signals.scripts import expected_scripts, script_letters
from tests.gateway.quality import texts
from tests.gateway.quality.observations import obs, verdict

ENGLISH_PROMPT = "Can you explain how this works, step by step?"

HEALTHY = [
    pytest.param(texts.PROSE, id="prose"),
    pytest.param(texts.PYTHON, id="python"),
    pytest.param(texts.TABLE, id="markdown-table"),
    pytest.param(texts.JSON_ARRAY, id="json-array"),
    pytest.param(texts.NUMBERED, id="numbered-list"),
    pytest.param(texts.CHINESE, id="chinese-prose"),
    pytest.param(texts.LONG_ANSWER, id="long-answer"),
]


@pytest.mark.parametrize("content", HEALTHY)
def test_repetition_is_silent_on_healthy_text(content: str) -> None:
    assert verdict("repetition", obs(content=content, prompt_sample=ENGLISH_PROMPT)) == "good"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(
            texts.LOOP, "a 3-word phrase repeated 60 times covers 100% of the output", id="loop"
        ),
        pytest.param(
            texts.PROSE_THEN_LOOP,
            "a 3-word phrase repeated 40 times covers 42% of the output",
            id="loop-after-prose",
        ),
        pytest.param(
            texts.SENTENCE_LOOP,
            "a 15-word phrase repeated 8 times covers 70% of the output",
            id="sentence-loop",
        ),
        pytest.param(
            texts.CUT_MID_WORD,
            "a 3-word phrase repeated 30 times covers 99% of the output",
            id="cut-mid-word",
        ),
        pytest.param(
            texts.CHINESE_LOOP,
            "a 12-word phrase repeated 20 times covers 86% of the output",
            id="chinese-loop",
        ),
        pytest.param(
            texts.PARAGRAPH_LOOP,
            "a 101-word phrase repeated 4 times covers 100% of the output",
            id="paragraph-loop",
        ),
        pytest.param(
            texts.LONG_ANSWER + " " + texts.LOOP,
            "a 3-word phrase repeated 60 times covers 13% of the output's last 8,192 characters",
            id="loop-at-the-end-of-a-long-answer",
        ),
    ],
)
def test_repetition_fires_on_loops(content: str, expected: str) -> None:
    assert verdict("repetition", obs(content=content, prompt_sample=ENGLISH_PROMPT)) == expected


@pytest.mark.parametrize(
    ("observation", "expected"),
    [
        pytest.param(obs(content="the engine stops " * 8), None, id="too-short"),
        pytest.param(obs(content=texts.LOOP, outcome="error"), None, id="not-ok"),
        pytest.param(
            obs(content=texts.LOOP, prompt_sample="Repeat 'the engine stops' sixty times."),
            None,
            id="asked-to-repeat",
        ),
        pytest.param(obs(content="0 " * 400), "good", id="numbers-only"),
        pytest.param(
            obs(content=texts.PROSE + " " + "Bye now. " * 5), "good", id="short-loop-at-end"
        ),
        pytest.param(
            obs(content="the engine stops " * 20 + texts.LONG_ANSWER[:3000]),
            "good",
            id="early-short-burst-then-recovery",
        ),
    ],
)
def test_repetition_edges(observation: Observation, expected: str | None) -> None:
    assert verdict("repetition", observation) == expected


def test_repetition_reads_only_the_window() -> None:
    params = SignalParams(repetition_window_chars=2000)
    loop_then_prose = texts.LOOP * 10 + texts.LONG_ANSWER[:3000]
    assert verdict("repetition", obs(content=loop_then_prose), params) == "good"


def test_loop_finder_is_linear_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pass over the words for each of a few likely periods, not for each period up to
    # max_period: linear in the answer, whatever max_period is.
    passes: list[int] = []
    longest_run = loops._longest_run

    def counted(ids: list[int], period: int) -> tuple[int, int]:
        passes.append(period)
        return longest_run(ids, period)

    monkeypatch.setattr(loops, "_longest_run", counted)
    rng = random.Random(3)  # a small vocabulary: trigrams recur at every distance
    words = [rng.choice(["the", "train", "left", "on", "time"]) for _ in range(20_000)]
    find_loop(words, max_period=200)
    assert len(passes) == loops._CANDIDATE_PERIODS


CYRILLIC = "Поезд прибыл на станцию вовремя, и пассажиры вышли на платформу."
JAPANESE = "東京駅から新幹線に乗って、京都まで行きました。とても速くて快適でした。"


@pytest.mark.parametrize(
    ("prompt", "content", "expected"),
    [
        pytest.param(ENGLISH_PROMPT, texts.PROSE, "good", id="english"),
        pytest.param(ENGLISH_PROMPT, texts.PYTHON, "good", id="code"),
        pytest.param(
            ENGLISH_PROMPT,
            "Große Änderungen: café, naïve, São Paulo, Łódź, Việt Nam — all Latin. 🚀✅ 42%",
            "good",
            id="latin-extended-emoji-symbols",
        ),
        pytest.param(
            ENGLISH_PROMPT,
            "With α = 0.5, β = 2 and Δt = 3 μs, the phase φ stays below π/2 for every θ "
            "in the range; so Σ converges and Ω holds.",
            "good",
            id="greek-math-symbols",
        ),
        pytest.param(
            ENGLISH_PROMPT,
            texts.PROSE[:200] + " " + texts.CHINESE,
            "cjk (prompt: latin)",
            id="chinese-answer-to-english",
        ),
        pytest.param(
            ENGLISH_PROMPT,
            texts.PROSE[:300] + " " + CYRILLIC,
            "cyrillic (prompt: latin)",
            id="cyrillic-drift",
        ),
        pytest.param(texts.CHINESE[:30], texts.CHINESE, "good", id="chinese-to-chinese"),
        pytest.param(JAPANESE, JAPANESE + "ひらがなとカタカナ。", "good", id="japanese"),
        pytest.param(
            "Translate into Russian: the train arrived on time.", CYRILLIC, "good", id="translate"
        ),
        pytest.param(
            "Answer in Japanese please: what is a bullet train?", JAPANESE, "good", id="named"
        ),
        pytest.param(
            ENGLISH_PROMPT,
            texts.PROSE + " The word 東京 means eastern capital.",
            "good",
            id="a-quoted-word",
        ),
        pytest.param(ENGLISH_PROMPT, "OK: 東京駅", None, id="too-few-letters"),
        pytest.param("", texts.CHINESE, None, id="no-prompt-sample"),
    ],
)
def test_unexpected_script(prompt: str, content: str, expected: str | None) -> None:
    result = verdict("unexpected_script", obs(content=content, prompt_sample=prompt))
    if expected is None or expected == "good":
        assert result == expected
    else:
        assert result is not None and result.endswith(expected), result
        assert "% of " in result and " letters are " in result


def test_script_counts() -> None:
    letters = script_letters("Hello мир, 東京 and Ελλάδα! α")
    assert letters.latin == 8
    assert dict(letters.other) == {"cyrillic": 3, "cjk": 2, "greek": 6}
    assert letters.total == 19
    assert script_letters("plain ascii 123").other == {}
    assert expected_scripts("Привет, как дела?") == {"cyrillic"}
    assert expected_scripts("What is the capital of Korea?") == {"hangul"}


WORDISH = "abc XYZ\t\n\x0b\x1c\x1f.,!0é語 "


def _random_texts(count: int, alphabet: str) -> list[str]:
    rng = random.Random(7)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(count)]


def test_fast_paths_agree_with_the_expressions() -> None:
    """ASCII text takes `str.split` and a byte count; they must read what the regular
    expressions read, whitespace control characters included."""
    for text in _random_texts(3000, WORDISH):
        assert words_of(text) == loops._WORD.findall(text.casefold()), repr(text)
        latin = sum(map(len, scripts._LATIN.findall(text)))
        assert script_letters(text).latin == latin, repr(text)


@pytest.mark.parametrize(
    ("content", "repeated"),
    [
        ("one two three four one two three", True),
        ("one two three four five six", False),
        ("a a a", False),
        ("a a a a", True),
    ],
)
def test_repeated_trigram(content: str, repeated: bool) -> None:
    assert has_repeated_trigram(content.split()) is repeated


@pytest.mark.parametrize("content", [texts.PROSE, texts.LONG_ANSWER, texts.PYTHON])
def test_no_repeated_trigram_means_no_loop(content: str) -> None:
    """The repetition signal skips `find_loop` without a repeated trigram: only sound if
    `find_loop` would have found nothing either."""
    words = words_of(content)
    for cut in range(3, len(words), 7):
        if not has_repeated_trigram(words[:cut]):
            assert find_loop(words[:cut], max_period=200) is None
