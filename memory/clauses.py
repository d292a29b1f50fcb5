"""Cutting a message into clauses, the unit the rule-based extractor reads.

A message becomes sentences (at ``.!?;`` and line breaks, full-width forms
included; a sentence remembers whether it asked a question), and a sentence
becomes clauses: at conjunctions that start a new clause (but, so, because,
但是, 所以 ...), at "and"/a comma when a new subject follows ("..., and I work
at ..."), and before an "I" that starts a new clause in unpunctuated text ("i
moved to berlin i work at siemens"). English contractions are expanded first
("I'm" -> "I am", "dont" -> "do not"), so later stages see one spelling.
Everything is linear in the length of the text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memory.lexicon import PETS, RELATIONS, VERBS, lemma
from memory.tokens import is_cjk

__all__ = ["HOLE", "Clause", "clauses", "normalize"]

#: At most this much of a message is read: facts are stated in a sentence, not a page.
MAX_CHARS = 4000

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_CONTRACTIONS = (
    # "im" is "I'm" unless it is a noun ("send an im", "via im").
    (r"\bi'm\b|(?<!\ban )(?<!\bthe )(?<!\bvia )(?<!\bby )\bim\b(?=\s+[\w\d])", "I am"),
    (r"\bi've\b|\bive\b(?=\s+(?:been|got|had|lived|worked|always|never))", "I have"),
    (r"\bi'd\b", "I would"),
    (r"\bi'll\b", "I will"),
    (r"\bwe're\b", "we are"),
    (r"\bwe've\b", "we have"),
    (r"\bcan't\b|\bcant\b|\bcannot\b", "can not"),
    (r"\bwon't\b", "will not"),
    (r"\b(do|does|did|is|are|was|were|have|has|had|would|could|should)n't\b", r"\1 not"),
    (r"\b(do|does|did|is|was|have|has)nt\b", r"\1 not"),
    (r"\b(he|she|it|that|there|name|birthday|email|number|job)'s\b", r"\1 is"),
    # One spelling of a diet: "gluten free", "plant based" -> "gluten-free", "plant-based".
    (r"\b(gluten|dairy|lactose|sugar|meat|nut) free\b", r"\1-free"),
    (r"\bplant based\b", "plant-based"),
    # "me and my girlfriend split up" is "my girlfriend and I split up".
    (r"(^|[.!?,;:] )me and ((?:my |our )?\w+) ", r"\1\2 and I "),
    (r"\bi\b", "I"),
)
_CONTRACTION_RES = tuple((re.compile(p, re.IGNORECASE), r) for p, r in _CONTRACTIONS)

_RELATION = "|".join(sorted(RELATIONS | PETS, key=len, reverse=True))
#: "my husband's allergic to dogs": the relative's "'s" is "is" (or "has" before "been")
#: when what follows is no noun it could own ("my son's dog" stays).
_RELATIVE_IS = (
    (re.compile(rf"\b((?:my|our) (?:{_RELATION}))'s (?=been\b)", re.IGNORECASE), r"\1 has "),
    (
        re.compile(
            rf"\b((?:my|our) (?:{_RELATION}))'s (?=(?:a|an|the|not|from|in|at|into|so|very"
            r"|really|super|also|still|now|always|never|just|allergic|obsessed|mad|crazy|called|named"
            r"|married|single|divorced|engaged|pregnant|retired|vegan|vegetarian|\d+"
            r"|(?!wedding|building|ring|thing|evening|morning|meeting|painting|sibling)\w+ing"
            r"|\w{3,}ed)\b)",
            re.IGNORECASE,
        ),
        r"\1 is ",
    ),
)

_SENTENCE_END = re.compile(
    r"(?<=[.!?;])\s+|(?<=[\u2600-\u27bf\U0001f300-\U0001faff])\s+(?!(?:and|or|plus)\b)|(?<=[\u3002\uff01\uff1f\uff1b])|\n+|(?<=[!?])(?=\S)|\s+[-\u2013\u2014]+\s+"
)
_ZH_CONJUNCTION = "但是|但|可是|不过|所以|因为|而且|然后|并且|而是|另外|不然|否则|要不然"
_CLAUSE_BREAK = re.compile(
    r"\s*[,:\uff0c\uff1a\u3001]\s*(?=(?:and\s+|but\s+|so\s+|also\s+)?(?:I|we|my|our|he|she|they)\b)"
    r"|,?\s+(?:and|plus|&)\s+(?=(?:also\s+|now\s+|then\s+)?(?:I|we|my|our|he|she|they)\b)"
    r"|,?\s*\b(?:but|so|because|although|though|whereas|except)\b\s*|,\s+then\s+"
    # "Handed in my notice and started at Ocado": a second verb in the past, same subject.
    r"|,?\s+and\s+(?=(?:then |also |just |finally )?(?:[a-z]{3,}ed|got|went|took|left|quit"
    r"|began|became|joined|moved)\b)"
    r"|[\uff0c,\u3001]?(?:" + _ZH_CONJUNCTION + r")"
    r"|[\uff0c\uff1a]|:\s|(?<=[\u3400-\u9fff]),(?!叫|名叫|取名|起名|一只|一个|一条)|,(?=[\u3400-\u9fff])(?!叫|名叫|取名|起名|一只|一个|一条)",
)
#: Words after which an "I" goes on the same clause ("the music I like", "she said I").
_JOINS_NEXT_I = frozenset(
    """
    what that which who whom where when how why if whether than as things thing stuff
    everything something anything nothing all one ones way place kind type sort people
    person time day reason think thinks thought know knew guess said says say told tells
    me mean believe hope wish feel sure glad happy and but or so because since until
    unless before after while once wherever whenever whatever
    """.split()
)
_BARE_I = re.compile(r"\s(?=I\s)")
#: Markup and code: what a message shows or runs, not what its writer states. Code (fenced
#: or inline in backticks, a comment), an element that embeds something other than text
#: (a script, an image, a frame...) go whole, each leaving a hole (``HOLE``) the reader
#: does not read across; any other tag goes, the text it marks up stays ("I love
#: <b>jazz</b>"). "<3" or "a < b" is no tag.
_CODE = re.compile(
    r"```.*?(?:```|$)|`[^`\n]*`|<!--.*?(?:-->|$)"
    r"|<(script|style|svg|math|iframe|object|textarea|select|canvas|video|audio|picture)\b"
    r"[^>]*>.*?(?:</\1\s*>|$)"
    r"|<(?:img|image|embed|input|source|track|meta|link|base|area|param|button)\b[^<>]*>",
    re.DOTALL | re.IGNORECASE,
)
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>")
#: What ``normalize`` leaves where it took something out (code, markup, a quotation): no
#: value reads across it (``memory.english_phrase``). A user's own "\u2026" is "..." by
#: then, the end of a sentence.
HOLE = " \u2026 "
_AS_WELL_AS = re.compile(r",?\s+as well as\s+", re.IGNORECASE)
_BE = frozenset("am is are was were".split())


#: Word orders people use for emphasis, put back in the plain order first:
#: "Bristol is where I live now" -> "I live in Bristol now", "What I love most is sailing"
#: -> "I love sailing", "Foods I love: ramen, pierogi" -> "I love ramen, pierogi",
#: "Cricket's more my thing now" -> "I like Cricket now", "New number: 0770" -> "my number
#: is 0770".
_REORDERS = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (
            r"^(?P<np>[^,;]{1,60}?) is where (?P<s>I|we) (?P<v>live|grew up|work)\b(?P<rest>.*)$",
            r"\g<s> \g<v> in \g<np>\g<rest>",
        ),
        (
            r"^what (?P<s>I|we) (?P<v>[^,;]{1,40}?)(?: the)?(?: most)? (?:is|are) (?P<np>.+)$",
            lambda m: _cleft(m["s"], m["v"], m["np"]),
        ),
        (
            r"^(?P<head>(?:\w+ ){0,2}\w+) (?P<s>I|we) (?P<v>\w+) *: *(?P<list>.+)$",
            r"\g<s> \g<v> \g<list>",
        ),
        (
            r"^(?P<np>[^,;]{1,40}?)(?:'s| is| are) (?:(?:more|really|very much|still|just|"
            r"definitely|totally|so|now|also) )*my (?:thing|jam|passion|obsession)\b(?P<rest>.*)$",
            r"I like \g<np>\g<rest>",
        ),
        (
            r"^(?:officially |finally |just )?(?P<age>\d{1,2})(?: years old)? (?:now|today)\b",
            r"I am \g<age> now",
        ),
        (r"^(?P<np>[^,;]{1,40}?)(?:'s| is) home\b(?P<rest>.*)$", r"I live in \g<np>\g<rest>"),
        (r"^home is (?P<np>.+)$", r"I live in \g<np>"),
        (r"^the name(?:'s| is) ", r"my name is "),
        (
            r"^(?:my )?(?:new )?(?:fav|favou?rite) (?P<k>\w+)(?: of all time)? *: *(?P<v>.+)$",
            r"my favourite \g<k> is \g<v>",
        ),
        (r"^(?:my )?(?:fav|favou?rite) things?(?: \w+)? *: *(?P<l>.+)$", r"I like \g<l>"),
        (r"^(?:hate|hates|dislike|dislikes|can't stand) *: *(?P<l>.+)$", r"I hate \g<l>"),
        (
            r"^(?P<x>[^,;]{1,30}?)(?:'s| is) my (?P<n>\w+(?: (?!now\b|these\b)\w+)?)"
            r"(?P<rest> now| these days)?$",
            r"my \g<n> is \g<x>\g<rest>",
        ),
        (
            r"^(?P<l>[\w ]{1,30}?)(?:'s| is| was) (?:basically |probably |actually )?my "
            r"(?:first|native|second|mother) (?:language|tongue)\b(?P<rest>.*)$",
            r"I speak \g<l>\g<rest>",
        ),
        (
            r"^(?:my )?(?:new |current )?(?P<attr>phone number|number|mobile|email|e-mail|address)"
            r" *: *(?P<v>.+)$",
            r"my \g<attr> is \g<v>",
        ),
    )
)
#: Emoji, tags and openers that say a sentence means the opposite, and role play: what
#: the user says as someone else ("you're an innkeeper and I'm a bard").
_IRONY = re.compile(
    # An eye roll or "/s" always; an upside-down or smirking face only with praise ("I
    # just love Mondays 🙃"), since alone it is as often a wry truth ("found out the hard
    # way 🙃").
    "\U0001f644|\U0001f612|(?:^|\\s)/s\\b"
    r"|\b(?:love|loving|adore|favou?rite|best|great|perfect|definitely|totally|of course)\b"
    "[^\U0001f643\U0001f60f]*[\U0001f643\U0001f60f]"
    r"|^(?:oh )?(?:sure|yeah right|great|wonderful|fantastic|obviously|oh yes),"
    r"|^and obviously\b|\blet'?s do a (?:quick )?scene\b|\bpretend (?:you|to be|I)\b"
    r"|\brole.?play\b|\bin character\b|\byou(?:'re| are) an? \w+ and I(?:'m| am)\b"
    r"|(?<!\byou )\b(?:says|said|asks|asked|goes|went like|tells me)\s*:",
    re.IGNORECASE,
)


#: A question without its question mark: "how do i dry out a keyboard", "should I go".
_ASKS = re.compile(
    r"^(?:(?:so|ok|okay|and|but|also|hey|btw|um|oh|hmm|anyway),?\s+)*"
    r"(?:(?:how|what|where|when|why|which|who)\s+)?"
    r"(?:do|does|did|can|could|should|would|will|is|are|am|shall)\s+"
    r"(?:I|you|we|it|they|he|she|there|my|your|this|that)\b",
    re.IGNORECASE,
)

_WHEN = re.compile(r"\s+(?=(?:every|each|on|most|at|in)\b)", re.IGNORECASE)


def _cleft(subject: str, verb_phrase: str, rest: str) -> str:
    """ "What I do every Sunday is a parkrun" -> "I do a parkrun every Sunday"."""
    verb, *when = _WHEN.split(verb_phrase, maxsplit=1)
    head, comma, tail = rest.partition(",")
    return f"{subject} {verb} {head} {' '.join(when)}".rstrip() + comma + tail


_OPENING = re.compile(
    r"^(?:(?:ok(?:ay)?|oh|so|well|anyway|right|alright|btw|fyi|also)[,!.]?\s+)+", re.IGNORECASE
)


def _reorder(sentence: str) -> str:
    sentence = _OPENING.sub("", sentence)
    for pattern, replacement in _REORDERS:
        sentence = pattern.sub(replacement, sentence, count=1)
    return sentence


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of a message, and whether its sentence was a question."""

    text: str
    question: bool
    #: The clause before it in the same sentence (Chinese subjects carry over).
    follows: str = ""


