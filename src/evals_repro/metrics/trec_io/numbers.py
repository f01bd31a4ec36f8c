"""Decimal numbers read straight from a block's bytes, eight at a time, exactly as Python's float() and int().

A score such as `-12.345678` is read as two little-endian words taken from the block where the field starts;
the sign and the point are cut out with shifts and masks, the digits checked to be digits and turned into
an integer with three multiplications per word (the SWAR method of simdjson and fast_float). A field of
at most 16 bytes with a point has at most 15 digits, so that integer D is below 2**53 and exact as a double,
and D / 10**k is one correctly rounded IEEE division of two exact doubles: what a correctly rounding parser
such as float() returns (Clinger's fast path). Without a point D has up to 16 digits and is rounded once,
as float() rounds it. Anything else (an exponent, more digits, `inf`, `1_000`, a field
that is not a number) goes to NumPy's cast from bytes, which calls Python's own parser on it.
"""

from __future__ import annotations

import numpy as np

_U = np.uint64
_ONES = _U(0x0101010101010101)
_HIGH_BITS = _U(0x8080808080808080)
_POINTS = _U(0x2E2E2E2E2E2E2E2E)
_ZEROS = _U(0x3030303030303030)
_NIBBLES = _U(0xF0F0F0F0F0F0F0F0)
_SIXES = _U(0x0606060606060606)
_THREES = _U(0x3333333333333333)
_BYTE_INDEX = _U(0x0706050403020100)
# A little-endian word's lowest n bytes, for n = 0..8.
LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(9)], np.uint64)
_POWERS = 10.0 ** np.arange(17)  # exact doubles


def words_at(block: bytes) -> np.ndarray:
    """Every eight bytes of the block as a little-endian word, word i starting at byte i (unaligned reads)."""
    return np.ndarray((max(len(block) - 7, 0),), np.dtype("<u8"), block, strides=(1,))


def _digits_value(word: np.ndarray) -> np.ndarray:
    """Eight ASCII digits (first byte most significant) as their integer value."""
    word = (word & _U(0x0F0F0F0F0F0F0F0F)) * _U(2561) >> _U(8)
    word = (word & _U(0x00FF00FF00FF00FF)) * _U(6553601) >> _U(16)
    return (word & _U(0x0000FFFF0000FFFF)) * _U(42949672960001) >> _U(32)


def _all_digits(word: np.ndarray) -> np.ndarray:
    return ((word & _NIBBLES) | (((word + _SIXES) & _NIBBLES) >> _U(4))) == _THREES


