"""The segments view: one row per segment with its start-end time, words with their own times when the result
has them (`segment.words`), and a `data-start` on each that the page uses to seek the audio player."""

from __future__ import annotations

from html import escape

SPEAKER_COLOURS = 8  # style.py colours speaker-0 .. speaker-7


def segments_html(segments, audio_elem_id: str) -> str:
    """A table of `segments` (objects with start, end, text and optionally words); clicking a row or a word
    plays the audio of the component `audio_elem_id` from there."""
    spoken = [segment for segment in segments if segment.text.strip()]
    if not spoken:
        return '<p class="segments-empty">No speech found.</p>'
    rows = "".join(_row(segment) for segment in spoken)
    return (f'<div class="segments" data-audio="{escape(audio_elem_id)}">'
            '<table class="result-table"><thead><tr><th class="time">time</th><th>text</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></div>")


def clock(seconds: float) -> str:
    """7.26 -> '0:07.3', 3725.0 -> '1:02:05.0'."""
    tenths = max(0, round(seconds * 10))
    hours, tenths = divmod(tenths, 36_000)
    minutes, tenths = divmod(tenths, 600)
    whole, tenth = divmod(tenths, 10)
    return f"{hours}:{minutes:02d}:{whole:02d}.{tenth}" if hours else f"{minutes}:{whole:02d}.{tenth}"


def _row(segment) -> str:
    span = f'<span class="clock">{clock(segment.start)}</span> – <span class="clock">{clock(segment.end)}</span>'
    words = getattr(segment, "words", None)
    text = _words(words) if words else escape(segment.text.strip())
    speaker = getattr(segment, "speaker", None)
    voice = ""
    if speaker is not None:  # coloured by speaker (style.py), the label before the text
        voice = f' speaker-{_speaker_number(speaker) % SPEAKER_COLOURS}" data-speaker="{escape(speaker)}'
        text = f'<span class="speaker">{escape(speaker)}</span> {text}'
    return (f'<tr class="segment{voice}" data-start="{segment.start:.3f}" tabindex="0" '
            f'title="play from {clock(segment.start)}"><td class="time">{span}</td><td class="text">{text}</td></tr>')

def _speaker_number(label: str) -> int:
    digits = "".join(character for character in label if character.isdigit())
    return int(digits) if digits else sum(map(ord, label))


def _words(words) -> str:
    spans = []
    for word in words:
        text = (getattr(word, "word", None) or getattr(word, "text", "")).strip()
        spans.append(f'<span class="word" data-start="{word.start:.3f}" '
                     f'title="{clock(word.start)} – {clock(word.end)}">{escape(text)}</span>')
    return " ".join(spans)
