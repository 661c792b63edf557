"""Token alignment and the sign-dependent diagnostic weights (paper 3.5, B.4, G.3).

Alignment. Per-token character spans come from the GENERATED token ids by incremental decoding,
never from re-tokenising the text, so the weights line up with exactly the tokens in the loss.
``token_offsets`` decodes a short sliding window of ids and takes what each new id adds. An id that
ends inside a multi-byte character (the decode ends in U+FFFD) is given that character as well, and
the id that completes it starts at that character: both tokens overlap the split character, so a
span containing it reaches both. Ids that decode to nothing (skipped special tokens) get an empty
span ``(p, p)`` and overlap nothing. For byte-level BPE tokenizers a vectorised fast path gathers each
id's bytes (the ByteLevel decoder's own rule) and counts UTF-8 lead bytes; it gives identical spans
whenever the bytes are valid UTF-8 (checked with a strict decode of those bytes, not a second full
decode; ``verify=True`` adds that decode for debugging); otherwise the window path runs.

Membership (``token_membership``): a token is DIRECT if it overlaps a direct span, else CONTEXT if
it overlaps a context span, else OTHER; direct wins where they overlap. The codes and the weight rule
that reads them live in ``tasks.attribution.weights``.

Prompt positions get the baseline and are excluded from the loss; weights are shifted with the
targets: position t of the packed sequence weights the prediction of token t+1.

Run: ``python -c "from tasks.attribution.tokens import token_offsets, load_tokenizer; ..."``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from tasks.attribution.weights import CONTEXT, DIRECT, MEMBERSHIP_DTYPE

_FFFD = "\ufffd"


class Decoder(Protocol):
    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str: ...


def load_tokenizer(path: str | Path):  # -> tokenizers.Tokenizer
    """A Hugging Face tokenizer directory (with ``tokenizer.json``) or the ``tokenizer.json`` file."""
    from tokenizers import Tokenizer

    p = Path(path)
    file = p / "tokenizer.json" if p.is_dir() else p
    if not file.is_file():
        raise ValueError(f"no tokenizer.json at {p}; pass a Hugging Face tokenizer directory (save_pretrained output)")
    return Tokenizer.from_file(str(file))


def _window_offsets(ids: Sequence[int], dec: Decoder, skip: bool, context: int = 4,
                    block: int = 32) -> list[tuple[int, int]]:
    """Incremental decoding over a sliding window of ids; see the module docstring for the rules."""
    n, out, pos = len(ids), [], 0
    ws, prev_stable = 0, 0  # window start; stable length of decode(ids[ws:i])
    for i in range(n):
        text = dec.decode(list(ids[ws:i + 1]), skip_special_tokens=skip)
        partial = text.endswith(_FFFD) and i < n - 1
        stable = len(text.rstrip(_FFFD)) if partial else len(text)
        grow = max(stable - prev_stable, 0)
        # an id that decodes to nothing (a skipped special token) overlaps nothing, even while a
        # split character is pending around it
        empty = partial and grow == 0 and dec.decode([ids[i]], skip_special_tokens=skip) == ""
        out.append((pos, pos) if empty else (pos, pos + grow + (1 if partial else 0)))
        pos, prev_stable = pos + grow, stable
        if not partial and i + 1 - ws >= block:  # slide: keep a few ids of left context
            ws = i + 1 - context
            prev_stable = len(dec.decode(list(ids[ws:i + 1]), skip_special_tokens=skip))
    return out


def _byte_level_table() -> dict[str, int]:
    """GPT-2's byte <-> printable-character table used by ByteLevel pre-tokenizers and decoders."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(bs, cs)}