def _first_point(word: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(has a `.`, index of the first `.` byte) of each word (its zero bytes are no `.`)."""
    x = word ^ _POINTS
    found = (x - _ONES) & ~x & _HIGH_BITS  # exact at the lowest match, which is all we read
    lowest = found & (~found + _U(1))
    index = _U(7) - (((lowest >> _U(7)) * _BYTE_INDEX) >> _U(56))
    return found != 0, index.astype(np.int64)


def _decimals(block: bytes, starts: np.ndarray, ends: np.ndarray):
    """(magnitude D, digits after the point k, negative, has a point, read here) for fields of up to 16 bytes."""
    if len(block) < 16:
        block += bytes(16)  # a tiny block: zeros past its end, which no field reaches
    words = words_at(block)
    lengths = ends - starts
    if int(lengths.max()) <= 8:
        return _short_decimals(words, starts, lengths)
    ok = (lengths >= 1) & (lengths <= 16) & (starts + np.where(lengths > 8, 16, 8) <= len(block))
    at = np.minimum(starts, len(words) - 1)
    low = words[at] & LOW_BYTES[np.clip(lengths, 0, 8)]
    high = words[np.minimum(at + 8, len(words) - 1)] & LOW_BYTES[np.clip(lengths - 8, 0, 8)]
    first = low & _U(0xFF)
    negative = first == _U(ord("-"))
    signed = negative | (first == _U(ord("+")))
    if signed.any():
        low = np.where(signed, (low >> _U(8)) | (high << _U(56)), low)
        high = np.where(signed, high >> _U(8), high)
    count = lengths - signed
    in_low, point_low = _first_point(low)
    in_high, point_high = _first_point(high)
    has_point = in_low | in_high
    point = np.where(in_low, point_low, np.where(in_high, point_high + 8, count))
    # Cut the point out: bytes past it move down one.
    keep_low = LOW_BYTES[np.minimum(point, 8)]
    keep_high = LOW_BYTES[np.clip(point - 8, 0, 8)]
    low = (low & keep_low) | (((low >> _U(8)) | (high << _U(56))) & ~keep_low)
    high = (high & keep_high) | ((high >> _U(8)) & ~keep_high)
    count = count - has_point
    ok &= count >= 1
    # Leading zeros: shift the 16 bytes up by 16 - count bytes, so the last digit is the last byte.
    pad = 8 * (16 - np.clip(count, 1, 16)).astype(np.uint64)
    high = (high << pad) | (low >> (_U(64) - pad)) | (low << (pad - _U(64)))
    low = low << pad
    pad_low = LOW_BYTES[np.clip(16 - count, 0, 8)]
    pad_high = LOW_BYTES[np.clip(8 - count, 0, 8)]
    ok &= _all_digits(low | (_ZEROS & pad_low)) & _all_digits(high | (_ZEROS & pad_high))
    magnitude = _digits_value(low) * _U(100_000_000) + _digits_value(high)
    after = np.where(has_point, count - point, 0)
    return magnitude, after, negative, has_point, ok


def _short_decimals(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray):
    """`_decimals` when no field is longer than a word (`19.9610`): one word each, half the work."""
    ok = (lengths >= 1) & (starts < len(words))
    word = words[np.minimum(starts, len(words) - 1)] & LOW_BYTES[lengths]
    first = word & _U(0xFF)
    negative = first == _U(ord("-"))
    signed = negative | (first == _U(ord("+")))
    if signed.any():
        word = np.where(signed, word >> _U(8), word)
    count = lengths - signed
    has_point, point = _first_point(word)
    point = np.where(has_point, point, count)
    keep = LOW_BYTES[np.minimum(point, 8)]
    word = (word & keep) | ((word >> _U(8)) & ~keep)
    count -= has_point
    ok &= count >= 1
    padding = 8 - np.clip(count, 1, 8)
    word <<= _U(8) * padding.astype(np.uint64)
    ok &= _all_digits(word | (_ZEROS & LOW_BYTES[padding]))
    after = np.where(has_point, count - point, 0)
    return _digits_value(word), after, negative, has_point, ok


def read_floats(block: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The fields as doubles, each exactly float(field); None when one is not a number (or is NaN)."""
    magnitude, after, negative, _, ok = _decimals(block, starts, ends)
    values = magnitude.astype(np.float64) / _POWERS[np.where(ok, after, 0)]
    np.negative(values, out=values, where=negative)
    if not ok.all():
        rest = np.flatnonzero(~ok)
        try:
            exact = _fixed_width(block, starts[rest], ends[rest]).astype(np.float64)  # Python's float() parser
        except ValueError:
            return None
        if np.isnan(exact).any():
            return None
        values[rest] = exact
    return values


def read_ints(block: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray | None:
    """The fields as integers, each exactly int(field); None when one is not an integer or not within int64."""
    magnitude, _, negative, has_point, ok = _decimals(block, starts, ends)
    ok &= ~has_point  # int() takes no point, not even `7.`
    values = magnitude.astype(np.int64)
    np.negative(values, out=values, where=negative)
    if not ok.all():
        rest = np.flatnonzero(~ok)
        try:
            values[rest] = _fixed_width(block, starts[rest], ends[rest]).astype(np.int64)  # Python's int()
        except (ValueError, OverflowError):
            return None
    return values


def _fixed_width(block: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The fields as a NumPy bytes array (NUL-padded to the longest; the block holds no NUL)."""
    lengths = ends - starts
    width = max(int(lengths.max(initial=0)), 1)
    data = np.frombuffer(block, np.uint8)
    offsets = np.arange(width)
    index = starts[:, None] + offsets
    np.minimum(index, len(data) - 1, out=index)
    table = data[index]
    table[offsets >= lengths[:, None]] = 0
    return table.view(f"S{width}").ravel()
