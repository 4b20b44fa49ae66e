"""A live update's commit decision (live/commit.py), from hand-made hypotheses: tokens are words, a token > 100
starts a word with a space ("hello"), one <= 100 continues the word before it (",")."""

from __future__ import annotations

from asr_specdec.whisper.live.commit import Agreement, Commit, decide


def starts_word(token: int) -> bool:
    return token > 100


def no_skip(start: int) -> None:
    return None


HEARD = Agreement(in_buffer=(), tentative=(101, 102, 103), heard=True, context=True)


def test_two_heard_hypotheses_commit_the_whole_words_they_share():
    assert decide(HEARD, [101, 102, 104], True, False, no_skip, starts_word) == Commit(0, 2)
    assert decide(HEARD, [101, 102, 103, 105], True, False, no_skip, starts_word) == Commit(0, 3)
    # "102" then ",": the shared "102" may go on as "102," in one and not the other: cut back to a word's end
    assert decide(HEARD, [101, 102, 5, 106], True, False, no_skip, starts_word) == Commit(0, 1)


def test_nothing_is_agreed_with_an_unheard_a_too_short_or_an_unheard_new_hypothesis():
    for last in (Agreement((), (101, 102), heard=False, context=True), Agreement((), (101, 102), True, False)):
        assert decide(last, [101, 102], True, False, no_skip, starts_word).committed == 0
    assert decide(HEARD, [101, 102, 103], False, False, no_skip, starts_word).committed == 0


def test_the_end_of_a_stream_commits_all_and_skipped_speech_bounds_every_commit():
    assert decide(HEARD, [101, 107, 108], True, True, no_skip, starts_word) == Commit(0, 3)
    seen = []
    stops = decide(HEARD, [101, 102, 103], True, True, lambda start: seen.append(start) or 1, starts_word)
    assert stops == Commit(0, 1, (), 1) and seen == [0]  # told where the committed text ends


def test_committed_words_in_the_buffer_are_matched_and_ones_the_hypothesis_stops_short_of_are_kept():
    last = Agreement(in_buffer=(101, 102), tentative=(103, 104), heard=True, context=True)
    assert decide(last, [101, 102, 103, 104], True, False, no_skip, starts_word) == Commit(2, 4)
    short = decide(last, [101], True, False, no_skip, starts_word)
    assert short.start == 1 and short.unreached == (102,) and short.committed == 1  # nothing agreed past it


def test_a_decode_is_judged_silent_and_heard_by_its_scores_alone():
    from asr_specdec.whisper.live.commit import judge
    from asr_specdec.whisper.recipe.fallback import Recipe

    recipe = Recipe()  # no-speech threshold 0.6, log-probability threshold -1.0, silence threshold 0.8
    assert judge(None, None, recipe) == (False, True)  # no scores: heard, never silent
    assert judge(0.1, -2.0, recipe) == (False, True)
    assert judge(0.7, -0.5, recipe) == (False, False)  # likely text keeps it, but it is agreed with by nothing
    assert judge(0.7, -2.0, recipe) == (True, False)  # openai's rule
    assert judge(0.9, -0.5, recipe) == (True, False)  # over the silence threshold whatever its text
    assert judge(0.9, -2.0, Recipe(no_speech_threshold=None)) == (False, True)  # the no-speech test off
