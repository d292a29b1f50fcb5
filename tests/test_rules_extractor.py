"""The rule-based fallback extractor: what ordinary statements give, and what gives nothing."""

# Chinese test sentences use full-width punctuation on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import msgspec
import pytest

from memory.rules_extractor import extract_facts, structure_of
from schemas.llm import ExtractedFact

Row = tuple[str, str, str]  # content, predicate, value


def facts_of(text: str) -> list[Row]:
    return [(f.content, f.predicate, f.value) for f in extract_facts(text)]


# fmt: off
ENGLISH: dict[str, tuple[str, list[Row]]] = {
    "name": ("My name is Ada Lovelace.",
             [("User's name is Ada Lovelace", "name", "Ada Lovelace")]),
    "i-am-name": ("Hi, I'm Ada!", [("User's name is Ada", "name", "Ada")]),
    "call-me": ("Call me Ishmael.", [("User's name is Ishmael", "name", "Ishmael")]),
    "age": ("I'm 34 years old", [("User is 34 years old", "age", "34")]),
    "live-in": ("I live in Lyon with my wife.",
                [("User lives in Lyon with their wife", "lives_in", "Lyon")]),
    "from": ("I'm from Porto, Portugal.", [("User is from Porto", "from", "Porto")]),
    "work-at-as": ("I work at Acme as an engineer.",
                   [("User works at Acme", "employer", "Acme"),
                    ("User works as an engineer", "occupation", "engineer")]),
    "role-at": ("I'm a software engineer at Google.",
                [("User is a software engineer", "occupation", "software engineer"),
                 ("User works at Google", "employer", "Google")]),
    "working-on": ("I'm working on a compiler for Lua",
                   [("User is working on a compiler for Lua", "works_on", "a compiler")]),
    "like": ("I like green tea.", [("User likes green tea", "likes", "green tea")]),
    "love-detail": ("I really love hiking in the mountains!",
                    [("User loves hiking in the mountains", "likes", "hiking")]),
    "favourite": ("My favourite food is ramen",
                  [("User's favourite food is ramen", "favorite", "ramen")]),
    "dont-like": ("I don't like cilantro.",
                  [("User doesn't like cilantro", "dislikes", "cilantro")]),
    "cant-stand": ("I can't stand loud music",
                   [("User can't stand loud music", "dislikes", "loud music")]),
    "prefer-over": ("I prefer dark mode over light mode.",
                    [("User prefers dark mode over light mode", "prefers", "dark mode")]),
    "want-to": ("I want to learn Portuguese.",
                [("User wants to learn Portuguese", "goal", "learn Portuguese")]),
    "allergies": ("I'm allergic to peanuts and shellfish.",
                  [("User is allergic to peanuts", "allergic_to", "peanuts"),
                   ("User is allergic to shellfish", "allergic_to", "shellfish")]),
    "pets-named": ("I have two cats, Miso and Tofu.",
                   [("User has two cats, Miso and Tofu", "has_pet", "two cats, Miso and Tofu")]),
    "sister": ("I have a sister named Ana.",
               [("User has a sister named Ana", "family", "a sister named Ana")]),
    "languages": ("I speak French, Spanish and a bit of Italian",
                  [("User speaks French", "speaks", "French"),
                   ("User speaks Spanish", "speaks", "Spanish"),
                   ("User speaks a bit of Italian", "speaks", "a bit of Italian")]),
    "birthday": ("My birthday is on May 3rd.",
                 [("User's birthday is May 3rd", "birthday", "May 3rd")]),
    "email": ("My email is ada@example.com",
              [("User's email is ada@example.com", "email", "ada@example.com")]),
    "diet": ("I'm vegetarian.", [("User is vegetarian", "diet", "vegetarian")]),
    "married": ("I'm married to John.",
                [("User is married to John", "relationship_status", "married")]),
    "two-verbs": ("I play the piano and sing in a choir.",
                  [("User plays the piano", "hobby", "the piano"),
                   ("User sings in a choir", "sing", "a choir")]),
    "go-ing": ("I go running every morning.",
               [("User goes running every morning", "hobby", "running")]),
    "learning": ("I'm learning Japanese.", [("User is learning Japanese", "learning", "Japanese")]),
    "any-verb": ("I collect vintage stamps", [("User collects vintage stamps", "collect",
                                               "vintage stamps")]),
    "habit": ("For breakfast I usually have oatmeal with berries.",
              [("User usually has oatmeal with berries for breakfast", "eats", "oatmeal")]),
    "fan-of": ("I'm a big fan of the Beatles",
               [("User is a fan of the Beatles", "likes", "the Beatles")]),
    "diet-fragment": ("Strict vegan for five years now.", [("User is vegan", "diet", "vegan")]),
    "status-fragment": ("Married with two kids.",
                        [("User is married", "relationship_status", "married")]),
    "im": ("im allergic to cats", [("User is allergic to cats", "allergic_to", "cats")]),
    "counted-pets": ("A dog and two cats.",
                     [("User has a dog and two cats", "has_pet", "a dog and two cats")]),
    "you-asked": ("ok so since you asked: im a big fan of bouldering",
                  [("User is a fan of bouldering", "likes", "bouldering")]),
    "taste-fragment": ("also really into sourdough baking lately 🍞 anyway",
                       [("User likes sourdough baking", "likes", "sourdough baking")]),
    "wry-emoji": ("turns out im allergic to kiwi, found out the hard way 🙃",
                  [("User is allergic to kiwi", "allergic_to", "kiwi")]),
    "breed": ("we have a rescue greyhound called biscuit",
              [("User has a rescue greyhound called biscuit", "has_pet",
                "a rescue greyhound called biscuit")]),
    "kids-and-pet": ("I have a son and a dog called Rex",
                     [("User has a son", "family", "a son"),
                      ("User has a dog called Rex", "has_pet", "a dog called Rex")]),
    "adverb-first": ("i finally quit my job",
                     [("User finally quits their job", "quit", "their job")]),
    "work-manner": ("I work part time as a dental hygienist",
                    [("User works as a dental hygienist", "occupation", "dental hygienist")]),
    "stopped-swimming": ("I stopped swimming",
                         [("User no longer swims", "habit", "swimming")]),
    "grew-up": ("I grew up in Leeds", [("User grew up in Leeds", "from", "Leeds")]),
    "been-to": ("I have been to Paris", [("User has been to Paris", "visited", "Paris")]),
    "pet-is-called": ("my cat is called noodle",
                      [("User has a cat named noodle", "has_pet", "a cat named noodle")]),
    "new-gig-as": ("started a new gig as a barista",
                   [("User works as a barista", "occupation", "barista")]),
    "got-into-school": ("I got into Oxford", [("User studies at Oxford", "school", "Oxford")]),
    "got-into-taste": ("I got into knitting last winter",
                       [("User is into knitting", "likes", "knitting")]),
    "the-country": ("we moved to the netherlands",
                    [("User lives in the Netherlands", "lives_in", "the Netherlands")]),
    "born-in": ("I was born in Lisbon.", [("User was born in Lisbon", "from", "Lisbon")]),
    "born-on": ("I was born on 3 March 1990.",
                [("User's birthday is 3 March 1990", "birthday", "3 March 1990")]),
    "graduated": ("I graduated from Leeds last year.",
                  [("User graduated from Leeds", "school", "graduated from Leeds")]),
    "teach": ("I teach 8th grade science.", [("User teaches 8th grade science", "occupation",
                                             "8th grade science teacher")]),
    "dating": ("I'm dating Mia.", [("User is dating Mia", "relationship_status", "dating Mia")]),
    "seeing-someone": ("I've been seeing someone. Her name's Priya.",
                       [("User is seeing someone", "relationship_status", "dating"),
                        ("User's partner's name is Priya", "name", "Priya")]),
    "adopted": ("We adopted a rescue dog last month.",
                [("User has a rescue dog", "has_pet", "a rescue dog")]),
    "became-diet": ("I became vegetarian last year.",
                    [("User is vegetarian", "diet", "vegetarian")]),
    "take-medicine": ("I take levothyroxine every morning.",
                      [("User takes levothyroxine every morning", "takes", "levothyroxine")]),
    "taken-up": ("I've taken up bowls.", [("User takes up bowls", "hobby", "bowls")]),
    "turned-age": ("I turned 40 last week.", [("User is 40 years old", "age", "40")]),
    "cleft": ("What I do every Sunday is a parkrun.",
              [("User does a parkrun every Sunday", "hobby", "a parkrun")]),
    "they-call-me": ("My friends call me Bea.", [("User's name is Bea", "name", "Bea")]),
    "quit-habit": ("I quit smoking last year.", [("User no longer smokes", "habit", "smoking")]),
    "retired": ("I retired last year.", [("User is retired", "occupation", "retired")]),
    "quit-what-the-message-names": ("Cigarettes were killing me, so I quit.",
                                    [("User no longer smokes", "habit", "smoking")]),
    "stopped-ing": ("I stopped drinking last year.",
                    [("User no longer drinks", "habit", "drinking")]),
    "stopped-a-verb": ("I stopped running.", [("User no longer runs", "habit", "running")]),
    "gave-up": ("I gave up sugar.", [("User quit sugar", "habit", "sugar")]),
    "quit-job-at": ("I quit my job at Google.",
                    [("User no longer works at Google", "employer", "Google")]),
    "got-a-job": ("I got a job at Shopify.", [("User works at Shopify", "employer", "Shopify")]),
    "got-married": ("I got married last year.",
                    [("User got married", "relationship_status", "married")]),
    "got-promoted": ("I got promoted to team lead.",
                     [("User is a team lead", "occupation", "team lead")]),
    "got-a-pet": ("I got a puppy last week.", [("User has a puppy", "has_pet", "a puppy")]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), ENGLISH.values(), ids=ENGLISH.keys())
