"""Token alignment from generated ids, membership, the sign-dependent weights, the shift."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.attribution.tokens import _window_offsets, align_with_targets, load_tokenizer, token_membership, token_offsets
from tasks.attribution.weights import weights_from_membership
from tests.fixtures.attribution.make_tokenizer import byte_level, metaspace


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    return load_tokenizer(byte_level(tmp_path_factory.mktemp("bpe")))


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    return load_tokenizer(metaspace(tmp_path_factory.mktemp("sp")))


TEXT = "let s = '😀€日本'; // héllo ♠\nscore += 10;"


def test_offsets_from_generated_ids_cover_split_multibyte_characters(bpe):
    ids = bpe.encode(TEXT).ids + [bpe.token_to_id("<|endoftext|>")]
    pieces = [bpe.id_to_token(i) for i in ids]
    offsets = token_offsets(ids, bpe, expected_text=TEXT)
    assert len(offsets) == len(ids)
    # the emoji is 4 bytes; this small vocabulary splits it over several ids, all of which overlap it
    emoji = TEXT.index("😀")
    on_emoji = [k for k, (s, e) in enumerate(offsets) if s <= emoji < e]
    assert len(on_emoji) >= 2 and all(offsets[k] == (emoji, emoji + 1) for k in on_emoji)
    assert offsets[-1] == (len(TEXT), len(TEXT))  # skipped special token: empty span
    # spans are contiguous and cover the text
    assert offsets[0][0] == 0 and max(e for _, e in offsets) == len(TEXT)
    assert all(offsets[k + 1][0] <= offsets[k][1] for k in range(len(offsets) - 1))
    assert len(pieces) == len(ids)


def test_window_path_equals_byte_fast_path(bpe):
    text = (TEXT * 30)[:2000]
    ids = bpe.encode(text).ids
    from tasks.attribution.tokens import _byte_offsets

    assert _window_offsets(ids, bpe, True) == _byte_offsets(ids, bpe, True)[0]


def test_metaspace_leading_space_is_not_lost(sp):
    text = "let total = 0; total++"
    ids = sp.encode(text).ids
    full = sp.decode(ids)
    offsets = token_offsets(ids, sp, expected_text=full)
    assert "".join(full[s:e] for s, e in offsets) == full


def test_text_that_is_not_the_decode_of_the_ids_is_refused(bpe):
    ids = bpe.encode("abc def").ids
    with pytest.raises(ValueError, match="decoded from the generated ids"):
        token_offsets(ids, bpe, expected_text="abc  def")


# hand-computed: tokens of 4 chars; direct [5,9), context [0,5) and [9,14)
OFFSETS = [(0, 4), (4, 8), (8, 12), (12, 16), (16, 20), (20, 20)]
DIRECT, CONTEXT = [(5, 9)], [(0, 5), (9, 14)]
MEMBERSHIP = [1, 2, 2, 1, 0, 0]
TABLE = [
    # (advantage, status, mode, weights)
    (-0.7, "localised", "sign", [1.5, 3.0, 3.0, 1.5, 1.0, 1.0]),
    (0.4, "localised", "sign", [1.0, 1.0, 1.0, 1.0, 1.2, 1.2]),
    (0.0, "localised", "sign", [1.0] * 6),
    (-0.7, "unlocalised", "sign", [1.0] * 6),
    (0.4, "unlocalised", "sign", [1.0] * 6),
    (-0.7, "localised", "unconditional", [1.5, 3.0, 3.0, 1.5, 1.0, 1.0]),
    (0.4, "localised", "unconditional", [-1.5, -3.0, -3.0, -1.5, 1.0, 1.0]),
    (0.0, "localised", "unconditional", [1.0] * 6),
    (0.4, "unlocalised", "unconditional", [1.0] * 6),
]


def test_membership_direct_wins_over_context():
    assert token_membership(OFFSETS, DIRECT, CONTEXT).tolist() == MEMBERSHIP


@pytest.mark.parametrize("advantage,status,mode,expected", TABLE)
def test_weights_match_hand_computed_table(advantage, status, mode, expected):
    m = token_membership(OFFSETS, DIRECT, CONTEXT)
    w = weights_from_membership(m, advantage, status, rule=mode)
    assert w.tolist() == pytest.approx(expected)


def test_unconditional_mode_pushes_diagnosed_tokens_down_for_positive_advantage():
    m = token_membership(OFFSETS, DIRECT, CONTEXT)
    a = 0.4
    w = weights_from_membership(m, a, "localised", rule="unconditional")
    effective = a * w  # what the objective multiplies each token's log-ratio by
    assert (effective[m > 0] < 0).all() and (effective[m == 0] > 0).all()


def test_no_findings_follows_the_ordinary_sign_rule():
    m = token_membership(OFFSETS, [], [])
    assert weights_from_membership(m, -1.0, "no_findings").tolist() == [1.0] * 6
    assert weights_from_membership(m, 1.0, "no_findings").tolist() == pytest.approx([1.2] * 6)
    with pytest.raises(ValueError, match="drop it"):
        weights_from_membership(m, float("nan"), "no_findings")


def test_prompt_baseline_excluded_and_shifted_with_targets():
    weights, mask = align_with_targets(3, [3.0, 1.5, 1.0], total_len=8)
    # packed: p0 p1 p2 r0 r1 r2 pad pad; position t predicts token t+1
    assert weights.tolist() == [1.0, 1.0, 3.0, 1.5, 1.0, 1.0, 1.0]
    assert mask.tolist() == [False, False, True, True, True, False, False]
    with pytest.raises(ValueError, match="raise total_len"):
        align_with_targets(3, [1.0] * 4, total_len=5)


@st.composite
def spans(draw, n):
    out = []
    for _ in range(draw(st.integers(0, 4))):
        a = draw(st.integers(0, n))
        out.append((a, draw(st.integers(a, n))))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=0, max_size=60), st.data(),
       st.floats(-3, 3, allow_nan=False), st.sampled_from(["localised", "unlocalised", "no_findings"]),
       st.sampled_from(["sign", "unconditional"]))
def test_property_one_weight_per_token_only_allowed_values(lengths, data, advantage, status, mode):
    offsets, pos = [], 0
    for n in lengths:
        offsets.append((pos, pos + n))
        pos += n
    direct, context = data.draw(spans(pos)), data.draw(spans(pos))
    if status != "localised":
        direct, context = [], [] if status == "no_findings" else data.draw(spans(pos))
    m = token_membership(offsets, direct, context)
    w = weights_from_membership(m, advantage, status, rule=mode)
    assert w.shape == (len(offsets),)
    allowed = {1.0}
    if status != "unlocalised" and advantage < 0:
        allowed |= {3.0, 1.5}
    if status != "unlocalised" and advantage > 0:
        allowed |= {1.2} if mode == "sign" else {-3.0, -1.5}
    assert set(np.round(w, 6).tolist()) <= {round(x, 6) for x in allowed}
    # a token inside a direct span is always direct
    for k, (s, e) in enumerate(offsets):
        if any(s < b and e > a and a < b for a, b in direct) and s < e:
            assert m[k] == 2
