"""Chinese verbs to predicates: ordered patterns over what follows the subject and adverbs.

The first pattern that matches a clause's rest picks the predicate: 住在/搬到
(lives_in), 在…工作 (employer), 是 + occupation, 喜欢/爱 (likes), 对…过敏
(allergic_to), 养/有 + a pet or a relative, 会说 + a language, 喝/吃, 改/换成 (a
switch), 戒了, 想/打算 (goal), and a general reading for other verbs said of a
habit. ``State`` carries what the words before the verb said (negation, change,
the past) into the content each handler writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from memory.statements import Speaker, Statement

__all__ = ["PARTICLES", "PET_NAMED", "RELATIONS", "VERBS", "State", "clean", "name_of"]


PARTICLES = re.compile(r"[了啊呢吧哦呀嘛啦的喔哟]+$")

_LIST = re.compile(r"、|和|跟|与|及|还有|以及")

RELATIONS = sorted(
    """
    妈妈 妈 母亲 爸爸 爸 父亲 父母 爸妈 姐姐 姐 妹妹 妹 哥哥 哥 弟弟 弟 儿子 女儿 孩子 老婆 妻子
    太太 老公 丈夫 男朋友 女朋友 男友 女友 对象 未婚夫 未婚妻 爷爷 奶奶 外公 外婆 姥姥 姥爷 叔叔
    阿姨 舅舅 姑姑 表哥 表姐 表妹 表弟 堂哥 堂姐 好朋友 朋友 闺蜜 室友 同事 老板 领导 邻居 同学
    宝宝 家人 婆婆 公公 岳父 岳母 丈母娘 老丈人 嫂子 弟媳 姐夫 妹夫 女婿 儿媳 孙子 孙女 外孙 侄子
    侄女 外甥 闺女 兄弟 姐妹 导师 上司 发小 哥们 老妈 老爸 媳妇 老伴 爱人 老大 老二 老三 大儿子
    小儿子 大女儿 小女儿
    """.split(),
    key=len,
    reverse=True,
)

_OCCUPATION = re.compile(
    r"(?:工程师|程序员|老师|教师|学生|医生|护士|设计师|开发者|开发人员|研究员|经理|律师|作家|记者|"
    r"会计|厨师|司机|科学家|教授|分析师|架构师|顾问|创业者|摄影师|翻译|编辑|艺术家|音乐家|演员|"
    r"销售|公务员|研究生|博士|大学生|实习生|码农|运营|产品|主管|总监|店主|老板|警察|军人|农民|"
    r"工人|售货员|服务员|快递员|秘书|助理|银行职员|白领|自由职业者|退休|家庭主妇|画家|歌手|"
    r"博主|主播|程序媛|医师|药剂师|兽医|牙医|教练|导游|空姐|飞行员|建筑师|营养师|心理咨询师)$"
)

_PETS = re.compile(
    r"猫|狗|兔子|仓鼠|鹦鹉|鸟|鱼|乌龟|龟|蛇|蜥蜴|马|柯基|金毛|泰迪|哈士奇|拉布拉多|柴犬|布偶|英短|"
    r"美短|边牧|比熊|萨摩耶"
)
#: What cannot start a thing's name: particles and verbs ("吃了嘴巴会肿" names no food).
_NOT_A_THING = re.compile(r"^[了过着得就会都也还要能一]|会|就")

_LANGUAGE = re.compile(r"[语文话]$|英文|中文|粤语|普通话")

_DIETS = {"素食者": "素食", "素食主义者": "素食", "吃素": "素食", "纯素": "纯素", "素食": "素食"}


@dataclass(slots=True)
class State:
    """What the words before the verb said."""

    speaker: Speaker
    negated: bool = False
    #: The negation was 没有: "not have" before a noun ("没有男朋友"), "did not" before a verb.
    lacks: bool = False
    change: bool = False
    past: bool = False
    lead: str = ""
    #: The message talks about work ("去了X" is then a new employer).
    work: bool = False
    #: A person the clause introduced in its object ("有女朋友"), for a later 她.
    people_other: Speaker | None = None


def clean(value: str) -> str:
    return PARTICLES.sub("", value.strip(" ,.")).strip()


def _items(value: str) -> list[str]:
    parts = [clean(p) for p in _LIST.split(value)]
    return [p for p in parts if p] or [value]


_Handler = Callable[[re.Match[str], State], list[Statement]]


def _say(state: State, verb: str, value: str, *, negated_form: str = "不") -> str:
    who = state.speaker.chinese()
    if state.past and state.negated is False:
        return f"{who}以前{verb}{value}"
    if state.negated:
        form = "不再" if state.change or state.past else negated_form
        return f"{who}{form}{verb}{value}"
    return f"{who}{state.lead}{verb}{value}"


def _one(
    state: State, predicate: str, value: str, content: str, *, updates: bool = False
) -> list[Statement]:
    value = clean(value)
    if not value or value.startswith(("你", "您", "这", "那", "它", "什么")):
        return []
    negated = state.negated or state.past
    return [
        Statement(
            predicate=predicate,
            value=value,
            content=content,
            speaker=state.speaker,
            negated=negated,
            # 我不再喜欢咖啡 replaces the earlier liking; 我没有跳槽到华为 replaces nothing
            updates_previous=state.change or (updates and not state.negated),
        )
    ]


def _many(state: State, predicate: str, verb: str, value: str) -> list[Statement]:
    out = []
    for item in _items(value):
        out += _one(state, predicate, item, _say(state, verb, item))
    return out


def _lives(m: re.Match[str], s: State) -> list[Statement]:
    place = clean(m["v"])
    moved = m["verb"].startswith("搬")
    return _one(s, "lives_in", place, _say(s, "住在", place), updates=moved)


def _from(m: re.Match[str], s: State) -> list[Statement]:
    place = m["v"] or m["w"]
    return _one(s, "from", place, _say(s, "来自", clean(place)))


def _employer(m: re.Match[str], s: State) -> list[Statement]:
    place = clean(m["v"])
    verb = "工作" if not m["verb"] or m["verb"].startswith("干") else m["verb"]
    out = _one(s, "employer", place, f"{_say(s, '在', place)}{verb}", updates=bool(m["chg"]))
    role = clean(m["role"] or "")
    if role:
        out += _one(s, "occupation", role, _say(s, "做", role), updates=bool(m["chg"]))
    return out


def _copula(m: re.Match[str], s: State) -> list[Statement]:
    value = clean(m["v"])
    if value in ("学生", "大学生", "研究生", "博士生", "高中生", "初中生", "小学生", "留学生"):
        return _one(s, "occupation", value, _say(s, "是", value), updates=s.change)
    if studied := re.fullmatch(r"(?:学|读)(.+?)(?:专业)?的?", value):  # 是学法律的
        subject = studied.group(1)
        return _one(s, "studies", subject, f"{s.speaker.chinese()}学{subject}")
    if zodiac := re.match(r"属(.)", value):
        return _one(s, "zodiac", zodiac.group(1), f"{s.speaker.chinese()}属{zodiac.group(1)}")
    if value.startswith("开") and len(value) > 2:  # 是开健身房的: runs one
        return _one(s, "occupation", value, f"{s.speaker.chinese()}{value}", updates=s.change)
    if value.endswith("人") and 2 <= len(value) <= 5 and not _OCCUPATION.search(value):
        return _one(s, "from", value[:-1], _say(s, "来自", value[:-1]))
    if value in _DIETS:
        return _one(s, "diet", _DIETS[value], _say(s, "是", value))
    bare = re.sub(r"^(?:一名|一个|一位|一|个|名|位)", "", value)
    if _OCCUPATION.search(bare) or re.search(r"(?:长|员|师|医生|官|工|手)$", bare):
        return _one(s, "occupation", bare, _say(s, "是", value), updates=s.change)
    return []


def name_of(m: re.Match[str], s: State) -> list[Statement]:
    """叫X: the speaker's name (a person's, who is met by it)."""
    name = clean(m["v"])
    if not (1 <= len(name) <= 4) or name.startswith("了"):  # 叫了外卖: ordered, no name
        return []
    found = _one(s, "name", name, f"{s.speaker.chinese()}叫{name}")
    if not s.speaker.is_user:
        s.people_other = Speaker(name=name, relation=s.speaker.relation)
    return found


def _school(m: re.Match[str], s: State) -> list[Statement]:
    school = clean(m["v"])
    return _one(s, "school", school, f"{s.speaker.chinese()}在{school}读书{clean(m['role'])}")


def _opened(m: re.Match[str], s: State) -> list[Statement]:
    place = clean(m["v"])
    return _one(s, "occupation", place, f"{s.speaker.chinese()}开了{place}", updates=True)


def _age(m: re.Match[str], s: State) -> list[Statement]:
    return _one(s, "age", m["v"], f"{s.speaker.chinese()}{m['v']}岁")


def _likes(m: re.Match[str], s: State) -> list[Statement]:
    verb = m["verb"]
    if verb in ("讨厌", "受不了", "反感"):  # 我不讨厌下雨: not a dislike
        return _many(s, "dislikes", verb, m["v"])
    if s.negated and not s.change:
        s.negated = False
        return _many(s, "dislikes", "不" + verb, m["v"])
        return _many(s, "dislikes", verb, m["v"])
    if verb in ("更喜欢", "偏好", "宁愿", "比较喜欢"):
        return _many(s, "prefers", verb, m["v"])
    return _many(s, "likes", verb, m["v"])


def _allergic(m: re.Match[str], s: State) -> list[Statement]:
    out = []
    for item in _items(m["v"]):
        out += _one(s, "allergic_to", item, f"{s.speaker.chinese()}对{clean(item)}过敏")
    return out


def _keeps(m: re.Match[str], s: State) -> list[Statement]:
    """养了 / 有 + a pet, a relative, a condition or a thing."""
    value = clean(m["v"])
    verb = m["verb"]
    if _PETS.search(value):
        return _one(s, "has_pet", value, _say(s, verb, value, negated_form="没"))
    partner = re.fullmatch(r"(?:一个|个)?(男朋友|女朋友|男友|女友|对象)", value)
    if partner and verb == "有":
        if not s.negated:
            s.people_other = Speaker(relation=partner.group(1))
        said = _say(s, verb, value, negated_form="没")
        if s.negated and not s.past:  # 没有男朋友: single, said positively
            return _one(
                replace(s, negated=False), "relationship_status", "单身", said, updates=True
            )
        return _one(s, "relationship_status", "恋爱中", said, updates=True)
    if any(r in value for r in RELATIONS):
        return _one(s, "family", value, _say(s, verb, value, negated_form="没"))
    if re.search(r"病|症|哮喘|过敏", value):
        return _one(s, "health", value, _say(s, verb, value, negated_form="没"))
    if verb == "有" and re.search(r"车|房|钢琴|吉他", value):
        return _one(s, "owns", value, _say(s, verb, value, negated_form="没"))
    return []


def _graduated(m: re.Match[str], s: State) -> list[Statement]:
    """毕业于清华大学, 从北京大学毕业: the school, as a finished one."""
    school = clean(m["v"] or m["w"])
    return _one(
        s, "school", f"毕业于{school}", f"{s.speaker.chinese()}毕业于{school}", updates=True
    )


def _speaks(m: re.Match[str], s: State) -> list[Statement]:
    out = []
    for item in _items(m["v"]):
        if _LANGUAGE.search(item) or item in ("英文", "中文"):
            out += _one(s, "speaks", item, _say(s, m["verb"], item))
    return out


def _learns(m: re.Match[str], s: State) -> list[Statement]:
    if m["v"].startswith("过"):  # 我学过画画: learned it once, not learning it now
        s.past = True
        return _many(s, "learning", "学过", m["v"][1:])
    return _many(s, "learning", "学" if s.negated else "在学", m["v"])


def _consumes(m: re.Match[str], s: State) -> list[Statement]:
    verb = m["verb"]
    if _NOT_A_THING.search(clean(m["v"])):
        return []
    if m["v"].startswith("素"):
        return _one(s, "diet", "素食", _say(s, "吃素", ""))
    predicate = "drinks" if verb == "喝" else "eats"
    return _many(s, predicate, verb, m["v"])


def _switch(m: re.Match[str], s: State) -> list[Statement]:
    """改喝茶 / 改玩尤克里里: the new habit replaces an old one."""
    found: list[Statement] = []
    for name, pattern, handler in VERBS:
        inner = pattern.match(m["v"])
        if inner is not None and name not in ("switch", "general"):
            found = handler(inner, s)
            break
    return [
        Statement(
            predicate=f.predicate,
            value=f.value,
            content=f.content,
            speaker=f.speaker,
            negated=False,
            updates_previous=True,
        )
        for f in found
    ]


def _quit(m: re.Match[str], s: State) -> list[Statement]:
    s.negated = s.change = True
    thing = clean(m["v"])
    return _one(s, "habit", thing, f"{s.speaker.chinese()}戒了{thing}")


def _goal(m: re.Match[str], s: State) -> list[Statement]:
    goal = clean(m["v"])
    if re.match(r"问|知道|说|请|让|看看|确认|听|了解|聊", goal) or "你" in goal or len(goal) < 2:
        return []
    return _one(s, "goal", goal, _say(s, m["verb"], goal))


def _status(m: re.Match[str], s: State) -> list[Statement]:
    status = _STATUSES[m["v"]]
    said = f"{s.speaker.chinese()}{m['v']}了" if status not in ("单身", "恋爱中") else ""
    return _one(
        s, "relationship_status", status, said or f"{s.speaker.chinese()}{status}", updates=True
    )


_STATUSES = {
    "结婚": "已婚",
    "单身": "单身",
    "离婚": "离婚",
    "订婚": "订婚",
    "离异": "离婚",
    "脱单": "恋爱中",
    "谈恋爱": "恋爱中",
    "恋爱": "恋爱中",
    "有对象": "恋爱中",
    "分手": "单身",
}


def _where(m: re.Match[str], s: State) -> list[Statement]:
    """在X: no longer at a company (已经不在字节了), still in the army (还在部队), or where
    the user is now (现在在深圳)."""
    where = clean(m["v"])
    if s.negated and s.change:
        return _one(s, "employer", where, f"{s.speaker.chinese()}不再在{where}工作")
    if re.search(r"(?:队|公司|医院|学校|单位|部门|店|厂|所|局|院)$", where) and not s.negated:
        return _one(s, "employer", where, f"{s.speaker.chinese()}在{where}", updates=s.change)
    if (s.change or _PLACE_NAME.fullmatch(where)) and not s.negated:
        # 现在在深圳, 我自己在重庆: where the user is (not 在路上, 在外面, 在家里)
        return _one(s, "lives_in", where, f"{s.speaker.chinese()}住在{where}", updates=s.change)
    return []


#: A place name after 在: not a position (路上, 外面, 楼下) or a pointer (这里, 那儿).
_PLACE_NAME = re.compile(
    r"(?!这|那|哪|外|家|楼|车|路|床|屋|网)[\u4e00-\u9fff]{2,6}(?<![上里边面下中前后儿])"
)


def _health(m: re.Match[str], s: State) -> list[Statement]:
    return _one(s, "health", m["v"], _say(s, "有", m["v"], negated_form="没"))


def _joined(m: re.Match[str], s: State) -> list[Statement]:
    """去了宁德时代 in a message about work: a new employer."""
    if not s.work:
        return []
    place = clean(m["v"])
    return _one(s, "employer", place, f"{s.speaker.chinese()}在{place}工作", updates=True)


def _pet_named(m: re.Match[str], s: State) -> list[Statement]:
    """猫叫团子和年糕: the user's pets, by name."""
    content = f"{s.speaker.chinese()}的{m['pet']}叫{clean(m['v'])}"
    return _one(s, "has_pet", f"{m['pet']}{clean(m['v'])}", content)