def test_english_statements_become_third_person_facts_with_their_structure(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("I moved to Berlin last year", ("lives_in", "Berlin"), id="moved"),
        pytest.param("we relocated to Denver", ("lives_in", "Denver"), id="relocated"),
        pytest.param("just moved into a flat in leeds!", ("lives_in", "Leeds"), id="no-subject"),
        pytest.param("I'm now a product manager", ("occupation", "product manager"), id="now-a"),
        pytest.param("I started at Stripe last week", ("employer", "Stripe"), id="started-at"),
        pytest.param("I got a job at Airbus", ("employer", "Airbus"), id="got-a-job"),
        pytest.param("I got hired at Spotify.", ("employer", "Spotify"), id="got-hired-at"),
        pytest.param("I just got hired by Google", ("employer", "Google"), id="got-hired-by"),
        pytest.param(
            "I got my first job as a nurse", ("occupation", "nurse"), id="got-my-first-job-as"
        ),
        pytest.param("I switched jobs, I'm at Spotify now", ("employer", "Spotify"), id="at-now"),
    ],
)
def test_moves_and_job_changes_are_updates_however_they_are_phrased(
    text: str, expected: tuple[str, str]
) -> None:
    found = [f for f in extract_facts(text) if f.predicate == expected[0]]
    assert [(f.predicate, f.value, f.updates_previous) for f in found] == [(*expected, True)]


@pytest.mark.parametrize(
    ("text", "content", "predicate", "value"),
    [
        pytest.param(
            "I don't eat meat anymore.", "User no longer eats meat", "eats", "meat", id="anymore"
        ),
        pytest.param(
            "I used to live in Rome.",
            "User previously lived in Rome",
            "lives_in",
            "Rome",
            id="used-to",
        ),
        pytest.param(
            "I quit smoking last year.", "User no longer smokes", "habit", "smoking", id="quit"
        ),
        pytest.param(
            "I no longer work at Google.",
            "User no longer works at Google",
            "employer",
            "Google",
            id="no-longer",
        ),
        pytest.param(
            "I've stopped drinking alcohol completely",
            "User no longer drinks alcohol",
            "drinks",
            "alcohol",
            id="stopped",
        ),
        pytest.param(
            "i'm not vegan anymore", "User is no longer vegan", "diet", "vegan", id="not-be"
        ),
        pytest.param(
            "I am no longer married",
            "User is no longer married",
            "relationship_status",
            "married",
            id="no-longer-be",
        ),
        pytest.param(
            "i'm not really playing bass anymore",
            "User no longer plays bass",
            "hobby",
            "bass",
            id="not-progressive",
        ),
        pytest.param(
            "I have not been to Paris",
            "User has not been to Paris",
            "visited",
            "Paris",
            id="not-perfect",
        ),
        pytest.param("我不再喝咖啡了", "用户不再喝咖啡", "drinks", "咖啡", id="zh-no-longer"),
        pytest.param("我以前住在杭州", "用户以前住在杭州", "lives_in", "杭州", id="zh-before"),
        pytest.param("我戒烟了", "用户戒了烟", "habit", "烟", id="zh-quit"),
        pytest.param("我没有车", "用户没有车", "owns", "车", id="zh-not-have"),
        pytest.param("我没有哥哥", "用户没有哥哥", "family", "哥哥", id="zh-no-relative"),
        pytest.param("我没有养猫", "用户没养猫", "has_pet", "猫", id="zh-did-not-keep"),
        pytest.param("我从来不吃辣", "用户不吃辣", "eats", "辣", id="zh-never"),
    ],
)
def test_negation_retraction_and_past_tense_give_negated_facts(
    text: str, content: str, predicate: str, value: str
) -> None:
    [fact] = extract_facts(text)
    assert (fact.content, fact.predicate, fact.value, fact.negated) == (
        content,
        predicate,
        value,
        True,
    )


def test_the_verbs_after_my_routine_colon_are_the_users() -> None:
    found = extract_facts("my routine is fixed: swim at 6:30 every morning, then work 9 to 5")
    assert [f.content for f in found] == [
        "User swims at 6:30 every morning",
        "User works 9 to 5",
    ]


def test_a_band_that_split_up_is_no_break_up() -> None:
    found = extract_facts("band's done, we split up last month")
    assert [f for f in found if f.predicate == "relationship_status"] == []
    [single] = extract_facts("me and my girlfriend split up")
    assert (single.predicate, single.value) == ("relationship_status", "single")


@pytest.mark.parametrize(
    "text",
    [
        "Good news, I've moved to the afternoon shift at the bakery!",
        "I moved to a new team",
        "Strict vegan, not even honey.",
    ],
)
def test_a_move_to_what_is_no_place_is_no_new_home_and_a_capital_no_name(text: str) -> None:
    found = extract_facts(text)
    assert [f for f in found if f.predicate in ("lives_in", "name")] == []