class _ByteVocab:
    """Bytes of every id of a ByteLevel tokenizer, as flat arrays, built once per tokenizer object.

    Each id's bytes follow the ByteLevel decoder's own rule: a token whose characters are all in the
    byte table decodes to those bytes, any other token (an added token like ``<|endoftext|>`` whose
    characters are outside the table) to its UTF-8. Added tokens are checked once against the
    tokenizer's own ``decode``; a mismatch disables the fast path for this tokenizer.
    """

    _cache: dict[int, tuple[object, "_ByteVocab"]] = {}

    def __init__(self, tok) -> None:
        table = _byte_level_table()
        self.ok = True
        pieces: dict[int, bytes] = {}
        special: set[int] = set()

        def to_bytes(piece: str) -> bytes:
            if all(ch in table for ch in piece):
                return bytes(table[ch] for ch in piece)
            return piece.encode("utf-8")

        for piece, i in tok.get_vocab(with_added_tokens=False).items():
            if any(ch not in table for ch in piece):
                self.ok = False
                return
            pieces[i] = bytes(table[ch] for ch in piece)
        for i, added in tok.get_added_tokens_decoder().items():
            pieces[i] = to_bytes(added.content)
            if added.special:
                special.add(i)
            if tok.decode([i], skip_special_tokens=False) != pieces[i].decode("utf-8", errors="replace"):
                self.ok = False
                return
        self.pieces, self.special = pieces, special
        size = max(pieces, default=-1) + 1
        # known[i]: id i exists; length[i] / offset[i]: its bytes in blob (skipped specials: see lengths())
        self.known = np.zeros(size, dtype=bool)
        self.length = np.zeros(size, dtype=np.int64)
        self.offset = np.zeros(size, dtype=np.int64)
        self.is_special = np.zeros(size, dtype=bool)
        order = sorted(pieces)
        self.known[order] = True
        self.length[order] = [len(pieces[i]) for i in order]
        self.offset[order] = np.concatenate([[0], np.cumsum(self.length[order])[:-1]]) if order else []
        self.is_special[list(special)] = True
        self.blob = np.frombuffer(b"".join(pieces[i] for i in order), dtype=np.uint8)
        # chars[i]: characters of id i when its bytes are valid UTF-8 on their own, else -1 (a piece
        # of a split character); a sequence of such ids needs no byte-level work at all
        self.chars = np.full(size, -1, dtype=np.int64)
        for i in order:
            try:
                self.chars[i] = len(pieces[i].decode("utf-8"))
            except UnicodeDecodeError:
                pass

    @classmethod
    def of(cls, tok) -> "_ByteVocab":
        hit = cls._cache.get(id(tok))
        if hit is None or hit[0] is not tok:  # id() reuse after garbage collection
            hit = (tok, cls(tok))
            cls._cache[id(tok)] = hit
        return hit[1]  # type: ignore[return-value]


def _byte_offsets_array(ids: np.ndarray, tok, skip: bool, need_text: bool = True) -> tuple[np.ndarray, str | None] | None:
    """Fast exact path for ByteLevel decoders, vectorised: (T, 2) spans and the decoded text (None
    unless ``need_text``, when every id is whole characters and no bytes were needed).

    None when it cannot be exact: the decoder is not plain ByteLevel over a byte vocabulary, an id
    is unknown, or the concatenated bytes are not valid UTF-8 (the decoder's lossy replacement
    would then change the character count; the window path handles that case).
    """
    vocab = _ByteVocab.of(tok)
    if not vocab.ok or (len(ids) and (ids.min() < 0 or ids.max() >= len(vocab.known) or not vocab.known[ids].all())):
        return None
    chars = vocab.chars[ids]  # (T,)
    if not need_text and (chars >= 0).all():  # whole characters per id: spans are running sums
        if skip:
            chars = np.where(vocab.is_special[ids], 0, chars)
        end = np.cumsum(chars)
        return np.stack([end - chars, end], axis=1), None
    lengths = vocab.length[ids]  # (T,)
    if skip:
        lengths = np.where(vocab.is_special[ids], 0, lengths)
    bounds = np.zeros(len(ids) + 1, dtype=np.int64)  # (T+1,) byte offset of each token in the decode
    np.cumsum(lengths, out=bounds[1:])
    total = int(bounds[-1])
    # gather every token's bytes from the blob: byte k of token t is blob[offset[id_t] + k]
    gather = np.repeat(vocab.offset[ids] - bounds[:-1], lengths) + np.arange(total, dtype=np.int64)
    raw = vocab.blob[gather]  # (B,)
    try:
        text = raw.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        return None
    lead = (raw & 0xC0) != 0x80
    chars_before = np.zeros(total + 1, dtype=np.int64)  # (B+1,) characters starting before byte b
    np.cumsum(lead, out=chars_before[1:])
    b0, b1 = bounds[:-1], bounds[1:]
    nonempty = b1 > b0
    # a token starting on a continuation byte starts at the character that byte belongs to (an
    # empty token there sits inside that character: its empty span is placed at it)
    starts_mid = np.zeros(len(ids), dtype=np.int64)
    inside = b0 < total
    starts_mid[inside] = ~lead[b0[inside]]
    start = chars_before[b0] - starts_mid
    end = np.where(nonempty, chars_before[b1], start)
    return np.stack([start, end], axis=1), text


def _byte_offsets(ids: Sequence[int], tok, skip: bool) -> tuple[list[tuple[int, int]], str] | None:
    """List form of ``_byte_offsets_array`` (spans as tuples)."""
    got = _byte_offsets_array(np.asarray(ids, dtype=np.int64).reshape(-1), tok, skip)
    if got is None:
        return None
    return [(s, e) for s, e in got[0].tolist()], got[1]