def _afraid(m: re.Match[str], s: State) -> list[Statement]:
    return _many(s, "afraid_of", m["verb"], m["v"])


def _hobby(m: re.Match[str], s: State) -> list[Statement]:
    if not clean(m["v"]):
        return _one(s, "hobby", m["verb"], _say(s, m["verb"], ""))
    return _many(s, "hobby", m["verb"], m["v"])


def _general(m: re.Match[str], s: State) -> list[Statement]:
    """Any other verb with an object, for habits (每天/经常 …) and lasting states."""
    verb, value = m["verb"], clean(m["v"])
    if (not s.lead and not s.negated) or "了" in value or _NOT_A_THING.search(value):
        return []
    return _one(s, "habit", verb + value, _say(s, verb, value))


_P = r"(?P<v>.+)"
#: A character of a place after 在: no verb of work or study (在公司上班, 在家学习), but
#: 上 of a name (上海, 上饶) is one.
_PLACE_CHAR = r"(?:[^做当工上读学住]|上(?![班学课]))"

#: A pet and the name it is called by: 猫叫团子 (also what 我的 + a pet starts with).
PET_NAMED = r"(?P<pet>猫|狗|猫咪|狗狗)叫"

_VERB_PATTERNS: tuple[tuple[str, str, _Handler], ...] = (
    ("status", r"(?P<v>结婚|单身|离婚|订婚|离异|脱单|谈恋爱|恋爱|有对象|分手)", _status),
    (
        "lives",
        r"(?:从[^搬]{1,10})?(?P<verb>住在|住|搬到了?|搬去了?|搬来了?|搬家到了?)" + _P,
        _lives,
    ),
    ("from", r"(?:来自|是从)(?P<v>.+?)(?:来的?)?$|从(?P<w>.+?)来的?$", _from),
    ("name", r"(?:叫|名字叫|名字是)" + _P, name_of),
    (
        "age",
        r"(?:今年(?=\d{1,3}(?!\d))|(?=(?:\d{1,3}|[一二三四五六七八九十两]{1,3})岁)|(?=\d{1,2}$))"
        r"(?P<v>\d{1,3}|[一二三四五六七八九十两]{1,3})岁?",
        _age,
    ),
    (
        "employer",
        # not 换工作, 找工作, 想换工作, 丢了工作: a job looked for or lost is no employer
        r"(?P<chg>换到了?|跳槽到了?|跳槽去了?|去了?)?在?(?!(?:想|要|打算|准备|正在|在)?(?:换|找|丢|辞|没))"
        r"(?P<v>(?:麦当劳|[^做当])+?)(?P<verb>工作|上班|实习|干了?|打工)"
        # 干了三年, 工作了五年多: how long, not part of the place
        r"(?:了?(?:[一二三四五六七八九十两几半\d]+|好几)(?:年|个月|个多月|周|天)多?了?)?"
        r"(?:,?(?:做|当)(?P<role>.+))?$",
        _employer,
    ),
    ("employer-role", r"(?P<chg>)在(?P<v>麦当劳|.+?)(?P<verb>)(?:做|当)(?P<role>.+)$", _employer),
    # 跳槽到了华为, 换工作去了腾讯: the new employer, without 工作 after it
    (
        "employer-moved",
        r"(?P<chg>(?:跳槽|换工作)(?:到了?|去了?))(?P<v>[^,]+?)(?P<verb>)(?:(?:做|当)(?P<role>.+?))?了?$",
        _employer,
    ),
    ("allergic", r"对(?P<v>.+?)(?:过敏|不耐受)", _allergic),
    ("allergic-of", r"(?P<v>[^吃喝就会一都]+?)(?:过敏|不耐受)", _allergic),
    (
        "school",
        r"在(?P<v>.+?)(?:读书|上学|读大学|上大学|读研|读博|念书|读高中|读)(?P<role>.*)$",
        _school,
    ),
    (
        "school-was",
        r"(?:本科|研究生|硕士|博士|大学)(?:是)?在(?P<v>.+?)(?:读|念|上)的?(?P<role>)$",
        _school,
    ),
    (
        "school-year",
        r"(?:读|上)(?P<v>(?:高|初|大)[一二三四]|研[一二三]|幼儿园|小学|初中|高中)",
        lambda m, s: _one(s, "school", m["v"], f"{s.speaker.chinese()}在读{m['v']}"),
    ),
    (
        "grade",
        r"(?:上|读)?(?P<v>[一二三四五六]年级)",
        lambda m, s: _one(s, "school", m["v"], f"{s.speaker.chinese()}上{m['v']}", updates=True),
    ),
    (
        "health",
        r"(?:得了|有|患有|患了|查出)?(?P<v>中风|糖尿病|高血压|心脏病|哮喘|抑郁症|焦虑症|贫血|癌症|"
        r"胃病|鼻炎|颈椎病|痛风|甲亢|甲减|失眠)",
        _health,
    ),
    ("class", r"报了?(?:个|一个)?(?P<v>.+?班)", _learns),
    ("pet-named", PET_NAMED + r"(?P<v>.+)", _pet_named),
    ("joined", r"(?:去了|进了|加入了?)(?P<v>[\u4e00-\u9fffA-Za-z]{2,10})$", _joined),
    ("graduated-from", r"(?:毕业于(?P<v>.+)|从(?P<w>.+?)毕业(?:的)?$)", _graduated),
    (
        "graduated",
        r"(?:大学|研究生|硕士|博士)?毕业",
        lambda m, s: _one(s, "school", "已毕业", f"{s.speaker.chinese()}已经毕业", updates=True),
    ),
    (
        "opened",
        r"(?:在[^开]{1,8})?(?:开了|开)(?P<v>.*(?:店|公司|工作室|餐厅|餐馆|诊所|酒吧|馆|铺|坊|厂|摊))$",
        _opened,
    ),
    ("afraid", r"(?P<verb>害怕|很怕|怕)" + r"(?P<v>.+)", _afraid),
    (
        "likes",
        r"(?P<verb>最喜欢|更喜欢|比较喜欢|喜欢|喜爱|热爱|超爱|最爱|爱(?![好人情])|讨厌|受不了|反感|偏好|宁愿|迷上了?)"
        + _P,
        _likes,
    ),
    ("keeps", r"(?P<verb>养了|养|有)" + _P, _keeps),
    (
        "adopted",
        r"(?P<verb>捡了|捡到了?|领养了?|收养了?|买了)(?P<v>[^,]*(?:猫|狗|鸟|鱼|兔|仓鼠|龟|鹦鹉).*)",
        _keeps,
    ),
    ("speaks", r"(?P<verb>会说|会讲|能说|说|讲)" + _P, _speaks),
    (
        "school-now",
        r"(?P<v>(?:大|高|初|研)[一二三四])$",
        lambda m, s: _one(s, "school", m["v"], f"{s.speaker.chinese()}{m['v']}"),
    ),
    (
        "studied",
        r"(?:学|读)的(?:专业)?是(?P<v>.+)",
        lambda m, s: _one(s, "studies", clean(m["v"]), f"{s.speaker.chinese()}学{clean(m['v'])}"),
    ),
    ("learns", r"(?:在学(?![校院])|学习|学(?![校院]))" + _P, _learns),
    ("consume", r"(?P<verb>喝|吃)" + _P, _consumes),
    ("switch", r"(?:改|换成|改成)" + _P, _switch),
    ("quit", r"(?:戒了|戒掉了|戒)" + _P, _quit),
    ("goal", r"(?P<verb>想要|想|打算|计划|希望|准备|要)" + _P, _goal),
    ("copula", r"(?:是|做|当)" + _P, _copula),
    ("zodiac", r"(?P<v>属.)", _copula),
    ("lives-rent", r"在(?P<v>" + _PLACE_CHAR + r"{2,8}?)(?P<verb>)(?:租房子?|租)?住$", _lives),
    ("where", r"在(?P<v>" + _PLACE_CHAR + r"{2,8})$", _where),
    (
        "hobby",
        r"去?(?P<verb>跑步|游泳|爬山|徒步|骑车|骑行|画画|唱歌|跳舞|健身|瑜伽|钓鱼|做饭|烘焙|冥想|"
        r"滑雪|冲浪|攀岩|露营|弹|打|踢|练|玩|骑|画|唱)(?P<v>.*)",
        _hobby,
    ),
    ("general", r"(?P<verb>[\u4e00-\u9fff]{1,2}?)(?P<v>[\u4e00-\u9fffA-Za-z0-9]{2,})", _general),
)


VERBS = tuple((name, re.compile(pattern), handler) for name, pattern, handler in _VERB_PATTERNS)

_VERB_PATTERNS_BY_NAME = {name: pattern for name, pattern, _ in VERBS}