@pytest.mark.parametrize(
    ("text", "content", "subject", "relation"),
    [
        pytest.param(
            "My sister Ana is a nurse in Boston.",
            "User's sister Ana is a nurse in Boston",
            "Ana",
            "sister",
            id="named",
        ),
        pytest.param(
            "my husband's allergic to dogs",
            "User's husband is allergic to dogs",
            "husband",
            "husband",
            id="relative-s-is",
        ),
        pytest.param(
            "my coworker priya is gluten free",
            "User's coworker Priya is gluten-free",
            "Priya",
            "coworker",
            id="two-word-diet",
        ),
        pytest.param(
            "My friend Tom loves heavy metal.",
            "User's friend Tom loves heavy metal",
            "Tom",
            "friend",
            id="friend",
        ),
        pytest.param(
            "my best friend raj is obsessed with jazz",
            "User's friend Raj likes jazz",
            "Raj",
            "friend",
            id="lower-case",
        ),
        pytest.param(
            "My wife Maria is a teacher and she loves gardening",
            "User's wife Maria loves gardening",
            "Maria",
            "wife",
            id="she",
        ),
        pytest.param("我妹妹安娜是护士。", "用户的妹妹安娜是护士", "安娜", "妹妹", id="zh"),
        pytest.param("我女朋友是老师。", "用户的女朋友是老师", "女朋友", "女朋友", id="zh-unnamed"),
    ],
)
def test_facts_about_other_people_are_about_them(
    text: str, content: str, subject: str, relation: str
) -> None:
    found = extract_facts(text)
    assert content in [f.content for f in found]
    assert all(
        (f.subject, f.relation, f.category) == (subject, relation, "knowledge") for f in found
    )


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("I might try learning Svelte at some point.", id="might"),
        pytest.param("Do you like opera?", id="question"),
        pytest.param("do you like opera", id="question-unpunctuated"),
        pytest.param("If I lived in Paris I would eat croissants daily.", id="condition"),
        pytest.param("if i lived in paris i would eat croissants", id="condition-lower"),
        pytest.param("I would love to visit Japan someday", id="would"),
        pytest.param("Maybe I'll move to Berlin", id="maybe"),
        pytest.param("I think I'm allergic to cats", id="i-think"),
        pytest.param("I want to ask you something", id="request"),
        pytest.param("I just love working weekends 🙃", id="ironic-emoji"),
        pytest.param("Translate 'I am into jazz' into Italian.", id="quote-then-into"),
        pytest.param("how do i dry out a keyboard", id="question-without-mark"),
        pytest.param("ordering lunch for the team is a puzzle", id="gerund-subject"),
        pytest.param("I like it", id="pointer"),
        pytest.param("I like that you asked", id="pointer-clause"),
        pytest.param("my coworker keeps saying I should move to Seattle", id="reported"),
        pytest.param("Translate 'I live in Rome and I have three cats' into Italian.", id="quoted"),
        pytest.param("Write me a poem about loving the ocean", id="order"),
        pytest.param("I'm tired", id="passing-state"),
        pytest.param("I loved that movie", id="reaction"),
        pytest.param("I had pasta yesterday", id="episode"),
        pytest.param("Tom loves heavy metal", id="stranger"),
        pytest.param("你喜欢什么音乐？", id="zh-question"),
        pytest.param("我可能会去日本留学。", id="zh-maybe"),
        pytest.param("如果我住在巴黎，我会每天吃可颂。", id="zh-if"),
        pytest.param("我朋友说深圳的工作机会更多。", id="zh-reported"),
        pytest.param("我想问你一个问题", id="zh-request"),
    ],
)
def test_hedges_questions_requests_and_reported_speech_give_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_fact_in_the_middle_of_a_longer_message_is_found() -> None:
    text = "Hey, quick question about decorators - btw I just moved to Denver. How do they work?"
    assert facts_of(text) == [("User lives in Denver", "lives_in", "Denver")]


def test_lower_case_unpunctuated_text_is_read_clause_by_clause() -> None:
    assert facts_of("i live in berlin and i work at siemens") == [
        ("User lives in Berlin", "lives_in", "Berlin"),
        ("User works at Siemens", "employer", "Siemens"),
    ]


def test_a_list_gives_one_fact_per_item_and_compounds_stay_whole() -> None:
    assert [v for _, _, v in facts_of("I like tea, coffee, and juice")] == [
        "tea",
        "coffee",
        "juice",
    ]
    assert [v for _, _, v in facts_of("I like rock and roll")] == ["rock and roll"]


# fmt: off
CHINESE: dict[str, tuple[str, list[Row]]] = {
    "likes": ("我喜欢喝绿茶。", [("用户喜欢喝绿茶", "likes", "喝绿茶")]),
    "implied-with-whom": ("周末一般跟同事去打羽毛球",
                          [("用户周末一般跟同事打羽毛球", "hobby", "羽毛球")]),
    "topic-allergy": ("另外花粉我也过敏", [("用户对花粉过敏", "allergic_to", "花粉")]),
    "bare-age": ("我今年28，目前单身", [("用户28岁", "age", "28"),
                                     ("用户单身", "relationship_status", "单身")]),
    "dating": ("我脱单啦", [("用户恋爱中", "relationship_status", "恋爱中")]),
    "student": ("我还是学生", [("用户是学生", "occupation", "学生")]),
    "major": ("学的是环境工程", [("用户学环境工程", "studies", "环境工程")]),
    "adopted-named": ("上周又捡了一只小狗，取名叫豆包",
                      [("用户上周捡了一只小狗，取名叫豆包", "has_pet", "一只小狗,取名叫豆包")]),
    "bare-where": ("我自己在重庆", [("用户住在重庆", "lives_in", "重庆")]),
    "from": ("我来自成都。", [("用户来自成都", "from", "成都")]),
    "hometown": ("我老家是四川的。", [("用户的家乡是四川", "from", "四川")]),
    "want-to-learn": ("我想学日语。", [("用户想学日语", "goal", "学日语")]),
    "goal-is": ("我的目标是跑完马拉松。", [("用户的目标是跑完马拉松", "goal", "跑完马拉松")]),
    "plan": ("我打算明年去日本。", [("用户打算明年去日本", "goal", "明年去日本")]),
    "afraid": ("我怕蛇。", [("用户怕蛇", "afraid_of", "蛇")]),
    "afraid-to": ("我害怕坐飞机。", [("用户害怕坐飞机", "afraid_of", "坐飞机")]),
    "health": ("我有高血压。", [("用户有高血压", "health", "高血压")]),
    "health-got": ("我得了糖尿病。", [("用户有糖尿病", "health", "糖尿病")]),
    "school": ("我在北京大学读书。", [("用户在北京大学读书", "school", "北京大学")]),
    "pet-named": ("我养了一只猫叫咪咪。", [("用户养了一只猫叫咪咪", "has_pet", "一只猫叫咪咪")]),
    "learning": ("我在学吉他。", [("用户在学吉他", "learning", "吉他")]),
    "learning-now": ("我正在学习法语。", [("用户在学法语", "learning", "法语")]),
    "employer-and-role": ("我现在在字节做产品经理。",
                          [("用户在字节工作", "employer", "字节"),
                           ("用户做产品经理", "occupation", "产品经理")]),
    "left-employer": ("我已经不在字节了。", [("用户不再在字节工作", "employer", "字节")]),
    "still-in-unit": ("我还在部队。", [("用户在部队", "employer", "部队")]),
    "where-now": ("我现在在深圳。", [("用户住在深圳", "lives_in", "深圳")]),
    "studied": ("我是学法律的。", [("用户学法律", "studies", "法律")]),
    "grad-student": ("我是研究生。", [("用户是研究生", "occupation", "研究生")]),
    "vegetarian": ("我吃素。", [("用户吃素", "diet", "素食")]),
    "drinks-daily": ("我每天喝咖啡。", [("用户每天喝咖啡", "drinks", "咖啡")]),
    "no-spicy": ("我不吃辣。", [("用户不吃辣", "eats", "辣")]),
    "has-partner": ("我有男朋友了。", [("用户有男朋友", "relationship_status", "恋爱中")]),
    "partner-named": ("我有一个女朋友，她叫小红。",
                      [("用户有一个女朋友", "relationship_status", "恋爱中"),
                       ("用户的女朋友叫小红", "name", "小红")]),
    "has-relatives": ("我有两个哥哥。", [("用户有两个哥哥", "family", "两个哥哥")]),
    "has-condition": ("我有哮喘。", [("用户有哮喘", "health", "哮喘")]),
    "owns": ("我有一辆车。", [("用户有一辆车", "owns", "一辆车")]),
    "keeps-pets": ("我养了两只猫。", [("用户养了两只猫", "has_pet", "两只猫")]),
    "relative-named": ("我男朋友叫小明，他是医生。",
                       [("用户的男朋友叫小明", "name", "小明"),
                        ("用户的男朋友小明是医生", "occupation", "医生")]),
    "renting": ("目前还是在西安租房住", [("用户还是住在西安", "lives_in", "西安")]),
    "implied-attribute": ("工作是做电商运营",
                          [("用户的工作是做电商运营", "occupation", "做电商运营")]),
    "time-first": ("周末我喜欢去爬山。", [("用户周末喜欢去爬山", "likes", "去爬山")]),
    "live": ("我住在上海。", [("用户住在上海", "lives_in", "上海")]),
    "moved": ("我上个月搬到北京了。", [("用户住在北京", "lives_in", "北京")]),
    "name-age": ("我叫小明，今年28岁。",
                 [("用户叫小明", "name", "小明"), ("用户28岁", "age", "28")]),
    "employer-role": ("我现在在阿里巴巴工作，做产品经理。",
                      [("用户在阿里巴巴工作", "employer", "阿里巴巴"),
                       ("用户是产品经理", "occupation", "产品经理")]),
    "allergy": ("我对花生和芒果过敏。", [("用户对花生过敏", "allergic_to", "花生"),
                                 ("用户对芒果过敏", "allergic_to", "芒果")]),
    "pet": ("我养了一只狗叫旺财。", [("用户养了一只狗叫旺财", "has_pet", "一只狗叫旺财")]),
    "languages": ("我会说英语、法语和德语。", [("用户会说英语", "speaks", "英语"),
                                     ("用户会说法语", "speaks", "法语"),
                                     ("用户会说德语", "speaks", "德语")]),
    "origin": ("我是上海人。", [("用户来自上海", "from", "上海")]),
    "role": ("我是一名程序员。", [("用户是一名程序员", "occupation", "程序员")]),
    "birthday": ("我的生日是五月三号。", [("用户的生日是五月三号", "birthday", "五月三号")]),
    "no-subject": ("最近又养了一只猫，叫咪咪。",
                   [("用户养了一只猫，叫咪咪", "has_pet", "一只猫,叫咪咪")]),
    "switch": ("我不再喝咖啡了，改喝茶。",
               [("用户不再喝咖啡", "drinks", "咖啡"), ("用户喝茶", "drinks", "茶")]),
    "lactose": ("我乳糖不耐受。", [("用户对乳糖过敏", "allergic_to", "乳糖")]),
    "no-partner": ("我没有男朋友。", [("用户没有男朋友", "relationship_status", "单身")]),
    "no-longer-partner": ("我已经没有女朋友了。",
                          [("用户不再有女朋友", "relationship_status", "单身")]),
    "graduated-from": ("我毕业于清华大学。", [("用户毕业于清华大学", "school", "毕业于清华大学")]),
    "graduated-from-at": ("我去年从浙江大学毕业的。",
                          [("用户毕业于浙江大学", "school", "毕业于浙江大学")]),
    "from-came": ("我是从成都来的。", [("用户来自成都", "from", "成都")]),
    "from-bare": ("我从北京来。", [("用户来自北京", "from", "北京")]),
    "moved-from-to": ("我从上海搬到了杭州。", [("用户住在杭州", "lives_in", "杭州")]),
    "since-childhood": ("我从小就喜欢猫。", [("用户从小喜欢猫", "likes", "猫")]),
    "since-last-year": ("我从去年开始学吉他。", [("用户从去年开始在学吉他", "learning", "吉他")]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), CHINESE.values(), ids=CHINESE.keys())
