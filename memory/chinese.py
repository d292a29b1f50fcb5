"""Chinese clauses to statements: the subject, the adverbs before the verb, then the verb.

Chinese has no spaces and no segmenter is available, so a clause is read from
its subject on by short, ordered patterns. The subject is 我/我们 (the user), a
relation with an optional name (我妹妹安娜, 我的女朋友), or, for a clause with
none (改喝茶, 在阿里巴巴工作), the subject of the clause before it. Before the
verb come time words, adverbs, negation (不, 没, 不再, 已经不) and markers of
change or the past (现在, 刚, 以前, 曾经). The verb then picks the predicate:
住在/搬到 (lives_in), 在…工作 (employer), 是 + occupation, 喜欢/爱 (likes),
对…过敏 (allergic_to), 养/有 + pet or relative, 会说 + language, 喝/吃,
戒了, 想/打算 (goal), and a general reading for other verbs. Questions
(吗, 什么, 哪, 谁 ...), conditions and hedges (如果, 可能, 也许 ...) and reported
speech (他说, 听说 ...) give nothing.
"""

from __future__ import annotations

import re
from dataclasses import replace

from memory.chinese_verbs import PARTICLES, PET_NAMED, RELATIONS, VERBS, State, clean, name_of
from memory.clauses import HOLE, Clause
from memory.statements import USER, People, Speaker, Statement

__all__ = ["chinese_statements"]

_QUESTION = re.compile(
    r"什么|哪里|哪儿|哪个|哪些|为什么|怎么|谁|几[个岁点]|多少|是否|是不是|有没有|能不能|吗$|呢$"
)

_HEDGE = re.compile(
    r"如果|假如|要是|万一|可能|也许|或许|大概|说不定|考虑|想过|有机会|有一天|以后再|似乎|好像"
)

_REPORTED = re.compile(r"[他她]们?说|听说|据说|告诉我|跟我说|觉得|认为|以为|说过|劝我|建议我|让我")

_FILLER = re.compile(
    r"^(?:对了|另外|还有|顺便(?:说|提)(?:一下|一句)?|哈哈+|嗯+|其实|说实话|告诉你|跟你说|好消息|"
    r"大新闻|话说|不过|而且|然后|所以|那个|就是|我跟你讲|最新消息|虽然|虽说|尽管|说起来)"
)

_TIME = (
    r"每天|每周[一二三四五六日天]?|每个?月|每个?周末|周末|平时|平常|早上|晚上|中午|下午|上午|现在|最近|目前|如今|"
    r"上个?月|上周|上个星期|去年|今年|前年|前几天|前段时间|这几年|这些年|这段时间|刚刚|刚|已经|一直|"
    r"经常|总是|偶尔|有时候|有时|天天|常常|通常|一般|以前|之前|过去|原来|曾经|小时候|从小|从来|终于|马上|"
    r"下班后?|上班前|工作日|以后|后来|开始|又|睡前|饭后|饭前|早饭|午饭|晚饭|"
    r"\d+年|[一二三四五六七八九十两]+年前?|周[一二三四五六日末]|星期[一二三四五六日天]"
)

_ADVERB = (
    r"还是(?=在|住|喜欢|做|当)|也|还|都|很|非常|特别|真的|真|超级|超|挺|蛮|确实|本来|基本上|比较|更|就|又|正在|会|居然|自己|"
    r"(?:辞职|离职)了?(?:出来)?|倒是|倒|要(?=[喝吃去做看听玩打跑])|"
    r"[\u4e00-\u9fff]{1,3}[上里](?=还|也|又|都|养|有|种)|"
    r"在(?=学(?![校院])|读|做|写|练)|"
    # who with: 跟同事去打羽毛球, 和朋友一起爬山
    r"[跟和与](?:同事|朋友|家人|老公|老婆|男朋友|女朋友|对象|孩子|爸妈|父母|室友|同学|闺蜜|"
    r"兄弟|家里人)们?(?:一起)?|一起"
)

# 从去年开始, 从上个月起: since a time, so still true now.
_LEAD = re.compile(r"^(?:从(?:" + _TIME + r")(?:开始|起)?|" + _TIME + "|" + _ADVERB + r")")

_NEGATION = re.compile(
    r"^(?:不再|再也不|已经不|已经没有?|不太能|不怎么能|不太|不怎么|不能|不可以|没法|不|没有|没)"
)

_CHANGE = (
    "已经",
    "现在",
    "最近",
    "目前",
    "如今",
    "刚",
    "刚刚",
    "终于",
    "上个月",
    "上月",
    "去年",
    "以后",
    "开始",
)
#: A clause after one of these is its consequence ("如果我中了彩票" ...) and states nothing.
_CONDITION = re.compile(r"如果|假如|要是|万一|假设")
_CALL_ME = re.compile(
    r"^(?:你|您)?(?:以后)?(?:可以|就)?(?:叫|喊|称呼)我(?P<v>[\u4e00-\u9fffA-Za-z]{1,4})"
)

_PAST = ("以前", "之前", "过去", "原来", "曾经", "小时候")

