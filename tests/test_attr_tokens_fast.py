"""The vectorised token-offset paths (no full decode on the hot path) give exactly the spans of
incremental window decoding, for any id sequence: whole-character ids, ids that split multi-byte
characters, invalid byte sequences (window path), skipped and kept special tokens."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.attribution.tokens import (
    _ByteVocab, _window_offsets, load_tokenizer, token_membership, token_offsets, token_offsets_array,
)
from tests.fixtures.attribution.make_tokenizer import byte_level


@pytest.fixture(scope="module")
def bpe(tmp_path_factory):
    return load_tokenizer(byte_level(tmp_path_factory.mktemp("bpe_fast")))


TEXTS = ["let s = '😀€日本'; // héllo ♠\nscore += 10;", "plain ascii only", "♠♥♦♣ — ✓ 😀😀", ""]


@pytest.mark.parametrize("text", TEXTS)
def test_array_and_list_forms_agree_with_window_decoding(bpe, text):
    ids = bpe.encode(text).ids + [bpe.token_to_id("<|endoftext|>")]
    arr = token_offsets_array(ids, bpe)
    assert isinstance(arr, np.ndarray) and arr.shape == (len(ids), 2)
    assert [tuple(r) for r in arr.tolist()] == token_offsets(ids, bpe) == _window_offsets(ids, bpe, True)
    # the debug path also decodes in full and compares; it must agree
    assert token_offsets(ids, bpe, verify=True, expected_text=text) == token_offsets(ids, bpe)
    assert token_offsets(np.asarray(ids), bpe) == token_offsets(ids, bpe)  # ids as an array


def test_split_characters_use_the_byte_path_and_whole_ones_the_count_path(bpe):
    vocab = _ByteVocab.of(bpe)
    ids = bpe.encode("😀").ids
    if len(ids) > 1:  # the small vocabulary splits the emoji: some pieces are not whole characters
        assert (vocab.chars[ids] < 0).any()
    assert (vocab.chars[bpe.encode("let x = 1;").ids] >= 0).all()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_property_any_id_sequence_matches_window_decoding(bpe, data):
    vocab_size = bpe.get_vocab_size()
    ids = data.draw(st.lists(st.integers(0, vocab_size - 1), max_size=40))
    skip = data.draw(st.booleans())
    expected = _window_offsets(ids, bpe, skip)
    assert token_offsets(ids, bpe, skip_special_tokens=skip) == expected
    text = bpe.decode(ids, skip_special_tokens=skip)
    assert token_offsets(ids, bpe, skip_special_tokens=skip, expected_text=text, verify=True) == expected


def test_membership_takes_the_offsets_array_directly():
    arr = np.array([[0, 4], [4, 8], [8, 12]])
    assert token_membership(arr, [(5, 6)], [(0, 12)]).tolist() == [1, 2, 1]