def test_chinese_statements_become_facts_with_their_structure(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


def test_a_switch_in_chinese_replaces_the_old_habit() -> None:
    stopped, switched = extract_facts("我不再喝咖啡了，改喝茶。")
    assert (stopped.negated, switched.negated, switched.updates_previous) == (True, False, True)


ODD_INPUTS = [
    "",
    "😀🎉🔥",
    "I like 😀",
    "I like",
    "I'm",
    "我喜欢",
    "我叫",
    "my name is",
    "I like " * 20_000,
    "我喜欢" * 20_000,
    "I live in " + "x" * 100_000,
    "\x00I like\x00tea\x00",
    "I like {value} and {0}",
    "\ud800 I like \ud800",
    "I'm 999 years old",
    "我今年一二三四五六七岁",
    "I prefer over",
    "I work at as",
    "我在工作",
    "my my my my",
    "I I I I am am am",
    "'''''' \"\"\"",
]


@pytest.mark.parametrize("text", ODD_INPUTS, ids=range(len(ODD_INPUTS)))
def test_odd_inputs_never_raise_and_give_valid_facts(text: str) -> None:
    for fact in extract_facts(text):
        # Round-trip through the model's schema: lengths and confidence constraints.
        msgspec.convert(msgspec.to_builtins(fact), ExtractedFact)
        assert 0 < len(fact.value) <= 80


def test_every_fact_carries_the_given_confidence_and_no_duplicates() -> None:
    found = extract_facts("I like tea. I like tea! I LIKE TEA", confidence=0.7)
    assert [(f.content, f.confidence) for f in found] == [("User likes tea", 0.7)]


@pytest.mark.parametrize("confidence", [-0.1, 1.5, float("nan")], ids=["negative", "over", "nan"])
def test_a_confidence_outside_zero_to_one_is_refused(confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        extract_facts("I like tea", confidence=confidence)


def test_a_value_longer_than_a_fact_holds_is_a_misreading_and_the_rest_is_still_read() -> None:
    def values(text: str) -> list[tuple[str, int]]:
        return [(f.predicate, len(f.value)) for f in extract_facts(text)]

    assert values(f"I live in {'X' * 80}. I like tea.") == [("lives_in", 80), ("likes", 3)]
    assert values(f"I live in {'X' * 81}. I like tea.") == [("likes", 3)]
    assert values(f"我住在{'北' * 30}。我喜欢茶。") == [("lives_in", 30), ("likes", 1)]
    assert values(f"我住在{'北' * 31}。我喜欢茶。") == [("likes", 1)]  # Chinese: 30 at most


def test_a_fact_carries_its_readings_category_key_and_cardinality() -> None:
    [eats] = extract_facts("I eat a lot of rice")
    [band] = extract_facts("My favourite band is Blur")
    [grade] = extract_facts("My grade is 7a")
    assert (eats.predicate, eats.category) == ("eats", "behavior")  # not the predicate's own
    assert (band.category, band.key) == ("preference", "band")
    assert (grade.category, grade.cardinality) == ("knowledge", "one")


@pytest.mark.parametrize("confidence", [0.0, 1.0])
def test_confidences_zero_and_one_are_accepted(confidence: float) -> None:
    assert [f.confidence for f in extract_facts("I like tea.", confidence=confidence)] == [
        confidence
    ]


def test_a_fact_written_by_hand_without_its_subject_is_read_as_the_users() -> None:
    texts = ("Lives in Porto", "住在北京", "vegetarian", "是素食者")
    found = [structure_of(text) for text in texts]
    assert [(f.content, f.predicate, f.value) for f in found if f is not None] == [
        ("User lives in Porto", "lives_in", "Porto"),
        ("用户住在北京", "lives_in", "北京"),
        ("User is vegetarian", "diet", "vegetarian"),
        ("用户是素食者", "diet", "素食"),
    ]
    assert structure_of("Works at Acme as an engineer") is None  # two facts: no one structure
    assert structure_of("") is None


Flagged = tuple[str, str, str, bool, bool]  # content, predicate, value, negated, updates


def flagged_facts_of(text: str) -> list[Flagged]:
    return [
        (f.content, f.predicate, f.value, f.negated, f.updates_previous)
        for f in extract_facts(text)
    ]


# What follows am / is / was: one sentence per cue word and per branch of the copula.
# fmt: off
COPULA: dict[str, tuple[str, list[Flagged]]] = {
    "based-in": ("I'm based in Lisbon.",
        [('User lives in Lisbon', 'lives_in', 'Lisbon', False, False)]),
    "living-in": ("I'm living in Berlin.",
        [('User is living in Berlin', 'lives_in', 'Berlin', False, False)]),
    "located-in": ("I'm located in Austin.",
        [('User lives in Austin', 'lives_in', 'Austin', False, False)]),
    "settled-in": ("I'm settled in Dublin.",
        [('User lives in Dublin', 'lives_in', 'Dublin', False, False)]),
    "now-based-in": ("I'm now based in Lisbon.",
        [('User lives in Lisbon', 'lives_in', 'Lisbon', False, True)]),
    "in-a-capital": ("I'm in Berlin now.",
        [('User lives in Berlin', 'lives_in', 'Berlin', False, False)]),
    "no-longer-in": ("I'm no longer in Berlin.",
        [('User no longer lives in Berlin', 'lives_in', 'Berlin', True, True)]),
    "originally-from": ("I'm originally from Porto.",
        [('User is from Porto', 'from', 'Porto', False, False)]),
    "relative-in": ('My daughter is in Paris.',
        [("User's daughter lives in Paris", 'lives_in', 'Paris', False, False)]),
    "lactose-intolerant": ("I'm lactose intolerant.",
        [('User is lactose intolerant', 'allergic_to', 'lactose', False, False)]),
    "not-intolerant": ("I'm not lactose intolerant.",
        [('User is not lactose intolerant', 'allergic_to', 'lactose', True, False)]),
    "intolerant-to": ("I'm intolerant to gluten.",
        [('User is intolerant to gluten', 'allergic_to', 'gluten', False, False)]),
    "relative-allergic": ('My son is allergic to eggs.',
        [("User's son is allergic to eggs", 'allergic_to', 'eggs', False, False)]),
    "in-a-relationship": ("I'm in a relationship.",
        [('User is in a relationship', 'relationship_status', 'in a relationship', False, False)]),
    "not-in-a-relationship": ("I'm not in a relationship.",
        [('User is not in a relationship', 'relationship_status', 'in a relationship', True,
          False)]),
    "newly-single": ("I'm newly single.",
        [('User is single', 'relationship_status', 'single', False, True)]),
    "into": ("I'm really into jazz.",
        [('User likes jazz', 'likes', 'jazz', False, False)]),
    "not-into": ("I'm not into jazz.",
        [("User doesn't like jazz", 'likes', 'jazz', True, False)]),
    "no-longer-into": ("I'm no longer into jazz.",
        [('User no longer likes jazz', 'likes', 'jazz', True, False)]),
    "obsessed-with": ("I'm obsessed with knitting.",
        [('User likes knitting', 'likes', 'knitting', False, False)]),
    "crazy-about": ("I'm crazy about football.",
        [('User likes football', 'likes', 'football', False, False)]),
    "passionate-about": ("I'm passionate about photography.",
        [('User likes photography', 'likes', 'photography', False, False)]),
    "fond-of": ("I'm fond of cheese.",
        [('User likes cheese', 'likes', 'cheese', False, False)]),
    "keen-on": ("I'm keen on cycling.",
        [('User likes cycling', 'likes', 'cycling', False, False)]),
    "mad-about": ("I'm mad about horses.",
        [('User likes horses', 'likes', 'horses', False, False)]),
    "nuts-about": ("I'm nuts about chess.",
        [('User likes chess', 'likes', 'chess', False, False)]),
    "relative-into": ('My brother is into rugby.',
        [("User's brother likes rugby", 'likes', 'rugby', False, False)]),
    "all-about": ("I'm all about spicy food.",
        [('User is all about spicy food', 'likes', 'spicy food', False, False)]),
    "afraid-of": ("I'm afraid of spiders.",
        [('User is afraid of spiders', 'afraid_of', 'spiders', False, False)]),
    "scared-of": ("I'm scared of heights.",
        [('User is scared of heights', 'afraid_of', 'heights', False, False)]),
    "terrified-of": ("I'm terrified of clowns.",
        [('User is terrified of clowns', 'afraid_of', 'clowns', False, False)]),
    "frightened-of": ("I'm frightened of the dark.",
        [('User is frightened of the dark', 'afraid_of', 'the dark', False, False)]),
    "not-afraid": ("I'm not afraid of spiders.",
        [('User is not afraid of spiders', 'afraid_of', 'spiders', True, False)]),
    "no-longer-afraid": ("I'm no longer afraid of spiders.",
        [('User is no longer afraid of spiders', 'afraid_of', 'spiders', True, False)]),
    "good-at": ("I'm good at chess.",
        [('User is good at chess', 'skill', 'chess', False, False)]),
    "great-at": ("I'm great at cooking.",
        [('User is great at cooking', 'skill', 'cooking', False, False)]),
    "skilled-at": ("I'm skilled at woodworking.",
        [('User is skilled at woodworking', 'skill', 'woodworking', False, False)]),
    "decent-at": ("I'm decent at tennis.",
        [('User is decent at tennis', 'skill', 'tennis', False, False)]),
    "not-good-at": ("I'm not good at chess.",
        [('User is not good at chess', 'skill', 'chess', True, False)]),
    "fluent-in": ("I'm fluent in German.",
        [('User speaks German', 'speaks', 'German', False, False)]),
    "diabetic": ("I'm diabetic.",
        [('User is diabetic', 'health', 'diabetic', False, False)]),
    "asthmatic": ("I'm asthmatic.",
        [('User is asthmatic', 'health', 'asthmatic', False, False)]),
    "not-diabetic": ("I'm not diabetic.",
        [('User is not diabetic', 'health', 'diabetic', True, False)]),
    "diagnosed-with": ('I was diagnosed with ADHD.',
        [('User has ADHD', 'health', 'ADHD', False, False)]),
    "retired": ("I'm retired.",
        [('User is retired', 'occupation', 'retired', False, True)]),
    "officially-retired": ("I'm officially retired.",
        [('User is retired', 'occupation', 'retired', False, True)]),
    "unemployed": ("I'm unemployed.",
        [('User is unemployed', 'occupation', 'unemployed', False, True)]),
    "self-employed": ("I'm self-employed.",
        [('User is self-employed', 'occupation', 'self-employed', False, True)]),
    "freelance": ("I'm freelance.",
        [('User is freelance', 'occupation', 'freelance', False, True)]),
    "jobless": ("I'm jobless.",
        [('User is jobless', 'occupation', 'jobless', False, True)]),
    "been-to": ("I've been to Japan.",
        [('User has been to Japan', 'visited', 'Japan', False, False)]),
    "catholic": ("I'm Catholic.",
        [('User is Catholic', 'religion', 'Catholic', False, False)]),
    "buddhist": ("I'm Buddhist.",
        [('User is Buddhist', 'religion', 'Buddhist', False, False)]),
    "not-catholic": ("I'm not Catholic.",
        [('User is not Catholic', 'religion', 'Catholic', True, False)]),
    "brazilian": ("I'm Brazilian.",
        [('User is Brazilian', 'nationality', 'Brazilian', False, False)]),
    "a-nurse": ("I'm a nurse.",
        [('User is a nurse', 'occupation', 'nurse', False, False)]),
    "not-a-nurse": ("I'm not a nurse.",
        [('User is not a nurse', 'occupation', 'nurse', True, False)]),
    "bare-job": ("I'm nurse",
        [('User is a nurse', 'occupation', 'nurse', False, False)]),
    "bare-job-at": ("I'm nurse at the hospital",
        [('User is a nurse at the hospital', 'occupation', 'nurse', False, False)]),
    "job-at": ("I'm a nurse at Google.",
        [('User is a nurse', 'occupation', 'nurse', False, False),
         ('User works at Google', 'employer', 'Google', False, False)]),
    "morning-person": ("I'm a morning person.",
        [('User is a morning person', 'habit', 'morning person', False, False)]),
    "not-morning-person": ("I'm not a morning person.",
        [('User is not a morning person', 'habit', 'morning person', True, False)]),
    "more-of-a-person": ("I'm more of a cat person.",
        [('User is a cat person', 'likes', 'cat', False, False)]),
    "a-fan": ("I'm a jazz fan.",
        [('User is a jazz fan', 'likes', 'jazz', False, False)]),
    "a-lover": ("I'm a coffee lover.",
        [('User is a coffee lover', 'likes', 'coffee', False, False)]),
    "a-huge-nerd": ("I'm a huge Star Wars nerd.",
        [('User is a Star Wars nerd', 'likes', 'Star Wars', False, False)]),
    "native-speaker": ("I'm a native Spanish speaker.",
        [('User is a native Spanish speaker', 'speaks', 'Spanish', False, False)]),
    "total-vegan": ("I'm a total vegan.",
        [('User is vegan', 'diet', 'vegan', False, False)]),
    "relative-name": ('My sister is Jess.',
        [("User's sister is Jess", 'name', 'Jess', False, False)]),
    "relative-name-son": ('My son is Leo.',
        [("User's son is Leo", 'name', 'Leo', False, False)]),
    "stay-at-home": ("I'm a stay-at-home mom.",
        [('User is a stay-at-home mom', 'occupation', 'stay-at-home mom', False, False)]),
    "now-a-job": ("I'm now a nurse.",
        [('User is a nurse', 'occupation', 'nurse', False, True)]),
    "now-a-diet": ("I'm now a vegan.",
        [('User is vegan', 'diet', 'vegan', False, True)]),
    "massive-nerd": ("I'm a massive coffee nerd.",
        [('User is a coffee nerd', 'likes', 'coffee', False, False)]),
    "real-buff": ("I'm a real film buff.",
        [('User is a film buff', 'likes', 'film', False, False)]),
    "big-fan": ("I'm a big Marvel fan.",
        [('User is a Marvel fan', 'likes', 'Marvel', False, False)]),
    "total-nerd": ("I'm a total book nerd.",
        [('User is a book nerd', 'likes', 'book', False, False)]),
    "night-person": ("I'm a night person.",
        [('User is a night person', 'habit', 'night person', False, False)]),
    "people-person": ("I'm a people person.",
        [('User is a people person', 'habit', 'people person', False, False)]),
    "dog-person": ("I'm a dog person.",
        [('User is a dog person', 'likes', 'dog', False, False)]),
    "addict": ("I'm a coffee addict.",
        [('User is a coffee addict', 'likes', 'coffee', False, False)]),
    "buff": ("I'm a film buff.",
        [('User is a film buff', 'likes', 'film', False, False)]),
    "lover": ("I'm a book lover.",
        [('User is a book lover', 'likes', 'book', False, False)]),
    "fan-of-negated": ("I'm not a fan of jazz.",
        [('User is not a fan of jazz', 'likes', 'jazz', True, False)]),
    "never-been-to": ("I've never been to Japan.",
        [('User has not been to Japan', 'visited', 'Japan', True, False)]),
    "never-afraid": ("I'm never afraid of the dark.",
        [('User is not afraid of the dark', 'afraid_of', 'the dark', True, False)]),
    "officially-a-job": ("I'm officially a nurse.",
        [('User is a nurse', 'occupation', 'nurse', False, True)]),
    "now-also-a-job": ("I'm now also a nurse.",
        [('User is a nurse', 'occupation', 'nurse', False, True)]),
    "officially-in": ("I'm officially in Berlin.",
        [('User lives in Berlin', 'lives_in', 'Berlin', False, True)]),
    "now-in": ("I'm now in Berlin.",
        [('User lives in Berlin', 'lives_in', 'Berlin', False, True)]),
    "currently-in": ("I'm currently in Berlin.",
        [('User lives in Berlin', 'lives_in', 'Berlin', False, False)]),
    "not-brazilian": ("I'm not Brazilian.",
        [('User is not Brazilian', 'nationality', 'Brazilian', True, False)]),
    "relative-not-allergic": ('My sister is not allergic to eggs.',
        [("User's sister is not allergic to eggs", 'allergic_to', 'eggs', True, False)]),
    "apprentice": ("I'm an apprentice electrician 2nd year.",
        [('User is an apprentice electrician 2nd year', 'occupation', 'apprentice electrician',
          False, False)]),
    "job-after-a-word": ("I'm head nurse.",
        [('User is a head nurse', 'occupation', 'head nurse', False, False)]),
    "job-after-a-word-at": ("I'm head nurse at St Mary's.",
        [('User is a head nurse', 'occupation', 'head nurse', False, False),
         ("User works at St Mary's", 'employer', "St Mary's", False, False)]),
    "full-name": ("I'm Ada Lovelace.",
        [("User's name is Ada Lovelace", 'name', 'Ada Lovelace', False, False)]),
    "name-and-more": ("I'm Jess and I live in Leeds.",
        [("User's name is Jess", 'name', 'Jess', False, False),
         ('User lives in Leeds', 'lives_in', 'Leeds', False, False)]),
    "not-from": ("I'm not from Porto.",
        [('User is not from Porto', 'from', 'Porto', True, False)]),
    "relative-named-then-she": ('My sister is Jess. She is a nurse.',
        [("User's sister is Jess", 'name', 'Jess', False, False),
         ("User's sister Jess is a nurse", 'occupation', 'nurse', False, False)]),
    "perfect-a-job": ("I've been a nurse for ten years.",
        [('User is a nurse', 'occupation', 'nurse', False, False)]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), COPULA.values(), ids=COPULA.keys())
def test_every_word_after_am_or_is_reads_as_its_own_fact_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


# What someone has, and where and when someone was born.
# fmt: off
HAVE: dict[str, tuple[str, list[Flagged]]] = {
    "peanut-allergy": ('I have a peanut allergy.',
        [('User is allergic to peanut', 'allergic_to', 'peanut', False, False)]),
    "allergy-to": ('I have an allergy to penicillin.',
        [('User is allergic to penicillin', 'allergic_to', 'penicillin', False, False)]),
    "allergies-to": ('I have allergies to dust and pollen.',
        [('User is allergic to dust', 'allergic_to', 'dust', False, False),
         ('User is allergic to pollen', 'allergic_to', 'pollen', False, False)]),
    "celiac-disease": ('I have celiac disease.',
        [('User has celiac disease', 'health', 'celiac disease', False, False)]),
    "syndrome": ('I have Tourette syndrome.',
        [('User has Tourette syndrome', 'health', 'Tourette syndrome', False, False)]),
    "disorder": ('I have a sleep disorder.',
        [('User has a sleep disorder', 'health', 'a sleep disorder', False, False)]),
    "asthma": ('I have asthma.',
        [('User has asthma', 'health', 'asthma', False, False)]),
    "had-asthma": ('I had asthma.',
        [('User previously had asthma', 'health', 'asthma', False, False)]),
    "a-car": ('I have a car.',
        [('User has a car', 'owns', 'a car', False, False)]),
    "a-motorcycle": ('I have a motorcycle.',
        [('User has a motorcycle', 'owns', 'a motorcycle', False, False)]),
    "a-brand": ('I have a Tesla.',
        [('User has a Tesla', 'owns', 'a Tesla', False, False)]),
    "had-a-car": ('I had a car.',
        [('User previously had a car', 'owns', 'a car', False, False)]),
    "masters-degree": ("I have a master's degree in physics.",
        [("User has a master's degree in physics", 'degree', "a master's degree", False, False)]),
    "bachelors": ("I have a bachelor's.",
        [("User has a bachelor's", 'degree', "a bachelor's", False, False)]),
    "diploma": ('I have a diploma.',
        [('User has a diploma', 'degree', 'a diploma', False, False)]),
    "masters": ('I have a masters',
        [('User has a masters', 'degree', 'a masters', False, False)]),
    "breakfast": ('I usually have toast for breakfast.',
        [('User usually has toast for breakfast', 'eats', 'toast', False, False)]),
    "had-pets": ('I had two dogs.',
        [('User previously had two dogs', 'has_pet', 'two dogs', False, False)]),
    "had-a-brother": ('I had a brother.',
        [('User previously had a brother', 'family', 'a brother', False, False)]),
    "had-kids-and-a-dog": ('I had two kids and a dog.',
        [('User previously had two kids', 'family', 'two kids', False, False),
         ('User previously had a dog', 'has_pet', 'a dog', False, False)]),
    "got-a-dog": ("I've got a dog.",
        [('User has a dog', 'has_pet', 'a dog', False, False)]),
    "pet-a-breed": ('I have a dog, a husky called Luna.',
        [('User has a dog, a husky called Luna', 'has_pet', 'a dog', False, False)]),
    "pet-an-adjective": ('I have a cat, an old tabby.',
        [('User has a cat, an old tabby', 'has_pet', 'a cat', False, False)]),
    "pets-both": ('I have two dogs, both rescues.',
        [('User has two dogs, both rescues', 'has_pet', 'two dogs', False, False)]),
    "pet-named": ('I have a dog, named Rex.',
        [('User has a dog, named Rex', 'has_pet', 'a dog', False, False)]),
    "pet-called": ('I have a dog, called Rex.',
        [('User has a dog, called Rex', 'has_pet', 'a dog', False, False)]),
    "born-in-month": ('I was born in May.',
        [("User's birthday is May", 'birthday', 'May', False, False)]),
    "born-on-the": ('I was born on the 4th of July.',
        [("User's birthday is the 4th of July", 'birthday', 'the 4th of July', False, False)]),
    "relative-born-in": ('My sister was born in Madrid.',
        [("User's sister was born in Madrid", 'from', 'Madrid', False, False)]),
    "relative-born-on": ('My sister was born on May 5th.',
        [("User's sister's birthday is May 5th", 'birthday', 'May 5th', False, False)]),
    "pets-and-a-relative": ('I have a dog, two cats and a sister.',
        [('User has a dog', 'has_pet', 'a dog', False, False),
         ('User has two cats', 'has_pet', 'two cats', False, False),
         ('User has a sister', 'family', 'a sister', False, False)]),
    "kids-named-and-a-pet": ('I have two kids, Maya and Leo, and a beagle.',
        [('User has two kids, Maya, Leo', 'family', 'two kids, Maya, Leo', False, False),
         ('User has a beagle', 'has_pet', 'a beagle', False, False)]),
    "a-wife-and-cats": ('I have a wife and two cats.',
        [('User has a wife', 'family', 'a wife', False, False),
         ('User has two cats', 'has_pet', 'two cats', False, False)]),
    "two-word-allergen": ('I have a tree nut allergy.',
        [('User is allergic to tree nut', 'allergic_to', 'tree nut', False, False)]),
    "a-disease": ('I have Lyme disease.',
        [('User has Lyme disease', 'health', 'Lyme disease', False, False)]),
    "a-camel-case-brand": ('I have a MacBook.',
        [('User has a MacBook', 'owns', 'a MacBook', False, False)]),
    "owned-with-detail": ('I have a bike for commuting.',
        [('User has a bike for commuting', 'owns', 'a bike', False, False)]),
    "degree-in": ('I have a degree in chemistry.',
        [('User has a degree in chemistry', 'degree', 'a degree', False, False)]),
    "had-with-detail": ('I had a car with a sunroof.',
        [('User previously had a car with a sunroof', 'owns', 'a car', False, False)]),
    "pet-apposition-adjectives": ('I have a dog, a big fluffy husky.',
        [('User has a dog, a big fluffy husky', 'has_pet', 'a dog', False, False)]),
    "born-on-a-holiday": ('I was born on Christmas Day.',
        [("User's birthday is Christmas Day", 'birthday', 'Christmas Day', False, False)]),
    "phd": ('I have a phd.',
        [('User has a phd', 'degree', 'a phd', False, False)]),
    "masters-in": ("I have a master's in economics.",
        [("User has a master's in economics", 'degree', "a master's", False, False)]),
    "a-meal-without-frequency": ('I have toast for breakfast.',
        [('User has toast for breakfast', 'eats', 'toast', False, False)]),
    "a-frequency-without-meal": ('I usually have oatmeal.',
        [('User usually has oatmeal', 'eats', 'oatmeal', False, False)]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), HAVE.values(), ids=HAVE.keys())
def test_every_kind_of_thing_had_reads_as_what_it_is(text: str, expected: list[Flagged]) -> None:
    assert flagged_facts_of(text) == expected


# "my <noun> is <value>": one sentence per attribute noun.
# fmt: off
ATTRIBUTES: dict[str, tuple[str, list[Flagged]]] = {
    "phone-number": ('My phone number is 555-0134.',
        [("User's phone number is 555-0134", 'phone', '555-0134', False, False)]),
    "number": ('My number is 555-0134.',
        [("User's number is 555-0134", 'phone', '555-0134', False, False)]),
    "mobile": ('My mobile is 07700 900123.',
        [("User's mobile is 07700 900123", 'phone', '07700 900123', False, False)]),
    "cell": ('My cell is 555-0199.',
        [("User's cell is 555-0199", 'phone', '555-0199', False, False)]),
    "e-mail": ('My e-mail is bo@example.org',
        [("User's e-mail is bo@example.org", 'email', 'bo@example.org', False, False)]),
    "email-address": ('My email address is bo@example.org',
        [("User's email address is bo@example.org", 'email', 'bo@example.org', False, False)]),
    "email-for": ('My email for receipts is bo@example.org',
        [("User's email is bo@example.org", 'email', 'bo@example.org', False, False)]),
    "job-a": ('My job is a nurse.',
        [("User's job is a nurse", 'occupation', 'a nurse', False, False)]),
    "occupation": ('My occupation is accountant.',
        [("User's occupation is accountant", 'occupation', 'accountant', False, False)]),
    "profession": ('My profession is architect.',
        [("User's profession is architect", 'occupation', 'architect', False, False)]),
    "title": ('My title is senior engineer.',
        [("User's title is senior engineer", 'occupation', 'senior engineer', False, False)]),
    "employer": ('My employer is acme corp.',
        [("User's employer is Acme Corp", 'employer', 'Acme Corp', False, False)]),
    "company": ('My company is globex.',
        [("User's company is Globex", 'employer', 'Globex', False, False)]),
    "hometown": ('My hometown is porto.',
        [("User's hometown is Porto", 'from', 'Porto', False, False)]),
    "address": ('My address is 12 high street.',
        [("User's address is 12 High Street", 'lives_in', '12 High Street', False, False)]),
    "age": ('My age is 34.',
        [("User's age is 34", 'age', '34', False, False)]),
    "major": ('My major is biology.',
        [("User's major is biology", 'studies', 'biology', False, False)]),
    "diet": ('My diet is keto.',
        [("User's diet is keto", 'diet', 'keto', False, False)]),
    "native-language": ('My native language is Spanish.',
        [("User's native language is Spanish", 'speaks', 'Spanish', False, False)]),
    "first-language": ('My first language is Tagalog.',
        [("User's first language is Tagalog", 'speaks', 'Tagalog', False, False)]),
    "native-tongue": ('My native tongue is Polish.',
        [("User's native language is Polish", 'speaks', 'Polish', False, False)]),
    "favorite-color": ('My favorite color is blue.',
        [("User's favorite color is blue", 'favorite', 'blue', False, False)]),
    "birthday-in": ('My birthday is in March.',
        [("User's birthday is March", 'birthday', 'March', False, False)]),
    "name-adverb": ('My name is really Bob.',
        [("User's name is Bob", 'name', 'Bob', False, False)]),
    "relative-name": ("My sister's name is Ana.",
        [("User's sister's name is Ana", 'name', 'Ana', False, False)]),
    "relative-birthday": ("My sister's birthday is June 2nd.",
        [("User's sister's birthday is June 2nd", 'birthday', 'June 2nd', False, False)]),
    "role-er": ('My job is dog walker.',
        [("User's job is dog walker", 'occupation', 'dog walker', False, False)]),
    "role-ian": ('My role is data custodian.',
        [("User's role is data custodian", 'occupation', 'data custodian', False, False)]),
    "role-ist": ('My job is violinist.',
        [("User's job is violinist", 'occupation', 'violinist', False, False)]),
    "role-or": ('My job is supervisor.',
        [("User's job is supervisor", 'occupation', 'supervisor', False, False)]),
    "role-archivist": ('My title is archivist.',
        [("User's title is archivist", 'occupation', 'archivist', False, False)]),
    "role-ing": ('My title is head of engineering.',
        [("User's title is head of engineering", 'occupation', 'head of engineering',
          False, False)]),
    "relative-job": ("My dad's job is a plumber.",
        [("User's dad's job is a plumber", 'occupation', 'a plumber', False, False)]),
    "relative-hometown": ("My mom's hometown is lyon.",
        [("User's mom's hometown is Lyon", 'from', 'Lyon', False, False)]),
    "phone": ('My phone is 555-0101.',
        [("User's phone is 555-0101", 'phone', '555-0101', False, False)]),
    "email-at": ('My email at work is bo@acme.com',
        [("User's email is bo@acme.com", 'email', 'bo@acme.com', False, False)]),
    "birthday-date": ('My birthday is May 3rd.',
        [("User's birthday is May 3rd", 'birthday', 'May 3rd', False, False)]),
    "birthday-on-the": ('My birthday is on the 5th.',
        [("User's birthday is the 5th", 'birthday', 'the 5th', False, False)]),
    "birthday-s-in": ("My birthday's in May.",
        [("User's birthday is May", 'birthday', 'May', False, False)]),
    "favorite-food": ('My favorite food is sushi.',
        [("User's favorite food is sushi", 'favorite', 'sushi', False, False)]),
    "favorite-kind-of": ('My favorite kind of music is jazz.',
        [("User's favorite kind of music is jazz", 'favorite', 'jazz', False, False)]),
    "hobby": ('My hobby is chess.',
        [("User's hobby is chess", 'hobby', 'chess', False, False)]),
    "surname": ('My name is Bond.',
        [("User's name is Bond", 'name', 'Bond', False, False)]),
    "birthday-digits": ('My birthday is 05/03.',
        [("User's birthday is 05/03", 'birthday', '05/03', False, False)]),
    "lower-case-name": ('My name is ada.',
        [("User's name is Ada", 'name', 'Ada', False, False)]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), ATTRIBUTES.values(), ids=ATTRIBUTES.keys())
def test_every_attribute_noun_reads_as_its_predicate(text: str, expected: list[Flagged]) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("My daughter is 1.", ("age", "1"), id="one"),
        pytest.param("I was raised in Ohio.", ("from", "Ohio"), id="raised-in"),
        pytest.param("I was brought up in Glasgow.", ("from", "Glasgow"), id="brought-up-in"),
    ],
)
def test_a_first_year_and_an_upbringing_are_read(text: str, expected: tuple[str, str]) -> None:
    assert [(f.predicate, f.value, f.negated, f.updates_previous) for f in extract_facts(text)] == [
        (*expected, False, False)
    ]


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        pytest.param("I'm 130 years old", "age", id="age-past-129"),
        pytest.param("I'm 0 years old.", "age", id="age-zero"),
        pytest.param("I'm 3 kids in", "age", id="a-counted-number"),
        pytest.param("I'm in London this week for a conference.", "lives_in", id="a-trip"),
        pytest.param("I'm Brazilian and proud", "nationality", id="nationality-and-more"),
        pytest.param("I'm at Google.", "employer", id="at-without-work-cue"),
        pytest.param("I have a question.", "owns", id="a-question"),
        pytest.param("I have a headache.", "health", id="a-headache"),
        pytest.param("My job is stressful.", "occupation", id="how-the-job-is"),
        pytest.param("My birthday is coming up.", "birthday", id="coming-up"),
        pytest.param("My birthday is soon.", "birthday", id="soon"),
        pytest.param("My birthday is tomorrow.", "birthday", id="tomorrow"),
        pytest.param("My birthday is next week.", "birthday", id="next-week"),
        pytest.param("My birthday is today.", "birthday", id="today"),
        pytest.param("I'm an early riser.", "likes", id="early-riser"),
        pytest.param("I'm a night owl.", "likes", id="night-owl"),
        pytest.param("I'm in a band.", "relationship_status", id="in-a-band"),
        pytest.param("I'm proud of my kids.", "afraid_of", id="proud-of"),
        pytest.param("I'm happy with my job.", "health", id="happy-with"),
        pytest.param("I'm happy in Leeds.", "from", id="happy-in"),
        pytest.param("My address is changing soon.", "lives_in", id="address-changing"),
        pytest.param("My hometown is next to Leeds.", "from", id="next-to"),
        pytest.param("My phone is dying.", "phone", id="phone-dying"),
        pytest.param("My birthday is in the summer.", "birthday", id="no-day-or-month"),
        pytest.param("My job is remote.", "occupation", id="where-the-job-is"),
        pytest.param("I'm a native Klingon speaker.", "speaks", id="no-language"),
        pytest.param("I'm a fan.", "likes", id="a-fan-of-nothing"),
    ],
)
def test_a_passing_state_or_a_when_is_not_the_fact_it_looks_like(text: str, predicate: str) -> None:
    assert [f for f in extract_facts(text) if f.predicate == predicate] == []


