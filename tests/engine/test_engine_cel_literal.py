"""CEL string literals for any text, checked against the CEL implementation the project depends on
(common-expression-language): HAMi's `use-gputype` values, whatever code points they hold, become a
selector that parses and matches exactly the product names that contain them."""

from __future__ import annotations

from typing import Any

import cel
from hypothesis import given, settings
from hypothesis import strategies as st

from dra_migrate.engine import NVIDIA_DRIVER, REPLACEMENT, cel_list, cel_string, hami_selectors


def _as_decoded(text: str) -> str:
    """What kube-apiserver's JSON decoder makes of `text`: lone surrogates become U+FFFD."""
    return "".join(REPLACEMENT if 0xD800 <= ord(char) <= 0xDFFF else char for char in text)


@settings(max_examples=400)
@given(st.text())
def test_every_text_is_a_cel_string_that_evaluates_to_itself(text: str) -> None:
    assert cel.evaluate(cel_string(text)) == _as_decoded(text)


@given(st.lists(st.text(), max_size=5))
def test_a_list_of_texts_is_a_cel_list_of_them(texts: list[str]) -> None:
    assert cel.evaluate(cel_list(texts)) == [_as_decoded(text) for text in texts]


def _device(product: str, uuid: str = "GPU-0") -> dict[str, Any]:
    return {"device": {"attributes": {NVIDIA_DRIVER: {"productName": product, "uuid": uuid}}}}


# A value as HAMi reads it: split on commas, spaces around each part dropped.
_VALUE = st.text(min_size=1).map(lambda text: text.replace(",", "").strip()).filter(bool)


@settings(max_examples=200)
@given(st.lists(_VALUE, min_size=1, max_size=4), st.text())
def test_use_gputype_selects_the_products_that_contain_a_value(values: list[str], other: str) -> None:
    [(_, use)] = hami_selectors({"nvidia.com/use-gputype": ",".join(values)})
    [(_, avoid)] = hami_selectors({"nvidia.com/nouse-gputype": ",".join(values)})
    for value in values:
        product = f"NVIDIA {_as_decoded(value)} 80GB"
        assert cel.evaluate(use, _device(product)) is True
        assert cel.evaluate(avoid, _device(product)) is False
    expected = any(_as_decoded(value) in other for value in values)
    assert cel.evaluate(use, _device(other)) is expected


def test_a_value_above_the_basic_plane_parses() -> None:
    """JSON's escaping wrote U+1F600 as a surrogate pair, which CEL refuses (the apiserver: 422)."""
    [(_, selector)] = hami_selectors({"nvidia.com/use-gputype": "A100\U0001f600"})
    assert cel.evaluate(selector, _device("NVIDIA A100\U0001f600")) is True


@given(st.lists(_VALUE, min_size=1, max_size=4))
def test_use_gpuuuid_selects_exactly_the_listed_uuids(uuids: list[str]) -> None:
    [(_, selector)] = hami_selectors({"nvidia.com/use-gpuuuid": ",".join(uuids)})
    for uuid in uuids:
        assert cel.evaluate(selector, _device("A100", uuid=_as_decoded(uuid))) is True
    assert cel.evaluate(selector, _device("A100", uuid="GPU-" + "x" * 41)) is ("GPU-" + "x" * 41 in uuids)
