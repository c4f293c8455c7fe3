"""Checks of text from outside (arguments, environment, files): only ASCII digits make a number,
and a number has a bound, so nothing later allocates or waits by an absurd amount."""

import re

_DIGITS = re.compile(r"[0-9]{1,12}")


def whole_number(text, low, high):
    """The integer `text` spells when it is only digits and within [low, high], else None."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None