def _first_difference(a: str, b: str) -> int:
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def token_offsets_array(ids: Sequence[int] | np.ndarray, tokenizer, *, skip_special_tokens: bool = True,
                        expected_text: str | None = None, verify: bool = False) -> np.ndarray:
    """(T, 2) int64 character spans of the generated ids (the hot path of training).

    ``expected_text`` (the response string the spans index) is checked against the decode of the
    ids; a mismatch is an error, since weights would then land on the wrong tokens. ``verify``
    (debugging) also compares the fast path's text with the tokenizer's full decode; without it the
    fast path needs no full decode, its bytes being the decoder's own by construction.
    """
    arr = np.asarray(ids, dtype=np.int64).reshape(-1)
    fast = None
    from tokenizers import decoders

    if isinstance(getattr(tokenizer, "decoder", None), decoders.ByteLevel):
        fast = _byte_offsets_array(arr, tokenizer, skip_special_tokens,
                                   need_text=verify or expected_text is not None)
    if fast is not None and not verify and expected_text is None:
        return fast[0]
    ids_list = arr.tolist()
    full = fast[1] if fast is not None and not verify else tokenizer.decode(ids_list, skip_special_tokens=skip_special_tokens)
    if expected_text is not None and full != expected_text:
        raise ValueError(
            "the response text is not the decode of these token ids; pass the text decoded from the generated ids "
            f"with skip_special_tokens={skip_special_tokens} (first difference at char "
            f"{_first_difference(full, expected_text)})"
        )
    if fast is not None:
        if verify and fast[1] != full:
            raise AssertionError(f"byte fast path disagrees with the tokenizer's decode at char {_first_difference(fast[1], full)}")
        return fast[0]
    return np.asarray(_window_offsets(ids_list, tokenizer, skip_special_tokens), dtype=np.int64).reshape(-1, 2)


def token_offsets(ids: Sequence[int], tokenizer, *, skip_special_tokens: bool = True,
                  expected_text: str | None = None, verify: bool = False) -> list[tuple[int, int]]:
    """Character span of every generated id in the decoded response, as a list of ``(start, end)``.

    See ``token_offsets_array`` (same rules; that one skips building Python tuples).
    """
    out = token_offsets_array(ids, tokenizer, skip_special_tokens=skip_special_tokens,
                              expected_text=expected_text, verify=verify)
    return [(s, e) for s, e in out.tolist()]


def token_membership(offsets: Sequence[tuple[int, int]], direct: Sequence[tuple[int, int]],
                     context: Sequence[tuple[int, int]]) -> np.ndarray:
    """(T,) membership codes (int8): DIRECT if a token overlaps a direct span, else CONTEXT if it
    overlaps a context span, else OTHER."""
    if not len(offsets):
        return np.zeros(0, dtype=MEMBERSHIP_DTYPE)
    off = offsets if isinstance(offsets, np.ndarray) else np.asarray(offsets, dtype=np.int64)
    off = off.reshape(-1, 2)
    s, e = off[:, 0], off[:, 1]
    out = np.zeros(len(off), dtype=MEMBERSHIP_DTYPE)  # OTHER
    for value, spans in ((CONTEXT, context), (DIRECT, direct)):
        merged = merge_intervals(spans)
        if not merged:
            continue
        a = np.asarray([m[0] for m in merged])
        b = np.asarray([m[1] for m in merged])
        j = np.searchsorted(b, s, side="right")  # first span ending after the token starts
        jc = np.minimum(j, len(b) - 1)
        hit = (j < len(b)) & (a[jc] < e) & (e > s)
        out[hit] = value  # DIRECT is written last: it wins
    return out


def merge_intervals(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, overlapping or touching intervals merged; empty ones dropped."""
    out: list[list[int]] = []
    for s, e in sorted((int(s), int(e)) for s, e in spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def align_with_targets(prompt_len: int, response_weights: Sequence[float], *, baseline: float = 1.0,
                       total_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pack prompt + response weights and shift them with the targets.

    The packed sequence has ``prompt_len + R`` tokens (padded with the baseline to ``total_len``).
    Returns ``(weights, loss_mask)``, both ``(L-1,)``: entry t belongs to the prediction of token t+1;
    the mask is True only where token t+1 is a response token (prompt and padding are excluded).
    """
    r = np.asarray(response_weights, dtype=np.float64)
    length = prompt_len + len(r)
    if prompt_len < 1:
        raise ValueError(f"prompt_len={prompt_len}; a packed sequence needs at least one prompt token to predict from")
    if total_len is not None and total_len < length:
        raise ValueError(f"total_len={total_len} < prompt_len + response tokens = {length}; raise total_len")
    full_len = total_len or length
    per_token = np.full(full_len, baseline, dtype=np.float64)  # (L,) baseline on prompt and padding
    per_token[prompt_len:length] = r
    target = np.arange(1, full_len)  # (L-1,) index of the token each position predicts
    mask = (target >= prompt_len) & (target < length)
    return per_token[1:], mask
