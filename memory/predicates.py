"""Predicates and values: which statements can stand together, and which replace each other.

``Vocabulary`` maps any spelling of a predicate (``livesIn``, ``lives in``,
``location``) to its canonical spec; unknown predicates are normalised to
snake_case and count as ``many``. ``same_value`` and ``covers`` compare values
the way a person would: case, articles, possessives and plurals aside, and a
value covers another when its words include the other's ("meat" is covered by
"meat pretty much every day"; "咖啡" by "每天喝咖啡").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

from memory.tokens import is_cjk
from schemas.predicates import DEFAULT_PREDICATES, Cardinality, PredicateSpec

__all__ = [
    "Vocabulary",
    "canonical_subject",
    "covers",
    "excluded_by_diet",
    "normalize_predicate",
    "overlap",
    "refines",
    "same_value",
    "value_words",
]

_NON_WORD = re.compile(r"[^0-9a-z\u00c0-\u024f\u3400-\u9fff]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: Words that do not change what a value names.
_FILLER = frozenset(
    """
    a an the my his her their our your its some any one s user user's of
    really very quite just also too still currently now
    """.split()
)


@functools.lru_cache(maxsize=4096)
def normalize_predicate(name: str) -> str:
    """``livesIn`` / ``Lives in`` / ``lives-in`` -> ``lives_in``; ``user_`` and ``is_`` prefixes
    and a leading ``the`` are dropped only when something is left."""
    spaced = _CAMEL.sub("_", unicodedata.normalize("NFKC", name).strip())
    folded = _NON_WORD.sub("_", spaced.casefold().replace("'", "")).strip("_")
    for prefix in ("user_", "the_"):
        if folded.startswith(prefix) and len(folded) > len(prefix):
            folded = folded[len(prefix) :]
    return folded


def canonical_subject(subject: str | None) -> str:
    """``"user"`` for every way of naming the user; other subjects casefolded."""
    if subject is None:
        return "user"
    folded = " ".join(subject.split()).casefold()
    if folded in ("", "user", "the user", "i", "me", "myself", "用户", "我"):
        return "user"
    return folded


class Vocabulary:
    """The predicate vocabulary in force: built-in specs overlaid with configured ones."""

    __slots__ = ("_by_name", "_specs")

    def __init__(self, extra: Iterable[PredicateSpec] = ()) -> None:
        specs: dict[str, PredicateSpec] = {}
        for spec in (*DEFAULT_PREDICATES, *extra):
            specs[normalize_predicate(spec.name)] = spec
        self._specs = specs
        by_name: dict[str, PredicateSpec] = {}
        # Aliases first, so that a predicate's own name always wins over another's alias.
        for spec in specs.values():
            for alias in spec.aliases:
                by_name.setdefault(normalize_predicate(alias), spec)
        for name, spec in specs.items():
            by_name[name] = spec
        self._by_name = by_name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self._specs == other._specs

    def __hash__(self) -> int:
        return hash(tuple(self._specs))

    @property
    def specs(self) -> tuple[PredicateSpec, ...]:
        return tuple(self._specs.values())

    def spec(self, predicate: str | None) -> PredicateSpec | None:
        """The spec for any spelling of ``predicate``; None outside the vocabulary."""
        if predicate is None:
            return None
        return self._by_name.get(normalize_predicate(predicate))

    def canonical(self, predicate: str | None) -> str | None:
        """The vocabulary's name for ``predicate``, else its normalised spelling."""
        if predicate is None or not predicate.strip():
            return None
        spec = self.spec(predicate)
        return spec.name if spec is not None else normalize_predicate(predicate) or None

    def cardinality(self, predicate: str | None, stated: Cardinality | None = None) -> Cardinality:
        """The vocabulary's cardinality; outside it, what the extractor stated, else ``many``."""
        spec = self.spec(predicate)
        if spec is not None:
            return spec.cardinality
        return stated or "many"

    def opposite(self, predicate: str | None) -> str | None:
        spec = self.spec(predicate)
        return None if spec is None else spec.opposite

    def family(self, predicate: str | None) -> str | None:
        spec = self.spec(predicate)
        return None if spec is None else spec.family


def _kinds(table: dict[str, str]) -> dict[str, frozenset[str]]:
    return {kind: frozenset(members.split()) for kind, members in table.items()}


