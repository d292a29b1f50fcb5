"""Keywords for seed 001's recall, from mixed Chinese and English text, without a dictionary.

English is split into words of letters and digits (``C++``, ``C#``, ``Node.js``,
``3.11`` and hyphenated words stay whole) and filtered by a built-in stop list.
Chinese has no spaces and no segmenter is available, so a CJK run is cut at
stop words and particles (longest match first), and what is left between them
counts as a keyword when it is at least two characters long. A short list of
protected words wins over a shorter stop word at the same position, so the
``用`` in ``用户`` or the ``都`` in ``成都`` does not split them. Runs longer
than four characters are also cut into overlapping bigrams, because without a
dictionary a long run is usually several words (``机器学习模型``).

Not handled: Japanese and Korean get the Chinese treatment; a keyword is never
stemmed (``likes`` and ``like`` differ); a content word that happens to contain
a stop character and is not protected loses that character.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "KEYWORD_SCAN_CHARS",
    "expresses_preference",
    "extract_keywords",
    "is_stop_word",
    "mentions_personal",
]

_ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all almost also am an and any anyone anything are
    aren't around as at be because been before being below between both but by can can't
    cannot could couldn't did didn't do does doesn't doing don't down during each either
    else etc even ever every few for from further get gets got had hadn't has hasn't have
    haven't having he he'd he'll he's her here here's hers herself him himself his how
    how's however i i'd i'll i'm i've if in into is isn't it it's its itself just let let's
    lot lots may maybe me might mine more most much must mustn't my myself need no nor not
    now of off often on once one only or other others our ours ourselves out over own
    please quite rather really same say says shall shan't she she'd she'll she's should
    shouldn't so some something still such than thank thanks that that's the their theirs
    them themselves then there there's these they they'd they'll they're they've thing
    things this those though through thus to too under until up upon us very via was
    wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    whether which while who who's whom whose why why's will with within without won't
    would wouldn't yes yet you you'd you'll you're you've your yours yourself yourselves
    hi hello hey ok okay yeah yep nope vs e.g i.e http https www
    """.split()
)


def is_stop_word(word: str) -> bool:
    """Whether ``word`` (any case) is an English function word ("will", "may", "me")."""
    return word.casefold() in _ENGLISH_STOP_WORDS


#: Pronouns, particles and function words that separate Chinese content words.
_CHINESE_STOP_WORDS = frozenset(
    """
    我 你 您 他 她 它 们 的 了 是 在 用 写 和 与 及 或 就 也 都 很 太 更 最 还 又 再
    吗 呢 吧 啊 呀 哦 嗯 嘛 么 呗 把 被 给 让 对 从 向 这 那 哪 有 没 不 会 能 要 想
    个 些 请
    一个 一些 一下 一点 一直 一样 一起 什么 怎么 怎样 怎么样 为什么 如何 哪里 哪儿
    那里 这里 这个 那个 这些 那些 这样 那样 这么 那么 多么 因为 所以 但是 可是 而且
    然后 如果 虽然 还是 或者 或许 已经 现在 正在 可以 可能 应该 需要 觉得 知道 认为
    自己 我们 你们 他们 她们 它们 大家 非常 特别 比较 真的 其实 还有 没有 只是 就是
    不是 总是 只有 所有 有点 有些 有关 具有 时候 东西 为了 除了 对于 关于 以及 作为
    成为 以前 以后 一般 使用 编写 帮我 帮忙 请问 谢谢 你好 不要 想要 主要 只要 的确
    其他 其它 通过 不过 然而 并且 而是 于是 是否 能够 不能 不会 最近 是不是 有没有
    能不能 可不可以
    """.split()
)

#: Content words that start with (or contain) a stop character and must stay whole.
_CHINESE_PROTECTED = frozenset(
    """
    用户 应用 费用 作用 用法 信用 实用 通用 常用 用品 写作 大写 小写 在线 存在 目的
    了解 和平 和谐 参与 成就 首都 成都 京都 都市 酒吧 网吧 把握 被子 太阳 太太 太极
    更新 变更 对话 对象 反对 对手 有趣 有用 有效 有名 拥有 会议 机会 社会 约会 开会
    聚会 会员 会计 功能 性能 智能 能力 能源 技能 重要 要求 摘要 想法 理想 梦想 思想
    感想 个人 个性 及时 申请 邀请 请求 请假 从事 对比
    """.split()
)

#: Preference verbs are keywords themselves (seed 001 keeps 喜欢) and also end a chunk,
#: so 我喜欢喝茶 gives 喜欢 and 喝茶 rather than one 喜欢喝茶.
_CHINESE_STANDALONE = frozenset("喜欢 讨厌 偏好 喜爱 热爱 宁愿".split())

#: Keywords and the preference and personal hints come from this many characters at the
#: start of a text at most: a query or topic is client text up to a frame's size.
KEYWORD_SCAN_CHARS = 4096

_LONGEST_CHINESE = max(
    len(w) for w in _CHINESE_STOP_WORDS | _CHINESE_PROTECTED | _CHINESE_STANDALONE
)

# A word of letters/digits with inner apostrophes, dots or hyphens, and a
# trailing ``++``/``#`` for language names. Run only on the non-CJK parts.
_WORD = re.compile(r"[^\W_]+(?:['.\-][^\W_]+)*(?:\+\+|#)?")

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


# The ideographs (and kana, hangul) of ``memory.tokens.is_cjk``, without its CJK
# punctuation and full-width forms, which separate words: runs of them, or of anything else.
_IDEOGRAPHS = "\u4e00-\u9fff\u3400-\u4dbf\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff"
_RUN = re.compile(f"([{_IDEOGRAPHS}]+)|[^{_IDEOGRAPHS}]+")
_IDEOGRAPH_RUN = re.compile(f"[{_IDEOGRAPHS}]+")