_QUOTED = re.compile(
    r"\"[^\"\n]{2,}\"|(?<![\w'])'(?:[^'\n]|(?<=\w)'(?=\w)){2,}?'(?![\w'])"
    r"|\u201c[^\u201d]*\u201d|\u300c[^\u300d]*\u300d"
)


def normalize(text: str) -> str:
    """NFKC, markup and code out (``_CODE``, ``_TAG``), quotations out (what the user
    quotes is not what they state), one kind of apostrophe, English contractions
    expanded, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text[:MAX_CHARS])
    # Before the apostrophes: a backtick opens code, it is no apostrophe there.
    text = _TAG.sub(" ", _CODE.sub(HOLE, text)).translate(_APOSTROPHES)
    text = _QUOTED.sub(HOLE, text)
    for pattern, replacement in _CONTRACTION_RES + _RELATIVE_IS:
        text = pattern.sub(replacement, text)
    text = _AS_WELL_AS.sub(" and ", text)
    return re.sub(r"[ \t]+", " ", text)


def _has_verb(text: str) -> bool:
    return any(
        word in _BE or lemma(word) in VERBS for word in re.findall(r"[a-z]+", text.casefold())
    )


def _run_ons(sentence: str) -> list[str]:
    """Split before an "I" that begins a new clause in unpunctuated text: after a lower-case
    word that ends a clause with a verb of its own ("the music I like" is one clause)."""
    pieces: list[str] = []
    start = 0
    for match in _BARE_I.finditer(sentence):
        before = sentence[start : match.start()].rstrip()
        previous = before.rsplit(None, 1)[-1] if before else ""
        if (
            previous.isalpha()
            and previous.islower()
            and previous not in _JOINS_NEXT_I
            and _has_verb(before)
        ):
            pieces.append(before)
            start = match.end()
    pieces.append(sentence[start:])
    return pieces


#: "my routine is pretty fixed: swim at 6:30, then work 9 to 5": the verbs after it are
#: the user's, said without "I".
_ROUTINE = re.compile(
    r"\bmy (?:daily |usual |weekly |morning |typical )?(?:routine|day|days|schedule|week"
    r"|weekdays|weekends|mornings|evenings)\b[^:]*:",
    re.IGNORECASE,
)


def _bare_is_mine(piece: str) -> str:
    words = re.sub(r"^(?:and then|then|and|also|plus)\s+", "", piece, flags=re.IGNORECASE)
    first = words.split(" ", 1)[0].casefold()
    return "I " + words if first in VERBS and lemma(first) == first else piece


def clauses(text: str) -> list[Clause]:
    """The clauses of ``text`` in order (see the module docstring)."""
    out: list[Clause] = []
    for raw in _SENTENCE_END.split(normalize(text)):
        sentence = raw.strip()
        if not sentence:
            continue
        question = (
            sentence.endswith(("?", "\uff1f"))
            or _ASKS.match(sentence) is not None
            or (any(is_cjk(c) for c in sentence) and sentence.rstrip("\u3002!.").endswith("吗"))
        )
        if _IRONY.search(sentence):
            continue  # "I'm definitely a morning person 🙄"
        body = _reorder(sentence.rstrip(".!?;\u3002\uff01\uff1f\uff1b "))
        previous = ""
        routine = _ROUTINE.search(body) is not None
        for part in _CLAUSE_BREAK.split(body):
            for piece in _run_ons(part) if part else ():
                piece = piece.strip(" \"'()[]")
                if routine and previous:
                    piece = _bare_is_mine(piece)
                if piece:
                    out.append(Clause(piece, question, previous))
                    previous = piece
    return out