#: Kinds of food and drink that a value may name as a whole ("alcohol" covers "red wine").
_KINDS = _kinds(
    {
        "meat": "beef pork chicken lamb steak bacon ham sausage turkey veal mutton duck burger",
        "alcohol": "wine beer whisky whiskey vodka gin rum tequila sake cocktail liquor spirit"
        " champagne cider booze",
        "dairy": "milk cheese yogurt yoghurt butter cream",
        "seafood": "fish shrimp prawn crab lobster oyster clam mussel squid octopus salmon tuna"
        " shellfish scallop",
        "shellfish": "shrimp prawn crab lobster oyster clam mussel scallop",
        "coffee": "espresso latte cappuccino americano macchiato mocha",
        "caffeine": "coffee espresso latte cappuccino cola",
        "sugar": "sweet candy dessert chocolate soda",
        "nut": "peanut almond walnut cashew hazelnut pecan pistachio",
        "gluten": "bread pasta wheat",
        "animal": "meat fish dairy egg honey",
        "海鲜": "虾 蟹 鱼 龙虾 贝 扇贝 生蚝",
        "酒": "啤酒 红酒 白酒 葡萄酒 黄酒 威士忌 酒精",
        "肉": "牛肉 猪肉 鸡肉 羊肉 荤",
    }
)
#: What a diet leaves out: "vegetarian" makes "I don't eat meat" a repeat, not news.
_DIET_EXCLUDES = {
    "vegetarian": ("meat",),
    "vegan": ("meat", "dairy", "egg", "honey", "animal"),
    "pescatarian": ("meat",),
    "pescetarian": ("meat",),
    "plant-based": ("meat", "dairy", "egg", "animal"),
    "dairy-free": ("dairy",),
    "gluten-free": ("gluten",),
    "素食": ("肉",),
    "吃素": ("肉",),
    "纯素": ("肉",),
}


#: Other names of the same value ("广东话" is "粤语").
_SYNONYMS = {
    "广东话": "粤语",
    "白话": "粤语",
    "国语": "普通话",
    "汉语": "中文",
    "英文": "英语",
    "farsi": "persian",
    "deutsch": "german",
    "español": "spanish",
    "espanol": "spanish",
    "français": "french",
    "francais": "french",
    "italiano": "italian",
    "português": "portuguese",
    "portugues": "portuguese",
    "nihongo": "japanese",
    "coriander": "cilantro",
    "aubergine": "eggplant",
    "courgette": "zucchini",
}


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("es") and word[-3] in "sxz":
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=8192)
def value_words(value: str | None) -> tuple[str, ...]:
    """The words that say what a value names: casefolded, singular, fillers left out.
    Chinese text is kept as runs of characters (compared by containment)."""
    if not value:
        return ()
    text = unicodedata.normalize("NFKC", value).casefold().replace("\u2019", "'")
    words = []
    for raw in _NON_WORD.split(text):
        if not raw or raw in _FILLER:
            continue
        if raw[:1].isdigit():
            raw = raw.rstrip("stndrh") or raw  # 9th -> 9, 3rd -> 3
        raw = _SYNONYMS.get(raw, raw)
        words.append(raw if any(is_cjk(c) for c in raw) else _singular(raw))
    return tuple(words)


def _contains(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    if not inner:
        return False
    pool = set(outer)
    joined = "".join(outer)
    return all(word in pool or (any(is_cjk(c) for c in word) and word in joined) for word in inner)


def same_value(a: str | None, b: str | None) -> bool:
    """Whether two values name the same thing (``"Acme Corp"`` / ``"acme corp."``)."""
    left, right = value_words(a), value_words(b)
    if not left or not right:
        return False
    if sorted(left) == sorted(right):
        return True
    # Chinese values: the same characters, spaces aside.
    return "".join(left) == "".join(right)


def _kind_of(outer: tuple[str, ...], inner: tuple[str, ...]) -> bool:
    """``outer`` names a kind that a word of ``inner`` belongs to ("alcohol" / "red wine")."""
    for word in outer:
        members = _KINDS.get(word)
        if members is not None and any(
            w in members or any(m in w for m in members if _is_cjk_word(m)) for w in inner
        ):
            return True
    return False


def _is_cjk_word(word: str) -> bool:
    return any(is_cjk(c) for c in word)


def covers(a: str | None, b: str | None) -> bool:
    """Whether one value names the other with more words (``"meat"`` / ``"meat every day"``,
    ``"Acme"`` / ``"Acme Corp"``) or as a kind (``"alcohol"`` / ``"red wine"``), either way."""
    left, right = value_words(a), value_words(b)
    return (
        _contains(left, right)
        or _contains(right, left)
        or _kind_of(left, right)
        or _kind_of(right, left)
    )


_NAMED = re.compile(r"[,\s]*(?:named|called|叫)\s*\S+.*$", re.IGNORECASE)


def refines(old: str | None, new: str | None) -> bool:
    """Whether ``new`` is ``old`` with a name added ("a dog" -> "a dog named Rex")."""
    if not old or not new or _NAMED.search(old):
        return False
    bare = _NAMED.sub("", new)
    return bare != new and same_value(old, bare)


def overlap(a: str | None, b: str | None) -> bool:
    """Whether two values share a word (Chinese: a character), or either is missing."""
    left, right = value_words(a), value_words(b)
    if not left or not right:
        return True
    if set(left) & set(right):
        return True
    chinese = {c for w in left if _is_cjk_word(w) for c in w}
    return any(c in chinese for w in right if _is_cjk_word(w) for c in w) or covers(a, b)


def excluded_by_diet(diet: str | None, food: str | None) -> bool:
    """Whether ``diet`` leaves ``food`` out ("vegetarian" / "meat", "素食" / "肉")."""
    for word in value_words(diet):
        for kind in _DIET_EXCLUDES.get(word, ()):
            if covers(kind, food):
                return True
    return False