def _normalize(text: str) -> str:
    # NFKC turns full-width Latin letters and digits into ASCII ones.
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)


def _runs(text: str) -> list[tuple[bool, str]]:
    """Split into alternating (is_cjk, run) pieces, in order."""
    # One regular expression (linear, in C), not a loop per character: queries and
    # topics are client text, up to a frame's size.
    return [(match.group(1) is not None, match.group()) for match in _RUN.finditer(text)]


def _english_words(text: str) -> list[str]:
    words = []
    for match in _WORD.finditer(text):
        word = match.group()
        if word.casefold().endswith("'s"):
            word = word[:-2]
        words.append(word)
    return words


def _latin_words(text: str) -> list[str]:
    """Every word of the non-CJK parts, as written (``\\w`` alone would glue on ideographs)."""
    return _WORD.findall(_IDEOGRAPH_RUN.sub(" ", text))


def _chinese_chunks(run: str) -> list[str]:
    """Cut a CJK run at stop words and standalone words; protected words stay inside chunks."""
    chunks: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(run):
        for size in range(min(_LONGEST_CHINESE, len(run) - i), 0, -1):
            piece = run[i : i + size]
            if piece in _CHINESE_PROTECTED:
                current.append(piece)
                break
            if piece in _CHINESE_STOP_WORDS or piece in _CHINESE_STANDALONE:
                chunks.append("".join(current))
                current = []
                if piece in _CHINESE_STANDALONE:
                    chunks.append(piece)
                break
        else:
            piece = run[i]
            current.append(piece)
        i += len(piece)
    chunks.append("".join(current))
    return [chunk for chunk in chunks if len(chunk) >= 2]


def _chinese_keywords(run: str) -> list[str]:
    keywords: list[str] = []
    for chunk in _chinese_chunks(run):
        if len(chunk) <= 6:
            keywords.append(chunk)
        if len(chunk) > 4:
            keywords.extend(chunk[i : i + 2] for i in range(len(chunk) - 1))
    return keywords


def extract_keywords(text: str, *, limit: int = 12) -> list[str]:
    """Up to ``limit`` keywords in order of first occurrence, deduplicated ignoring case,
    from the first ``KEYWORD_SCAN_CHARS`` characters of ``text``.

    English words keep their original case (the first spelling seen wins).
    """
    seen: set[str] = set()
    keywords: list[str] = []
    for cjk, run in _runs(_normalize(text[:KEYWORD_SCAN_CHARS])):
        candidates = _chinese_keywords(run) if cjk else _english_words(run)
        for word in candidates:
            folded = word.casefold()
            if len(folded) < 2 or folded in seen or folded in _ENGLISH_STOP_WORDS:
                continue
            if len(keywords) >= limit:
                return keywords
            seen.add(folded)
            keywords.append(word)
    return keywords


_PREFERENCE_WORDS = frozenset(
    """
    like likes liked love loves loved prefer prefers preferred enjoy enjoys enjoyed
    hate hates hated dislike dislikes disliked favorite favourite favorites favourites
    rather
    """.split()
)
# "looks like", "just like", "something like": a comparison, not a preference.
_SIMILE_BEFORE_LIKE = frozenset(
    """
    look looks looked looking seem seems seemed sound sounds sounded feel feels felt
    just something anything nothing more much things stuff is was be it's that's
    """.split()
)
_CANT_STAND = re.compile(r"\b(?:can't|cannot|can not|couldn't)\s+stand\b")
_CHINESE_PREFERENCE = ("喜欢", "偏好", "讨厌", "宁愿", "最爱", "受不了", "爱")
# Compounds with 爱 that say nothing about the user's taste.
_CHINESE_NOT_PREFERENCE = ("可爱", "恋爱", "爱情", "亲爱")


def expresses_preference(text: str) -> bool:
    """Whether the message states a like, dislike or preference (seed 001's recall hint)."""
    normalized = _normalize(text[:KEYWORD_SCAN_CHARS]).casefold()
    if _CANT_STAND.search(normalized):
        return True
    words = _latin_words(normalized)
    for i, word in enumerate(words):
        if word not in _PREFERENCE_WORDS:
            continue
        if word.startswith("like") and i > 0 and words[i - 1] in _SIMILE_BEFORE_LIKE:
            continue
        return True
    for compound in _CHINESE_NOT_PREFERENCE:
        normalized = normalized.replace(compound, "")
    return any(marker in normalized for marker in _CHINESE_PREFERENCE)


_PERSONAL_WORDS = frozenset(
    """
    i i'm i've i'd i'll me my mine myself where live lives lived living from city country
    home hometown
    """.split()
)
_CHINESE_PERSONAL = ("我", "住", "哪里", "哪儿", "家", "城市", "国家")
# 家 also ends words for everyone or for a trade.
_CHINESE_NOT_PERSONAL = ("大家", "专家", "作家", "画家", "科学家")


def mentions_personal(text: str) -> bool:
    """Whether the query has a personal pronoun or a place reference.

    Seed 004 includes identity facts in the context only for such queries.
    """
    normalized = _normalize(text[:KEYWORD_SCAN_CHARS]).casefold()
    if not _PERSONAL_WORDS.isdisjoint(_latin_words(normalized)):
        return True
    for compound in _CHINESE_NOT_PERSONAL:
        normalized = normalized.replace(compound, "")
    return any(marker in normalized for marker in _CHINESE_PERSONAL)
