"""Issue 17: every chapter is a lesson — what it lets you decide, exercises at three levels, key
takeaways, further reading — the 2026 practice topics each have their section, and the glossary
matches the terms the chapters define.

Read from the chapters' MyST source and the exercise registry, so it runs without a build; the
table-width check needs a browser and lives in tests/test_browser.py.
"""

import re
from pathlib import Path

import pytest

from vidya_lab.exercises import chapter_exercises

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("0*.md"))
BOOK = sorted((ROOT / "book").glob("*.md"))
LEVELS = ("compute", "explain", "design")
#: The 2026-practice topics of issue 17: MyST label -> chapter number it lives in.
TOPICS = {
    "topic-benchmarking": 1,
    "topic-prefix-routing": 6,
    "topic-disaggregation": 5,
    "topic-kv-offload": 4,
    "topic-low-precision-and-speculation": 4,
    "topic-moe-long-context-lora": 3,
    "topic-procurement": 6,
    "topic-cache-side-channel": 4,
}


def _number(path: Path) -> int:
    return int(path.name[:2])


def _text(path: Path) -> str:
    return path.read_text()


def _sections(text: str) -> list[str]:
    return re.findall(r"^## (.+)$", text, flags=re.M)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_opens_with_what_you_can_decide_and_closes_with_takeaways(path):
    text = _text(path)
    body = text.split("\n# ", 1)[1]
    intro = body.split("\n## ", 1)[0]
    assert re.search(r"\bdecide\b", intro, flags=re.I), f"{path.name}: no 'decide' before ## 1"
    sections = _sections(text)
    assert "Key takeaways" in sections and "Further reading" in sections, sections
    assert sections.index("Key takeaways") < sections.index("Further reading")
    takeaways = text.split("## Key takeaways", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"```\{(admonition|important|tip|note)\}|:::\{(admonition|important|tip)", takeaways)
    reading = text.split("## Further reading", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"\{cite:[pt]\}", reading)) >= 3
    assert "Read the code" in sections


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_six_exercises_at_three_levels_numbered_per_chapter(path):
    n = _number(path)
    exercises = chapter_exercises(n)
    assert len(exercises) >= 6, f"chapter {n}: {len(exercises)} exercises"
    assert [e.id for e in exercises] == [f"{n}.{k}" for k in range(1, len(exercises) + 1)]
    levels = {e.level for e in exercises}
    assert set(LEVELS) <= levels, f"chapter {n}: levels {sorted(levels)}"
    text = _text(path)
    for e in exercises:
        assert f"Exercise {e.id}" in text, f"{path.name} does not title Exercise {e.id}"
        assert f"check(\"{e.id}\"" in text or f"check('{e.id}'" in text, e.id


@pytest.mark.parametrize("label, chapter", sorted(TOPICS.items()))
def test_each_practice_topic_has_a_section_with_a_figure_and_an_exercise(label, chapter):
    path = next(p for p in CHAPTERS if _number(p) == chapter)
    text = _text(path)
    assert f"({label})=" in text, f"{path.name} has no section labelled {label}"
    section = text.split(f"({label})=", 1)[1]
    section = re.split(r"\n## ", section.split("\n", 2)[-1], maxsplit=1)[0]
    assert "glue:figure" in section or ":alt:" in section, f"{label}: no figure"
    assert re.search(r"\{ref\}`ex-\d+-\d+`|exercise-start|Exercise \d+\.\d+", section), \
        f"{label}: no exercise in or pointed to from the section"


def _glossary_terms() -> list[str]:
    text = _text(ROOT / "book" / "glossary.md")
    block = text.split("```{glossary}", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines()
            if line.strip() and not line.startswith((" ", "\t"))]


def test_every_glossary_term_is_used_in_the_book():
    prose = "\n".join(_text(p) for p in CHAPTERS + BOOK if p.name != "glossary.md").lower()
    unused = []
    for term in _glossary_terms():
        names = [term.split(" (")[0]] + re.findall(r"\(([^)]+)\)", term)
        if not any(re.search(rf"\b{re.escape(x.lower())}", prose) for x in names):
            unused.append(term)
    assert not unused, f"glossary terms no page uses: {unused}"


def test_every_bolded_first_use_is_in_the_glossary():
    terms = [t.lower() for t in _glossary_terms()]
    missing = []
    for path in CHAPTERS:
        prose = re.sub(r"```.*?```", "", _text(path), flags=re.S)  # not code cells
        for bold in re.findall(r"\*\*([^*]{2,60})\*\*", prose):
            word = bold.strip().rstrip(".:,").lower()
            if not any(word == t or word in t or t.split(" (")[0] in word for t in terms):
                missing.append(f"{path.stem}: {bold}")
    assert not missing, f"bolded terms missing from the glossary: {missing}"
