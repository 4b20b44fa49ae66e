"""The drop-in's default beam search (CTranslate2's, 5 beams) under the project's default drafter and compute type
on real speech: exactly the plain search's segments. faster-whisper's own tests/test_transcribe.py is ported in
test_faster_whisper_reference.py, against faster-whisper itself."""

from __future__ import annotations

JFK = (" And so my fellow Americans, ask not what your country can do for you, "
       "ask what you can do for your country.")


def words(text: str) -> list[str]:
    return "".join(character for character in text.lower() if character.isalnum() or character.isspace()).split()


def test_default_beam_search_is_exact_under_speculation(model, plain_model, peer_audio):
    """faster-whisper's default, 5 beams: the default drafter's segments are the plain beam search's."""
    speculative = list(model.transcribe(str(peer_audio / "jfk.flac"))[0])
    plain = list(plain_model.transcribe(str(peer_audio / "jfk.flac"))[0])
    assert [segment.tokens for segment in speculative] == [segment.tokens for segment in plain]
    assert words("".join(segment.text for segment in speculative)) == words(JFK)  # the default compute type's text