_ATTRIBUTES = {
    "生日": "birthday",
    "名字": "name",
    "邮箱": "email",
    "电子邮件": "email",
    "电话": "phone",
    "手机号": "phone",
    "手机号码": "phone",
    "电话号码": "phone",
    "工作": "occupation",
    "职业": "occupation",
    "爱好": "hobby",
    "兴趣": "hobby",
    "目标": "goal",
    "梦想": "goal",
    "专业": "studies",
    "家乡": "from",
    "老家": "from",
    "微信号": "wechat",
    "微信": "wechat",
}

_NAME_END = re.compile(r"是|在|住|喜欢|爱|叫|今年|也|很|会|有|做|当|刚|已经|每天|养|对|不|最")

#: A first clause without a subject: 我 left out ("最近又养了一只猫"), read only when the
#: verb is one people use about themselves.
_IMPLIED = Speaker(name="\u6211", relation="\u6211")

_NAMED_AFTER = re.compile(r",(?:名字)?叫(?P<v>[\u4e00-\u9fffA-Za-z]{1,4})$")
_SELF_REPORTS = frozenset(
    "lives lives-rent employer employer-role allergic allergic-of keeps consume switch quit"
    " status school graduated opened learns studied class pet-named adopted hobby likes where"
    " age".split()
)
_ADJECTIVES = re.compile(r"^(?:最好的|最要好的|好)")
_RELATION_START = "|".join(RELATIONS)


def _relation(text: str, people: People) -> tuple[Speaker, str] | None:
    """``妹妹安娜是护士`` -> (Speaker(安娜, 妹妹), ``是护士``)."""
    text = _ADJECTIVES.sub("", text)
    for relation in RELATIONS:
        if text.startswith(relation):
            rest = text[len(relation) :]
            name = None
            match = _NAME_END.search(rest)
            if match and 1 <= match.start() <= 4 and "的" not in rest[: match.start()]:
                name, rest = rest[: match.start()], rest[match.start() :]
            return people.meet(Speaker(name=name, relation=relation)), rest
    return None


def _subject(clause: Clause, people: People) -> tuple[Speaker, str] | str | None:
    """The speaker and the text after the subject; an attribute name for 我的生日是…"""
    text = _FILLER.sub("", clause.text.strip())
    if text.startswith("用户"):  # a fact written about the user ("用户住在北京")
        text = "我" + text[2:]
    at = text.find("我")
    lead = text[:at] if at >= 0 else ""
    timed = re.fullmatch(r"(?:" + _TIME + r"|[的,\s])*", lead) is not None
    if at >= 0 and 0 < len(lead) <= 4 and not timed and re.fullmatch(r"[\u4e00-\u9fff]+", lead):
        # "钢琴我已经不学了": the object said first; put it back after the verb.
        rest = re.sub(r"[了啊呢吧]+$", "", text[at + 1 :])
        if re.search(r"(?:学|玩|弹|打|吃|喝|练|做|戒|去|看|听)$", rest):
            return people.meet(USER), rest + lead
        if rest.endswith(("过敏", "不耐受")):  # 花粉我也过敏: allergic to the topic
            return people.meet(USER), "对" + lead + re.sub(r"^(?:也|还|都|真的|特别|很)+", "", rest)
    if at >= 0 and (len(lead) <= 6 and timed):
        rest = text[at + 1 :]
        rest = re.sub(r"^们?家在", "住在", rest)  # 我家在成都: where the user lives
        rest = re.sub(r"^们?(?:全家|家)(?=在|有|养|住|搬|都|也|还)", "", rest).removeprefix("们")
        rest = rest[1:] if rest.startswith("人在") else rest  # 我人在深圳: where I am now
        if rest.startswith(("和", "跟")):
            rest = re.sub(r"^[和跟][^是在住喜爱有搬]{1,6}?(?=[都也一]?[是在住喜爱有搬])", "", rest)
            return USER, lead + rest
        if rest.startswith("的"):
            rest = rest[1:]
        for word, predicate in _ATTRIBUTES.items():
            if rest.startswith(word) and rest[len(word) :].lstrip("是叫:").strip():
                return predicate + ":" + rest[len(word) :]
        person = _relation(re.sub(r"^家(?=" + _RELATION_START + ")", "", rest), people)
        if person is not None:
            return person
        if text[at + 1 :].startswith("的"):
            if re.match(PET_NAMED, rest):  # 我的猫叫团子: the user's pet, by name
                return people.meet(USER), rest
            return None
        if rest.startswith("自己"):
            rest = rest[2:]
        return people.meet(USER), lead + rest
    if at < 0 and text.startswith(tuple(RELATIONS)) and "的" not in text[:3]:
        return _relation(text, people)  # 老公是医生, 对象是大学同学: 我 left out
    if text.startswith(("他", "她", "它")):
        return (people.other, text[1:]) if people.other is not None else None
    if at < 0 and clause.follows and people.last is not None:
        if people.pet and "岁" in text:
            return None  # 我的狗叫豆豆,今年三岁了: the pet's age, not its owner's
        return people.last, text
    if at < 0 and not clause.follows and not text.startswith(("你", "您")):
        for word, predicate in _ATTRIBUTES.items():  # 工作是做电商运营: 我的 left out
            if text.startswith(word + "是"):
                return predicate + ":" + text[len(word) :]
        return _IMPLIED, text
    return None