def test_a_favorite_keeps_its_kind_and_hobbies_are_one_fact_each() -> None:
    [food] = extract_facts("My favorite food is sushi.")
    [music] = extract_facts("My favorite kind of music is jazz.")
    assert (food.key, food.value) == ("food", "sushi")
    assert (music.key, music.value) == ("kind of music", "jazz")
    found = extract_facts("My hobbies are chess and sailing.")
    assert [(f.predicate, f.value) for f in found] == [("hobby", "chess"), ("hobby", "sailing")]


@pytest.mark.parametrize("text", ["I'm not Ada.", "My son is not Leo."])
def test_a_name_said_with_not_is_no_name(text: str) -> None:
    assert [f for f in extract_facts(text) if f.predicate == "name"] == []


def test_a_goal_drops_its_to_and_a_favorite_said_with_are_keeps_its_kind() -> None:
    [goal] = extract_facts("My goal is to run a marathon.")
    [dream] = extract_facts("My dream is to open a bakery.")
    [colors] = extract_facts("My favorite colors are blue and green.")
    assert [(f.predicate, f.value, f.key) for f in (goal, dream, colors)] == [
        ("goal", "run a marathon", None),
        ("goal", "open a bakery", None),
        ("favorite", "blue and green", "colors"),
    ]


def test_at_a_company_after_a_job_change_is_where_the_user_works_now() -> None:
    found = extract_facts("I switched jobs, I'm at Spotify.")
    assert [
        (f.content, f.predicate, f.value, f.negated, f.updates_previous)
        for f in found
        if f.predicate == "employer"
    ] == [("User works at Spotify", "employer", "Spotify", False, True)]
