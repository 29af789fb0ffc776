"""LSNs as the command reads and prints them: ``e<epoch>n<esn>``, as :func:`seaway.lsn_str` prints them.
The library's own messages spell LSNs the same way.
"""

from __future__ import annotations

import re

from seaway.errors import InvalidArgumentError

LSN_HELP = "e<epoch>n<esn> as printed, a decimal integer, or 0x hex"
LSN_TEXT_CHARS_MAX = 64
"""Longer text is refused before it is parsed (an LSN takes at most 22 characters)."""

_EPOCH_ESN = re.compile(r"e([0-9]+)n([0-9]+)")
_DECIMAL = re.compile(r"[0-9]+")
_HEX = re.compile(r"0x([0-9a-f]+)")


def parse_lsn(text: str) -> int:
    """The LSN that ``text`` spells: ``e<epoch>n<esn>`` (as :func:`lsn_str` prints it), a decimal
    integer, or ``0x`` hex; letters in either case, spaces around it ignored.

    Raises :class:`InvalidArgumentError` for any other text, or for an LSN outside ``[0, 2**64 - 1]``
    (an epoch or esn outside 32 bits). Whether the operation accepts the LSN is the operation's to say.
    """
    from seaway.log import EPOCH_MAX, ESN_MAX, LSN_MAX, lsn_str, make_lsn  # noqa: PLC0415 - not for --help

    if not isinstance(text, str) or len(text) > LSN_TEXT_CHARS_MAX:
        raise InvalidArgumentError(f"an LSN is at most {LSN_TEXT_CHARS_MAX} characters, got {text!r:.80}")
    spelled = text.strip().lower()
    if match := _EPOCH_ESN.fullmatch(spelled):
        epoch, esn = int(match[1]), int(match[2])
        if epoch > EPOCH_MAX or esn > ESN_MAX:
            raise InvalidArgumentError(f"LSN {text!r}: the epoch and the esn are each at most {EPOCH_MAX}")
        return make_lsn(epoch, esn)
    if _DECIMAL.fullmatch(spelled):
        lsn = int(spelled)
    elif match := _HEX.fullmatch(spelled):
        lsn = int(match[1], 16)
    else:
        raise InvalidArgumentError(f"an LSN is e<epoch>n<esn> (as printed), a decimal integer or 0x hex, "
                                   f"got {text!r}")
    if lsn > LSN_MAX:
        raise InvalidArgumentError(f"LSN {text!r} is above the largest LSN, {lsn_str(LSN_MAX)} (2**64 - 1)")
    return lsn