def _lead(text: str, state: State) -> str:
    """Consume time words, adverbs and negation before the verb, noting what they say."""
    kept = []
    while True:
        match = _LEAD.match(text) or _NEGATION.match(text)
        if match is None:
            break
        word = match.group()
        if _NEGATION.match(word):
            state.negated = True
            state.lacks = word.endswith("有")
            state.change |= word in ("不再", "再也不", "已经不", "已经没有", "已经没")
        else:
            state.change |= word in _CHANGE
            state.past |= word in _PAST
            if word not in (
                "也",
                "还",
                "都",
                "就",
                "又",
                "正在",
                "在",
                "已经",
                "刚",
                "刚刚",
                "终于",
            ):
                if word not in _CHANGE or word in ("每天",):
                    kept.append(word)
        text = text[len(word) :]
    state.lead = "".join(kept)
    return text


def _full_width(statement: Statement) -> Statement:
    """Chinese content reads with Chinese commas."""
    if "," not in statement.content:
        return statement
    content = statement.content.replace(",", "\uff0c")
    return Statement(
        predicate=statement.predicate,
        value=statement.value,
        content=content,
        speaker=statement.speaker,
        key=statement.key,
        negated=statement.negated,
        updates_previous=statement.updates_previous,
        category=statement.category,
    )


def _attribute(spec: str, people: People) -> list[Statement]:
    predicate, _, rest = spec.partition(":")
    value = clean(re.sub(r"^(?:是|叫|:|在)", "", rest.strip()))  # 我老家在湖南: 湖南
    if not value:
        return []
    label = {"birthday": "生日", "name": "名字", "email": "邮箱", "phone": "电话"}.get(predicate)
    content = f"用户的{label}是{value}" if label else f"用户的{_LABEL.get(predicate, '')}是{value}"
    return [Statement(predicate=predicate, value=value, content=content)]


_LABEL = {
    "occupation": "工作",
    "hobby": "爱好",
    "goal": "目标",
    "studies": "专业",
    "from": "家乡",
    "wechat": "微信号",
}


def chinese_statements(clause: Clause, people: People) -> list[Statement]:
    """What a Chinese ``clause`` states (see the module docstring), up to a hole
    ``memory.clauses.normalize`` left (no value reads across it)."""
    clause = replace(clause, text=clause.text.partition(HOLE.strip())[0].rstrip())
    text = clause.text
    if clause.question or _QUESTION.search(text) or _HEDGE.search(text) or _REPORTED.search(text):
        return []
    if clause.follows and _CONDITION.search(clause.follows):
        return []
    if called := _CALL_ME.match(_FILLER.sub("", text.strip())):
        name = clean(called.group("v"))
        return [Statement("name", name, f"用户叫{name}", updates_previous=True)] if name else []
    found = _subject(clause, people)
    people.pet = False  # until this clause names one
    if found is None:
        return []
    if isinstance(found, str):
        return _attribute(found, people)
    speaker, rest = found
    implied = speaker is _IMPLIED
    if implied:
        speaker = USER
    people.last = speaker
    if not speaker.is_user:
        people.other = speaker
    state = State(speaker, work=people.about_work)
    rest = PARTICLES.sub("", _lead(rest, state))
    if not rest or "你" in rest:
        return []
    named = _NAMED_AFTER.search(rest) if not speaker.is_user else None
    if named is not None and named.start():  # 我对象是大学同学,叫陈默: then their name
        rest = rest[: named.start()]
    if (
        state.lacks
        and _first_reading(rest) in (None, "general")
        and _first_reading("有" + rest) == "keeps"
    ):
        rest = "有" + rest  # 没有 + a noun: "does not have" it (没有男朋友, 没有车)
    for name, pattern, handler in VERBS:
        match = pattern.match(rest)
        if match is not None:
            if implied and name not in _SELF_REPORTS:
                return []
            found_now = handler(match, state)
            if named is not None and named.start():
                found_now += name_of(named, state)
            if state.people_other is not None:
                people.meet(state.people_other)
                people.last = state.people_other if not speaker.is_user else speaker
            people.pet = any(f.predicate == "has_pet" for f in found_now)
            return [_full_width(f) for f in found_now]
    return _capture(speaker, rest, implied)


def _first_reading(text: str) -> str | None:
    """The name of the first verb pattern that reads ``text``, if any."""
    return next((name for name, pattern, _ in VERBS if pattern.match(text)), None)


def _capture(speaker: Speaker, rest: str, implied: bool) -> list[Statement]:
    """A plain statement by the user that no pattern read, kept in their words."""
    rest = clean(rest.replace("我的", "用户的").replace("我", "用户"))
    if implied or not speaker.is_user or len(re.findall(r"[\u4e00-\u9fff]", rest)) < 3:
        return []
    return [_full_width(Statement("note", rest[:30], f"用户{rest}"[:200]))]
