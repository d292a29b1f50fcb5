"""The rule-based fallback extractor: what ordinary statements give, and what gives nothing."""

# Chinese test sentences use full-width punctuation on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import msgspec
import pytest

from memory import english_phrase as phrase_reader
from memory.clauses import clauses
from memory.english_implied import implied_i
from memory.lexicon import gerund, lemma, past, third_person
from memory.rules_extractor import extract_facts, structure_of
from memory.statements import USER
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
        pytest.param(
            "I haven't got a car", "User doesn't have a car", "owns", "a car", id="not-got"
        ),
        pytest.param(
            "My sister doesn't have a car",
            "User's sister doesn't have a car",
            "owns",
            "a car",
            id="other-not-have",
        ),
        pytest.param("I have no car", "User has no car", "owns", "car", id="have-no"),
        pytest.param(
            "I have no siblings", "User has no siblings", "family", "siblings", id="no-kin"
        ),
        pytest.param(
            "I have never had a dog", "User has not had a dog", "has_pet", "a dog", id="never-had"
        ),
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


@pytest.mark.parametrize(
    ("text", "status", "content"),
    [
        ("I have a girlfriend", "in a relationship", "User has a girlfriend"),
        ("I have a partner", "in a relationship", "User has a partner"),
        ("I have a husband", "married", "User has a husband"),
        ("I have a fiancee", "engaged", "User has a fiancee"),
        ("I don't have a girlfriend", "single", "User doesn't have a girlfriend"),
        ("I have no boyfriend", "single", "User has no boyfriend"),
        ("I don't have a boyfriend anymore", "single", "User no longer has a boyfriend"),
        ("我没有男朋友", "单身", "用户没有男朋友"),
    ],
)
def test_a_partner_had_or_not_is_the_current_relationship_status(
    text: str, status: str, content: str
) -> None:
    [fact] = extract_facts(text)
    assert (fact.predicate, fact.value, fact.content) == ("relationship_status", status, content)
    assert (fact.negated, fact.updates_previous) == (False, True)


@pytest.mark.parametrize(
    ("text", "predicate", "value", "content"),
    [
        ("My sister is called Ana.", "family", "sister Ana", "User's sister is Ana"),
        (
            "My girlfriend is called Anna.",
            "partner",
            "girlfriend Anna",
            "User's girlfriend is Anna",
        ),
        ("My boss is named Tom.", "knows", "boss Tom", "User's boss is Tom"),
        ("Our neighbour Bob is loud.", "knows", "neighbour Bob", "User's neighbour is Bob"),
    ],
)
def test_a_person_named_with_their_relation_is_remembered_by_name(
    text: str, predicate: str, value: str, content: str
) -> None:
    assert facts_of(text)[0] == (content, predicate, value)


@pytest.mark.parametrize(
    ("text", "predicate", "value", "content"),
    [
        ("I'm saving up for a house.", "goal", "a house", "User is saving for a house"),
        ("I'm creating a podcast.", "works_on", "a podcast", "User is creating a podcast"),
        (
            "I'm preparing for the marathon.",
            "goal",
            "the marathon",
            "User is preparing for the marathon",
        ),
        ("I gamble a lot.", "habit", "gambling", "User gambles a lot"),
        ("I'm practising yoga.", "hobby", "yoga", "User is practising yoga"),
    ],
)
def test_verbs_that_drop_their_e_before_ing_are_read_as_themselves(
    text: str, predicate: str, value: str, content: str
) -> None:
    assert facts_of(text) == [(content, predicate, value)]


def test_a_partner_had_before_is_a_person_of_the_past_not_a_status() -> None:
    [fact] = extract_facts("I used to have a boyfriend")
    assert (fact.predicate, fact.content, fact.negated) == (
        "family",
        "User previously had a boyfriend",
        True,
    )


@pytest.mark.parametrize("text", ["I have no allergies", "I have no allergy to nuts"])
def test_having_no_allergy_names_no_allergen(text: str) -> None:
    assert extract_facts(text) == []


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


# english_verbs: a sentence per cue word and branch

Flagged = tuple[str, str, str, bool, bool]  # content, predicate, value, negated, updates_previous


def flagged_facts_of(text: str) -> list[Flagged]:
    return [
        (f.content, f.predicate, f.value, f.negated, f.updates_previous)
        for f in extract_facts(text)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I hate cilantro.",
            [("User hates cilantro", "dislikes", "cilantro", False, False)],
            id="hate",
        ),
        pytest.param(
            "I dislike crowds.",
            [("User dislikes crowds", "dislikes", "crowds", False, False)],
            id="dislike",
        ),
        pytest.param(
            "I avoid sugar.", [("User avoids sugar", "dislikes", "sugar", False, False)], id="avoid"
        ),
        pytest.param(
            "I detest mornings.",
            [("User detests mornings", "dislikes", "mornings", False, False)],
            id="detest",
        ),
        pytest.param(
            "I loathe spiders.",
            [("User loathes spiders", "dislikes", "spiders", False, False)],
            id="loathe",
        ),
        pytest.param(
            "I despise reality TV.",
            [("User despises reality TV", "dislikes", "reality TV", False, False)],
            id="despise",
        ),
        pytest.param(
            "I used to love jazz.",
            [("User previously loved jazz", "likes", "jazz", True, False)],
            id="used-to",
        ),
        pytest.param(
            "I can't stand cats and dogs.",
            [
                ("User can't stand cats", "dislikes", "cats", False, False),
                ("User can't stand dogs", "dislikes", "dogs", False, False),
            ],
            id="cant-stand-two",
        ),
        pytest.param(
            "I can't stand loud music at night.",
            [("User can't stand loud music at night", "dislikes", "loud music", False, False)],
            id="cant-stand-detail",
        ),
        pytest.param(
            "I don't like cilantro.",
            [("User doesn't like cilantro", "dislikes", "cilantro", False, False)],
            id="dont-like",
        ),
        pytest.param(
            "I don't enjoy crowds.",
            [("User doesn't enjoy crowds", "dislikes", "crowds", False, False)],
            id="dont-enjoy",
        ),
        pytest.param(
            "I don't hate jazz.",
            [("User doesn't hate jazz", "dislikes", "jazz", True, False)],
            id="dont-hate",
        ),
        pytest.param(
            "I don't prefer tea.",
            [("User doesn't prefer tea", "prefers", "tea", True, False)],
            id="dont-prefer",
        ),
        pytest.param(
            "I prefer tea to coffee.",
            [("User prefers tea to coffee", "prefers", "tea", False, False)],
            id="prefer",
        ),
    ],
)
def test_every_way_of_saying_i_like_or_hate_something_reads_as_a_taste(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("I loved the concert last night", id="past-reaction"),
        pytest.param("I liked the film", id="past-liked"),
        pytest.param("I don't stand a chance", id="stand-without-cant"),
        pytest.param("I can't stand it", id="stand-pointer"),
    ],
)
def test_a_past_reaction_or_standing_a_chance_is_no_lasting_taste(text: str) -> None:
    found = extract_facts(text)
    assert [f for f in found if f.predicate in ("likes", "dislikes", "prefers")] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I speak fluent Spanish.",
            [("User speaks fluent Spanish", "speaks", "fluent Spanish", False, False)],
            id="speak-fluent",
        ),
        pytest.param(
            "I know German.",
            [("User knows German", "speaks", "German", False, False)],
            id="know-language",
        ),
        pytest.param(
            "I know some Spanish.",
            [("User knows some Spanish", "speaks", "some Spanish", False, False)],
            id="know-some",
        ),
        pytest.param(
            "I know a little Japanese.",
            [("User knows a little Japanese", "speaks", "a little Japanese", False, False)],
            id="know-a-little",
        ),
        pytest.param(
            "I know basic Korean.",
            [("User knows basic Korean", "speaks", "basic Korean", False, False)],
            id="know-basic",
        ),
    ],
)
def test_every_way_of_saying_i_speak_a_language_reads_as_a_language(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("I speak to my mum every day.", id="to"),
        pytest.param("I speak with a lisp.", id="with"),
        pytest.param("I speak about climate policy at conferences.", id="about"),
        pytest.param("I speak up in meetings.", id="up"),
        pytest.param("I speak out against bullying.", id="out"),
        pytest.param("I speak of my father often.", id="of"),
        pytest.param("I know how to cook.", id="know-how"),
        pytest.param("I know the owner.", id="know-someone"),
    ],
)
def test_speaking_to_someone_or_knowing_a_thing_is_no_language(text: str) -> None:
    assert [f for f in extract_facts(text) if f.predicate == "speaks"] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I basically live on instant noodles.",
            [("User lives on instant noodles", "habit", "instant noodles", False, False)],
            id="live-on-food",
        ),
        pytest.param(
            "I live on Baker Street.",
            [("User lives on Baker Street", "lives_in", "Baker Street", False, False)],
            id="live-on-street",
        ),
        pytest.param(
            "I live at 12 Baker Street.",
            [("User lives at 12 Baker Street", "lives_in", "12 Baker Street", False, False)],
            id="live-at",
        ),
        pytest.param(
            "I live near Leeds.",
            [("User lives near Leeds", "lives_in", "Leeds", False, False)],
            id="live-near",
        ),
        pytest.param(
            "I live outside Boston.",
            [("User lives outside Boston", "lives_in", "Boston", False, False)],
            id="live-outside",
        ),
        pytest.param(
            "I live by Lake Geneva.",
            [("User lives by Lake Geneva", "lives_in", "Lake Geneva", False, False)],
            id="live-by",
        ),
        pytest.param(
            "I moved back to Leeds.",
            [("User lives in Leeds", "lives_in", "Leeds", False, True)],
            id="moved-back",
        ),
        pytest.param(
            "I moved from Leeds to York.",
            [("User lives in York", "lives_in", "York", False, True)],
            id="moved-from-to",
        ),
        pytest.param(
            "We moved into a house in Bath.",
            [("User lives in Bath", "lives_in", "Bath", False, True)],
            id="moved-into",
        ),
        pytest.param(
            "We settled in Bath.",
            [("User lives in Bath", "lives_in", "Bath", False, True)],
            id="settled",
        ),
        pytest.param(
            "We've relocated to Bath.",
            [("User lives in Bath", "lives_in", "Bath", False, True)],
            id="relocated-perfect",
        ),
        pytest.param(
            "I grew up on Skye.",
            [("User grew up in Skye", "from", "Skye", False, False)],
            id="grew-up-on",
        ),
    ],
)
def test_every_way_of_saying_where_i_live_or_moved_reads_as_a_home(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I work full time at a bank.",
            [("User works at a bank", "employer", "a bank", False, False)],
            id="work-full-time",
        ),
        pytest.param(
            "I work part time at a bakery.",
            [("User works at a bakery", "employer", "a bakery", False, False)],
            id="work-part-time",
        ),
        pytest.param(
            "I work nights at a hospital.",
            [("User works at a hospital", "employer", "a hospital", False, False)],
            id="work-nights",
        ),
        pytest.param(
            "I work weekends at a garden centre.",
            [("User works at a garden centre", "employer", "a garden centre", False, False)],
            id="work-weekends",
        ),
        pytest.param(
            "I work evenings at a bar.",
            [("User works at a bar", "employer", "a bar", False, False)],
            id="work-evenings",
        ),
        pytest.param(
            "I work mornings at a cafe.",
            [("User works at a cafe", "employer", "a cafe", False, False)],
            id="work-mornings",
        ),
        pytest.param(
            "I work days at a clinic.",
            [("User works at a clinic", "employer", "a clinic", False, False)],
            id="work-days",
        ),
        pytest.param(
            "I work shifts at a care home.",
            [("User works at a care home", "employer", "a care home", False, False)],
            id="work-shifts",
        ),
        pytest.param(
            "I work freelance as a designer.",
            [("User works as a designer", "occupation", "designer", False, False)],
            id="work-freelance",
        ),
        pytest.param(
            "I work mainly as a translator.",
            [("User works as a translator", "occupation", "translator", False, False)],
            id="work-mainly",
        ),
        pytest.param(
            "I work mostly as a tutor.",
            [("User works as a tutor", "occupation", "tutor", False, False)],
            id="work-mostly",
        ),
        pytest.param(
            "I work now as a nurse.",
            [("User works as a nurse", "occupation", "nurse", False, False)],
            id="work-now",
        ),
        pytest.param(
            "I work remotely for a startup in Berlin.",
            [("User works for a startup in Berlin", "employer", "a startup", False, False)],
            id="work-remotely-for",
        ),
        pytest.param(
            "I work remote for a startup.",
            [("User works for a startup", "employer", "a startup", False, False)],
            id="work-remote-for",
        ),
        pytest.param(
            "I work for the NHS.",
            [("User works for the NHS", "employer", "the NHS", False, False)],
            id="work-for",
        ),
        pytest.param(
            "I work on a compiler.",
            [("User works on a compiler", "works_on", "a compiler", False, False)],
            id="work-on",
        ),
        pytest.param(
            "I work in finance.",
            [("User works in finance", "works_in", "finance", False, False)],
            id="work-in",
        ),
        pytest.param(
            "I work in finance at a bank.",
            [("User works in finance at a bank", "works_in", "finance", False, False)],
            id="work-in-detail",
        ),
        pytest.param(
            "I work from home.",
            [("User works from home", "habit", "working from home", False, False)],
            id="work-from-home",
        ),
        pytest.param(
            "I work mostly from home.",
            [("User works from home", "habit", "working from home", False, False)],
            id="work-mostly-from-home",
        ),
    ],
)
def test_every_way_of_saying_where_or_as_what_i_work_reads_as_a_job(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I started with Deloitte last month.",
            [("User works at Deloitte", "employer", "Deloitte", False, True)],
            id="started-with",
        ),
        pytest.param(
            "I started at Google.",
            [("User works at Google", "employer", "Google", False, True)],
            id="started-at",
        ),
        pytest.param(
            "I began as a junior developer.",
            [("User works as a junior developer", "occupation", "junior developer", False, True)],
            id="began-as",
        ),
        pytest.param(
            "I joined Google last year.",
            [("User works at Google", "employer", "Google", False, True)],
            id="joined-employer",
        ),
        pytest.param(
            "I started a new job at the BBC.",
            [("User works at the BBC", "employer", "the BBC", False, True)],
            id="started-new-job-at",
        ),
        pytest.param(
            "I started my dream job at NASA.",
            [("User works at NASA", "employer", "NASA", False, True)],
            id="started-dream-job",
        ),
        pytest.param(
            "I started a new position as a nurse.",
            [("User works as a nurse", "occupation", "nurse", False, True)],
            id="started-new-position-as",
        ),
        pytest.param(
            "I started a new role at Monzo.",
            [("User works at Monzo", "employer", "Monzo", False, True)],
            id="started-new-role",
        ),
        pytest.param(
            "I started working at a bakery.",
            [("User works at a bakery", "employer", "a bakery", False, True)],
            id="started-working-at",
        ),
        pytest.param(
            "I started yoga.",
            [("User started yoga", "hobby", "yoga", False, False)],
            id="started-a-pastime",
        ),
        pytest.param(
            "I began pottery classes.",
            [("User started pottery classes", "hobby", "pottery classes", False, False)],
            id="began-a-pastime",
        ),
        pytest.param(
            "I started knitting last year.",
            [("User knits", "habit", "knitting", False, False)],
            id="started-a-verb",
        ),
        pytest.param(
            "I got a full-time job at Tesco.",
            [("User works at Tesco", "employer", "Tesco", False, True)],
            id="got-full-time-job",
        ),
        pytest.param(
            "I got a part-time job at Tesco.",
            [("User works at Tesco", "employer", "Tesco", False, True)],
            id="got-part-time-job",
        ),
        pytest.param(
            "I got hired as a nurse.",
            [("User works as a nurse", "occupation", "nurse", False, True)],
            id="got-hired-as",
        ),
        pytest.param(
            "I got a new job as a teacher.",
            [("User works as a teacher", "occupation", "teacher", False, True)],
            id="got-new-job-as",
        ),
        pytest.param(
            "I got engaged last month.",
            [("User got engaged", "relationship_status", "engaged", False, True)],
            id="got-engaged",
        ),
        pytest.param(
            "I got divorced last year.",
            [("User got divorced", "relationship_status", "divorced", False, True)],
            id="got-divorced",
        ),
        pytest.param(
            "I got into med school.",
            [("User studies at med school", "school", "med school", False, True)],
            id="got-into-med-school",
        ),
        pytest.param(
            "I got into the University of Leeds.",
            [
                (
                    "User studies at the University of Leeds",
                    "school",
                    "the University of Leeds",
                    False,
                    True,
                )
            ],
            id="got-into-university",
        ),
        pytest.param(
            "I got into college.",
            [("User studies at college", "school", "college", False, True)],
            id="got-into-college",
        ),
        pytest.param(
            "I got into pottery.",
            [("User is into pottery", "likes", "pottery", False, False)],
            id="got-into-taste",
        ),
        pytest.param(
            "My dad got me into fishing.",
            [("User is into fishing", "likes", "fishing", False, False)],
            id="dad-got-me-into",
        ),
        pytest.param(
            "We got two cats last year.",
            [("User has two cats", "has_pet", "two cats", False, False)],
            id="got-two-cats",
        ),
        pytest.param(
            "I get the 6:40 train from Reading.",
            [("User gets the 6:40 train from Reading", "habit", "commute", False, False)],
            id="get-the-train",
        ),
        pytest.param(
            "I get the bus to work.",
            [("User gets the bus to work", "habit", "commute", False, False)],
            id="get-the-bus",
        ),
        pytest.param(
            "I became a nurse.",
            [("User is a nurse", "occupation", "nurse", False, True)],
            id="became-nurse",
        ),
        pytest.param(
            "I've become a teacher.",
            [("User is a teacher", "occupation", "teacher", False, True)],
            id="become-perfect",
        ),
        pytest.param(
            "I became pescatarian.",
            [("User is pescatarian", "diet", "pescatarian", False, True)],
            id="became-pescatarian",
        ),
        pytest.param(
            "I go vegan on weekdays.",
            [("User is vegan on weekdays", "diet", "vegan", False, True)],
            id="go-vegan",
        ),
        pytest.param(
            "I went vegetarian last year.",
            [("User is vegetarian", "diet", "vegetarian", False, True)],
            id="went-vegetarian",
        ),
        pytest.param(
            "I go swimming on Sundays.",
            [("User goes swimming on Sundays", "hobby", "swimming", False, False)],
            id="go-swimming",
        ),
        pytest.param(
            "I go to church every Sunday.",
            [("User goes to church every Sunday", "habit", "church", False, False)],
            id="go-to-church",
        ),
    ],
)
def test_every_way_of_saying_i_started_got_or_became_something_reads_as_news(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I quit Facebook last year.",
            [("User no longer works at Facebook", "employer", "Facebook", True, True)],
            id="quit-facebook",
        ),
        pytest.param(
            "I left Google.",
            [("User no longer works at Google", "employer", "Google", True, True)],
            id="left-employer",
        ),
        pytest.param(
            "I left my job at the council.",
            [("User no longer works at the Council", "employer", "the Council", True, True)],
            id="left-my-job-at",
        ),
        pytest.param(
            "I quit caffeine.",
            [("User quit caffeine", "habit", "caffeine", True, False)],
            id="quit-caffeine",
        ),
        pytest.param(
            "I gave up meat.", [("User quit meat", "habit", "meat", True, False)], id="gave-up-meat"
        ),
        pytest.param(
            "I stopped eating meat.",
            [("User no longer eats meat", "eats", "meat", True, False)],
            id="stopped-eating",
        ),
        pytest.param(
            "I stopped going to church.",
            [("User no longer goes to church", "habit", "church", True, False)],
            id="stopped-going",
        ),
        pytest.param(
            "A cigarette a day was too many, so I quit.",
            [("User no longer smokes", "habit", "smoking", True, False)],
            id="quit-smoking-cue",
        ),
        pytest.param(
            "My vape broke so I quit.",
            [("User no longer smokes", "habit", "smoking", True, False)],
            id="vape-cue",
        ),
        pytest.param(
            "Alcohol was ruining my life so I quit.",
            [("User no longer drinks", "habit", "drinking", True, False)],
            id="alcohol-cue",
        ),
        pytest.param(
            "Too much booze! I quit.",
            [("User no longer drinks", "habit", "drinking", True, False)],
            id="booze-cue",
        ),
        pytest.param(
            "The drinking got bad so I gave up.",
            [("User no longer drinks", "habit", "drinking", True, False)],
            id="drinking-cue",
        ),
        pytest.param(
            "Smoke breaks were my life but I quit.",
            [("User no longer smokes", "habit", "smoking", True, False)],
            id="smoke-cue",
        ),
        pytest.param(
            "I used to smoke, but I quit.",
            [("User previously smoked", "habit", "smoking", True, False)],
            id="used-to-smoke",
        ),
        pytest.param(
            "I've retired.",
            [("User is retired", "occupation", "retired", False, True)],
            id="retired-perfect",
        ),
    ],
)
def test_every_way_of_saying_i_quit_reads_as_what_i_no_longer_do(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I've taken up golf.",
            [("User takes up golf", "hobby", "golf", False, False)],
            id="taken-up",
        ),
        pytest.param(
            "I take vitamin D every day.",
            [("User takes vitamin D every day", "takes", "vitamin D", False, False)],
            id="take-vitamin",
        ),
        pytest.param(
            "I switched from Android to iPhone.",
            [
                ("User no longer uses Android", "habit", "Android", True, False),
                ("User switched from Android to iPhone", "uses", "iPhone", False, True),
            ],
            id="switched",
        ),
        pytest.param(
            "My doctor switched me from sertraline to citalopram.",
            [
                ("User no longer uses sertraline", "habit", "sertraline", True, False),
                ("User switched from sertraline to citalopram", "uses", "citalopram", False, True),
            ],
            id="doctor-switched-me",
        ),
        pytest.param(
            "I swapped from coffee to tea.",
            [
                ("User no longer uses coffee", "habit", "coffee", True, False),
                ("User switched from coffee to tea", "uses", "tea", False, True),
            ],
            id="swapped",
        ),
        pytest.param(
            "I changed from Spotify to Apple Music.",
            [
                ("User no longer uses Spotify", "habit", "Spotify", True, False),
                ("User switched from Spotify to Apple Music", "uses", "Apple Music", False, True),
            ],
            id="changed",
        ),
        pytest.param(
            "I want to run a marathon.",
            [("User wants to run a marathon", "goal", "run a marathon", False, False)],
            id="want-to",
        ),
        pytest.param(
            "I plan to run a marathon.",
            [("User plans to run a marathon", "goal", "run a marathon", False, False)],
            id="plan-to",
        ),
        pytest.param(
            "I hope to retire early.",
            [("User hopes to retire early", "goal", "retire early", False, False)],
            id="hope-to",
        ),
        pytest.param(
            "I intend to learn Italian.",
            [("User intends to learn Italian", "goal", "learn Italian", False, False)],
            id="intend-to",
        ),
        pytest.param(
            "I aim to read fifty books this year.",
            [
                (
                    "User aims to read fifty books this year",
                    "goal",
                    "read fifty books this year",
                    False,
                    False,
                )
            ],
            id="aim-to",
        ),
        pytest.param(
            "Everyone calls me Bea.",
            [("User's name is Bea", "name", "Bea", False, False)],
            id="they-call-me",
        ),
        pytest.param(
            "I just turned 30.",
            [("User is 30 years old", "age", "30", False, True)],
            id="turned-30",
        ),
    ],
)
def test_every_way_of_saying_what_i_take_switch_want_or_am_called_reads_as_a_fact(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        pytest.param("I take the bus to work.", "takes", id="take-the"),
        pytest.param("I take a nap every afternoon.", "takes", id="take-a"),
        pytest.param("I take my dog to the park.", "takes", id="take-my"),
        pytest.param("I take care of my mum.", "takes", id="take-care"),
        pytest.param("I take part in a choir.", "takes", id="take-part"),
        pytest.param("I took ibuprofen yesterday.", "takes", id="took"),
        pytest.param("I switched to tea.", "uses", id="switch-without-from"),
        pytest.param("I switched from it to tea.", "uses", id="switch-from-pointer"),
        pytest.param("I switched from coffee to it.", "uses", id="switch-to-pointer"),
        pytest.param("I wanted to be a doctor.", "goal", id="wanted"),
        pytest.param("I want to visit Japan one day.", "goal", id="one-day"),
        pytest.param("I want to write a book at some point.", "goal", id="some-point"),
        pytest.param("I want to move to Spain someday.", "goal", id="someday"),
        pytest.param("I got the bus to work.", "habit", id="got-the-bus-once"),
        pytest.param("I went to the gym.", "habit", id="went-to"),
        pytest.param("I went swimming.", "hobby", id="went-ing"),
        pytest.param("I gave up.", "habit", id="gave-up-nothing-named"),
    ],
)
def test_a_thing_taken_once_a_wish_for_some_day_or_a_past_outing_is_no_lasting_fact(
    text: str, predicate: str
) -> None:
    assert [f for f in extract_facts(text) if f.predicate == predicate] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I'm going by Rebecca now.",
            [("User's name is Rebecca", "name", "Rebecca", False, True)],
            id="going-by",
        ),
        pytest.param(
            "We're getting married in June.",
            [("User is engaged", "relationship_status", "engaged", False, False)],
            id="getting-married",
        ),
        pytest.param(
            "I'm doing bookkeeping for a builders' merchant.",
            [
                (
                    "User is doing bookkeeping for a builders merchant",
                    "occupation",
                    "bookkeeping",
                    False,
                    True,
                )
            ],
            id="doing-for",
        ),
        pytest.param(
            "I'm building a treehouse for my kids.",
            [
                (
                    "User is building a treehouse for their kids",
                    "works_on",
                    "a treehouse",
                    False,
                    False,
                )
            ],
            id="building",
        ),
        pytest.param(
            "I'm writing a novel.",
            [("User is writing a novel", "works_on", "a novel", False, False)],
            id="writing",
        ),
        pytest.param(
            "I'm developing a mobile game.",
            [("User is developing a mobile game", "works_on", "a mobile game", False, False)],
            id="developing",
        ),
        pytest.param(
            "I'm making a quilt.",
            [("User is making a quilt", "works_on", "a quilt", False, False)],
            id="making",
        ),
        pytest.param(
            "I'm designing a board game.",
            [("User is designing a board game", "works_on", "a board game", False, False)],
            id="designing",
        ),
        pytest.param(
            "I'm training for a marathon.",
            [("User is training for a marathon", "goal", "a marathon", False, False)],
            id="training-for",
        ),
        pytest.param(
            "I'm taking a pottery class.",
            [("User is taking a pottery class", "learning", "a pottery class", False, False)],
            id="taking",
        ),
        pytest.param(
            "I'm trying to lose weight.",
            [("User is trying to lose weight", "goal", "lose weight", False, False)],
            id="trying-to",
        ),
        pytest.param(
            "I'm planning to run a marathon.",
            [("User is planning to run a marathon", "goal", "run a marathon", False, False)],
            id="planning-to",
        ),
        pytest.param(
            "I'm hoping to visit Japan.",
            [("User is hoping to visit Japan", "goal", "visit Japan", False, False)],
            id="hoping-to",
        ),
        pytest.param(
            "I'm aiming to read fifty books this year.",
            [
                (
                    "User is aiming to read fifty books this year",
                    "goal",
                    "read fifty books this year",
                    False,
                    False,
                )
            ],
            id="aiming-to",
        ),
        pytest.param(
            "I'm studying law.",
            [("User is studying law", "studies", "law", False, False)],
            id="studying",
        ),
        pytest.param(
            "I'm working at a bakery.",
            [("User is working at a bakery", "employer", "a bakery", False, False)],
            id="working-at",
        ),
        pytest.param(
            "I'm living in Madrid.",
            [("User is living in Madrid", "lives_in", "Madrid", False, False)],
            id="living-in",
        ),
        pytest.param(
            "I'm dating Sam.",
            [("User is dating Sam", "relationship_status", "dating Sam", False, False)],
            id="dating",
        ),
        pytest.param(
            "I'm playing the cello.",
            [("User is playing the cello", "hobby", "the cello", False, False)],
            id="playing",
        ),
        pytest.param(
            "I'm practicing the piano.",
            [("User is practicing the piano", "hobby", "the piano", False, False)],
            id="practicing",
        ),
        pytest.param(
            "I'm playing football again.",
            [("User is playing football", "hobby", "football", False, False)],
            id="playing-again",
        ),
        pytest.param(
            "I'm training up for a triathlon.",
            [("User is training for a triathlon", "goal", "a triathlon", False, False)],
            id="training-up-for",
        ),
        pytest.param(
            "I'm seeing someone new.",
            [("User is seeing someone", "relationship_status", "dating", False, False)],
            id="seeing-someone-new",
        ),
        pytest.param(
            "I was living in Rome.",
            [("User previously lived in Rome", "lives_in", "Rome", False, False)],
            id="was-living",
        ),
        pytest.param(
            "We were living in Rome.",
            [("User previously lived in Rome", "lives_in", "Rome", False, False)],
            id="were-living",
        ),
        pytest.param(
            "I don't play golf anymore.",
            [("User no longer plays golf", "hobby", "golf", True, False)],
            id="anymore",
        ),
    ],
)
def test_every_verb_read_in_the_progressive_reads_as_what_is_going_on_now(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        pytest.param("I'm moving to Spain.", "lives_in", id="moving"),
        pytest.param("I'm leaving Google.", "employer", id="leaving"),
        pytest.param("I'm starting a new job at Google.", "employer", id="starting"),
        pytest.param("I'm going to the gym.", "habit", id="going"),
        pytest.param("I'm getting a dog.", "has_pet", id="getting"),
        pytest.param("I'm visiting Rome.", "visited", id="visiting"),
        pytest.param("I'm training hard.", "goal", id="training-for-nothing"),
        pytest.param("I was doing data science.", "occupation", id="was-doing"),
        pytest.param(
            "I'm doing a lot of baking for the fair.", "occupation", id="doing-for-far-off"
        ),
    ],
)
def test_a_plan_in_the_progressive_is_no_fact_yet(text: str, predicate: str) -> None:
    assert [f for f in extract_facts(text) if f.predicate == predicate] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I volunteer at a food bank.",
            [("User volunteers at a food bank", "volunteer", "a food bank", False, False)],
            id="at",
        ),
        pytest.param(
            "I volunteer for the Red Cross.",
            [("User volunteers for the Red Cross", "volunteer", "the Red Cross", False, False)],
            id="for",
        ),
        pytest.param(
            "I volunteer with refugees.",
            [("User volunteers with refugees", "volunteer", "refugees", False, False)],
            id="with",
        ),
        pytest.param(
            "I commute to London.",
            [("User commutes to London", "commute", "London", False, False)],
            id="to",
        ),
        pytest.param(
            "I blog on Medium.", [("User blogs on Medium", "blog", "Medium", False, False)], id="on"
        ),
        pytest.param(
            "I paint in oils.", [("User paints in oils", "paint", "oils", False, False)], id="in"
        ),
        pytest.param(
            "I collect stamps and coins.",
            [
                ("User collects stamps", "collect", "stamps", False, False),
                ("User collects coins", "collect", "coins", False, False),
            ],
            id="two-things",
        ),
        pytest.param(
            "I used to collect stamps.",
            [("User previously collected stamps", "collect", "stamps", True, False)],
            id="used-to",
        ),
        pytest.param(
            "I smoke about ten a day.",
            [("User smokes about ten a day", "habit", "smoking", False, False)],
            id="smoke-a-measure",
        ),
        pytest.param(
            "I vape about twice an hour.",
            [("User vapes about twice an hour", "habit", "vaping", False, False)],
            id="vape-a-measure",
        ),
        pytest.param(
            "I run every morning.",
            [("User runs every morning", "habit", "running", False, False)],
            id="hobby-alone",
        ),
        pytest.param(
            "I meditate.",
            [("User meditates", "habit", "meditating", False, False)],
            id="hobby-verb-alone",
        ),
        pytest.param(
            "I don't smoke.",
            [("User doesn't smoke", "habit", "smoking", True, False)],
            id="not-smoke",
        ),
        pytest.param(
            "I don't commute.",
            [("User doesn't commute", "habit", "commuting", True, False)],
            id="not-commute",
        ),
    ],
)
def test_every_verb_without_a_reading_of_its_own_reads_as_what_the_user_does(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I live on Skye.",
            [("User lives on Skye", "lives_in", "Skye", False, False)],
            id="live-on-an-island",
        ),
        pytest.param(
            "I left the Apple Store.",
            [("User no longer works at Apple Store", "employer", "Apple Store", True, True)],
            id="left-the-workplace",
        ),
        pytest.param(
            "I left the Acme Agency last year.",
            [("User no longer works at Acme Agency", "employer", "Acme Agency", True, True)],
            id="quit-the-agency",
        ),
        pytest.param(
            "I retired from teaching.",
            [("User is retired", "occupation", "retired", False, True)],
            id="retired-from",
        ),
        pytest.param(
            "I started Spanish lessons.",
            [("User started Spanish lessons", "hobby", "Spanish lessons", False, False)],
            id="started-a-capitalised-pastime",
        ),
        pytest.param(
            "I began Pilates last month.",
            [("User started Pilates", "hobby", "Pilates", False, False)],
            id="began-a-capitalised-pastime",
        ),
        pytest.param(
            "I began swimming again.",
            [("User swims", "habit", "swimming", False, False)],
            id="began-a-verb-again",
        ),
    ],
)
def test_a_capital_after_the_verb_decides_between_a_place_an_employer_and_a_pastime(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        pytest.param("I quit the choir.", "habit", id="quit-the-choir"),
        pytest.param("I left the band.", "habit", id="left-the-band"),
        pytest.param("I joined a choir.", "hobby", id="joined-no-pastime"),
        pytest.param("I joined a startup.", "employer", id="joined-lower-case"),
        pytest.param("I get migraines.", "habit", id="get-no-commute"),
    ],
)
def test_leaving_a_group_joining_one_or_getting_an_ailment_is_no_habit_or_job(
    text: str, predicate: str
) -> None:
    assert [f for f in extract_facts(text) if f.predicate == predicate] == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "I live in Leeds again.",
            [("User lives in Leeds", "lives_in", "Leeds", False, True)],
            id="live-again",
        ),
        pytest.param(
            "I'm living by Lake Geneva.",
            [("User is living by Lake Geneva", "lives_in", "Lake Geneva", False, False)],
            id="living-by",
        ),
        pytest.param(
            "I got promoted to senior engineer.",
            [("User is a senior engineer", "occupation", "senior engineer", False, True)],
            id="got-promoted-to",
        ),
        pytest.param(
            "I got a new job for a charity.",
            [("User works at a charity", "employer", "a charity", False, True)],
            id="got-a-job-for",
        ),
        pytest.param(
            "I started dance classes.",
            [("User started dance classes", "hobby", "dance classes", False, False)],
            id="started-a-verb-noun",
        ),
        pytest.param(
            "I gave up drink.",
            [("User quit drink", "habit", "drink", True, False)],
            id="gave-up-drink",
        ),
        pytest.param(
            "It was the booze. So I quit.",
            [("User no longer drinks", "habit", "drinking", True, False)],
            id="booze-before-a-full-stop",
        ),
        pytest.param(
            "I'm doing deliveries for Amazon.",
            [
                ("User is doing deliveries", "occupation", "deliveries", False, True),
                ("User is working for Amazon", "employer", "Amazon", False, True),
            ],
            id="doing-for-without-work-words",
        ),
    ],
)
def test_again_promoted_for_a_verb_as_a_noun_and_a_cue_before_a_full_stop_read_right(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        pytest.param("I started it last year.", "hobby", id="started-it"),
        pytest.param("My dad got me into it.", "likes", id="got-me-into-it"),
        pytest.param("I got into it.", "likes", id="got-into-it"),
        pytest.param("I work from Lisbon these days.", "habit", id="work-from-a-city"),
        pytest.param("I'm getting a dog.", "relationship_status", id="getting-no-wedding"),
        pytest.param("Coffee? I live on it.", "habit", id="live-on-a-pointer"),
        pytest.param("I started by learning Python.", "employer", id="started-by"),
    ],
)
def test_a_pointer_a_city_worked_from_or_a_dog_being_got_is_no_taste_habit_or_wedding(
    text: str, predicate: str
) -> None:
    assert [f for f in extract_facts(text) if f.predicate == predicate] == []


def test_calling_someone_who_is_not_me_is_what_the_user_does_and_no_name() -> None:
    found = extract_facts("I call my mum every Sunday.")
    assert [(f.content, f.predicate) for f in found] == [
        ("User calls their mum every Sunday", "call")
    ]


def test_an_age_said_in_words_after_turned_is_never_a_broken_age() -> None:
    found = extract_facts("I turned forty last week.")
    assert all(f.value.isdigit() for f in found if f.predicate == "age")


# english_copula: a sentence per cue word and branch
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


# english_capture, english_life and english_facts: a sentence per cue word and branch


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I did a PhD in chemistry at Oxford.",
            [("User did a PhD in chemistry at Oxford", "degree", "a PhD", False, False)],
        ),
        (
            "I did my masters in physics.",
            [("User did their masters in physics", "degree", "my masters", False, False)],
        ),
        ("I graduated.", [("User graduated", "school", "graduated", False, True)]),
        (
            "I graduated from Leeds.",
            [("User graduated from Leeds", "school", "graduated from Leeds", False, True)],
        ),
        (
            "I used to teach math.",
            [("User previously taught math", "occupation", "math teacher", True, True)],
        ),
        ("I teach.", [("User teaches", "occupation", "teacher", False, False)]),
        (
            "I now teach yoga.",
            [("User teaches yoga", "occupation", "yoga teacher", False, True)],
        ),
        ("I keep halal.", [("User is halal", "diet", "halal", False, True)]),
        (
            "I've been seeing somebody.",
            [("User is seeing someone", "relationship_status", "dating", False, False)],
        ),
        (
            "I broke up with Mia.",
            [
                (
                    "User is single (broke up with Mia)",
                    "relationship_status",
                    "single",
                    False,
                    True,
                )
            ],
        ),
        (
            "I broke up with him last week.",
            [("User is single", "relationship_status", "single", False, True)],
        ),
        ("My band broke up.", []),
        ("I fostered a puppy.", [("User has a puppy", "has_pet", "a puppy", False, False)]),
        ("We adopted a baby.", [("User adopted a baby", "adopt", "a baby", False, False)]),
    ],
)
def test_a_life_event_is_read_as_what_it_leaves_the_user_with(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I got promoted to head chef.",
            [("User is a head chef", "occupation", "head chef", False, True)],
        ),
        (
            "I got promoted to assistant manager.",
            [("User is an assistant manager", "occupation", "assistant manager", False, True)],
        ),
        ("I became a nurse.", [("User is a nurse", "occupation", "nurse", False, True)]),
        (
            "I work as head chef.",
            [("User works as head chef", "occupation", "head chef", False, False)],
        ),
        ("I'm a nurse.", [("User is a nurse", "occupation", "nurse", False, False)]),
        ("I was a nurse.", [("User was previously a nurse", "occupation", "nurse", False, False)]),
        (
            "I'm a nurse for Oxfam.",
            [
                ("User is a nurse", "occupation", "nurse", False, False),
                ("User works for Oxfam", "employer", "Oxfam", False, False),
            ],
        ),
        (
            "I was a nurse at Guy's Hospital.",
            [
                ("User was previously a nurse", "occupation", "nurse", False, False),
                (
                    "User previously worked at Guy's Hospital",
                    "employer",
                    "Guy's Hospital",
                    False,
                    False,
                ),
            ],
        ),
        (
            "I'm now a nurse at Guy's Hospital.",
            [
                ("User is a nurse", "occupation", "nurse", False, True),
                ("User works at Guy's Hospital", "employer", "Guy's Hospital", False, True),
            ],
        ),
        (
            "I'm an apprentice electrician 2nd year.",
            [
                (
                    "User is an apprentice electrician 2nd year",
                    "occupation",
                    "apprentice electrician",
                    False,
                    False,
                )
            ],
        ),
        (
            "I work for a small design agency in Cork.",
            [
                (
                    "User works for a small design agency in Cork",
                    "employer",
                    "a small design agency",
                    False,
                    False,
                )
            ],
        ),
        (
            "I work at a small design agency as a designer.",
            [
                (
                    "User works at a small design agency",
                    "employer",
                    "a small design agency",
                    False,
                    False,
                ),
                ("User works as a designer", "occupation", "designer", False, False),
            ],
        ),
        (
            "I worked at Google.",
            [("User previously worked at Google", "employer", "Google", False, False)],
        ),
        (
            "I started at Google as an engineer.",
            [
                ("User works at Google", "employer", "Google", False, True),
                ("User works as an engineer", "occupation", "engineer", False, True),
            ],
        ),
        ("I work at home.", [("User works at home", "work", "at home", False, False)]),
    ],
)
def test_a_job_is_a_role_with_its_article_and_an_employer_named_after_at_or_for(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I moved into a house in Bristol.",
            [("User lives in Bristol", "lives_in", "Bristol", False, True)],
        ),
        (
            "I moved to an apartment at Canary Wharf.",
            [("User lives in Canary Wharf", "lives_in", "Canary Wharf", False, True)],
        ),
        (
            "I live in a flat in Leeds.",
            [("User lives in Leeds", "lives_in", "Leeds", False, False)],
        ),
        ("I moved here.", []),
        ("I moved there last year.", []),
        ("I moved home.", [("User moved home", "move", "home", False, False)]),
        ("I live in Leeds, England.", [("User lives in Leeds", "lives_in", "Leeds", False, False)]),
        ("I lived in Rome.", [("User previously lived in Rome", "lives_in", "Rome", False, False)]),
        ("I moved to Rome.", [("User lives in Rome", "lives_in", "Rome", False, True)]),
        (
            "I moved to a small town.",
            [("User lives in a small town", "lives_in", "a small town", False, True)],
        ),
        (
            "I moved to the Algarve.",
            [("User lives in the Algarve", "lives_in", "the Algarve", False, True)],
        ),
        ("I moved to the uk.", [("User lives in the UK", "lives_in", "the UK", False, True)]),
        (
            "I moved to the afternoon shift.",
            [("User moved to the afternoon shift", "move", "to the afternoon shift", False, False)],
        ),
    ],
)
def test_a_place_moved_to_is_a_name_or_a_kind_of_place(text: str, expected: list[Flagged]) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I got remarried.", [("User got married", "relationship_status", "married", False, True)]),
        (
            "I got divorced last year.",
            [("User got divorced", "relationship_status", "divorced", False, True)],
        ),
        (
            "I got married to Sam in June.",
            [("User got married to Sam in June", "relationship_status", "married", False, True)],
        ),
        (
            "I'm married to Sam.",
            [("User is married to Sam", "relationship_status", "married", False, False)],
        ),
        ("I'm engaged.", [("User is engaged", "relationship_status", "engaged", False, False)]),
        ("I'm a strict vegan.", [("User is vegan", "diet", "vegan", False, True)]),
        (
            "I'm a fully committed vegetarian.",
            [("User is vegetarian", "diet", "vegetarian", False, True)],
        ),
        ("I went vegan.", [("User is vegan", "diet", "vegan", False, True)]),
        (
            "I play guitar and sing in a choir.",
            [
                ("User plays guitar", "hobby", "guitar", False, False),
                ("User sings in a choir", "sing", "a choir", False, False),
            ],
        ),
        ("My name is ada.", [("User's name is Ada", "name", "Ada", False, False)]),
        (
            "I'm going by Rebecca now.",
            [("User's name is Rebecca", "name", "Rebecca", False, True)],
        ),
        (
            "I'm Ada Lovelace and I live in Leeds.",
            [
                ("User's name is Ada Lovelace", "name", "Ada Lovelace", False, False),
                ("User lives in Leeds", "lives_in", "Leeds", False, False),
            ],
        ),
    ],
)
def test_a_status_a_diet_a_second_verb_and_a_name_are_read_whole(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


def test_the_czech_republic_typed_in_lower_case_is_a_place_moved_to() -> None:
    assert flagged_facts_of("I moved to the czech republic.") == [
        ("User lives in the Czech Republic", "lives_in", "the Czech Republic", False, True)
    ]


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("My name is Ada McBride.", "Ada McBride"),
        ("My name is Ada from Leeds.", "Ada"),
        ("Call me Ada please.", "Ada"),
        ("Call me ishmael.", "Ishmael"),
    ],
)
def test_a_name_keeps_its_capitals_and_ends_at_a_word_that_is_no_name(text: str, name: str) -> None:
    assert flagged_facts_of(text) == [(f"User's name is {name}", "name", name, False, False)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I keep bees in my garden.",
            [("User keeps bees in their garden", "keep", "bees in their garden", False, False)],
        ),
        (
            "We keep bees in the garden.",
            [("User keeps bees in the garden", "keep", "bees in the garden", False, False)],
        ),
        (
            "Plus I keep bees in my garden.",
            [("User keeps bees in their garden", "keep", "bees in their garden", False, False)],
        ),
        (
            "And also I keep bees in my garden.",
            [("User keeps bees in their garden", "keep", "bees in their garden", False, False)],
        ),
        (
            "I still keep bees in my garden.",
            [
                (
                    "User still keeps bees in their garden",
                    "keep",
                    "bees in their garden",
                    False,
                    False,
                )
            ],
        ),
        (
            "I keep three beehives.",
            [("User keeps three beehives", "keep", "three beehives", False, False)],
        ),
        (
            "I am a beekeeper with three hives.",
            [
                (
                    "User is a beekeeper with three hives",
                    "be",
                    "a beekeeper with three hives",
                    False,
                    False,
                )
            ],
        ),
        (
            "I have three hives in my garden.",
            [
                (
                    "User has three hives in their garden",
                    "have",
                    "three hives in their garden",
                    False,
                    False,
                )
            ],
        ),
        (
            "I knit both scarves for my mum.",
            [
                (
                    "User knits both scarves for their mum",
                    "knit",
                    "both scarves for their mum",
                    False,
                    False,
                )
            ],
        ),
        (
            "I knit all the scarves for my family.",
            [
                (
                    "User knits all the scarves for their family",
                    "knit",
                    "all the scarves for their family",
                    False,
                    False,
                )
            ],
        ),
        (
            "restoring a 1967 Mini Cooper in my garage.",
            [
                (
                    "User is restoring a 1967 Mini Cooper in their garage",
                    "be",
                    "restoring a 1967 Mini Cooper in their garage",
                    False,
                    False,
                )
            ],
        ),
        (
            "Finished my first marathon in Berlin.",
            [
                (
                    "User finished their first marathon in Berlin",
                    "finish",
                    "their first marathon in Berlin",
                    False,
                    False,
                )
            ],
        ),
        (
            "Volunteered at the animal shelter on weekends.",
            [
                (
                    "User volunteered at the animal shelter on weekends",
                    "volunteer",
                    "at the animal shelter on weekends",
                    False,
                    False,
                )
            ],
        ),
        (
            "Sculpted a tiny bust of my grandmother.",
            [
                (
                    "User sculpted a tiny bust of their grandmother",
                    "sculpt",
                    "a tiny bust of their grandmother",
                    False,
                    False,
                )
            ],
        ),
        (
            "Waxed my surfboard before the trip.",
            [
                (
                    "User waxed their surfboard before the trip",
                    "wax",
                    "their surfboard before the trip",
                    False,
                    False,
                )
            ],
        ),
        (
            "Hiked the whole West Highland Way.",
            [
                (
                    "User hiked the whole West Highland Way",
                    "hike",
                    "the whole West Highland Way",
                    False,
                    False,
                )
            ],
        ),
        ("Sled dogs are amazing animals.", []),
        ("I keep bees in my garden, like you.", []),
        ("Maybe I keep bees in my garden.", []),
        ("I will keep bees in my garden.", []),
        ("I keep this scarf for my mum.", []),
        ("I keep bees in my garden today.", []),
        ("I think about bees in my garden.", []),
        ("I get bees in my garden.", []),
    ],
)
def test_a_clause_no_reading_understood_is_kept_in_the_users_words_when_it_is_plain(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "content", "predicate", "value", "cardinality"),
    [
        ("My climbing grade is 7a.", "User's climbing grade is 7a", "climbing_grade", "7a", "one"),
        ("My team is 12 people.", "User's team is 12 people", "team", "12 people", "one"),
        (
            "My garden was overgrown with brambles.",
            "User's garden was overgrown with brambles",
            "garden",
            "overgrown with brambles",
            "one",
        ),
        (
            "My bike was a gift from my dad.",
            "User's bike was a gift from their dad",
            "bike",
            "a gift from their dad",
            "one",
        ),
        ("My shifts are 12 hours.", "User's shifts are 12 hours", "be", "12 hours", None),
        (
            "My plants are thriving on the balcony.",
            "User's plants are thriving on the balcony",
            "be",
            "thriving on the balcony",
            None,
        ),
        (
            "My running club meets on Tuesdays.",
            "User's running club meets on Tuesdays",
            "meet",
            "on Tuesdays",
            None,
        ),
        (
            "Our running club meets on Tuesdays.",
            "User's running club meets on Tuesdays",
            "meet",
            "on Tuesdays",
            None,
        ),
        ("My team won the league.", "User's team won the league", "win", "the league", None),
        (
            "My sourdough starter lives in the fridge.",
            "User's sourdough starter lives in the fridge",
            "live",
            "in the fridge",
            None,
        ),
    ],
)
def test_something_of_the_users_is_an_attribute_after_is_and_a_verb_otherwise(
    text: str, content: str, predicate: str, value: str, cardinality: str | None
) -> None:
    assert [
        (f.content, f.predicate, f.value, f.negated, f.cardinality) for f in extract_facts(text)
    ] == [(content, predicate, value, False, cardinality)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I restore old Mini Coopers, mostly from the sixties.",
            [
                (
                    "User restores old Mini Coopers, mostly from the sixties",
                    "restore",
                    "old Mini Coopers",
                    False,
                    False,
                )
            ],
        ),
        ("My answer is no.", []),
        (
            "My home town is Leeds.",
            [("User's home town is Leeds", "home_town", "Leeds", False, False)],
        ),
        ("My flat is tiny.", [("User's flat is tiny", "flat", "tiny", False, False)]),
        (
            "My fiancé Callum and I are getting married.",
            [
                ("User's fiancé is Callum", "partner", "fiancé Callum", False, False),
                ("User is engaged", "relationship_status", "engaged", False, False),
            ],
        ),
        (
            "My coworker Jen is hilarious.",
            [("User's coworker is Jen", "knows", "coworker Jen", False, False)],
        ),
        (
            "Our neighbour Pete waved at me.",
            [("User's neighbour is Pete", "knows", "neighbour Pete", False, False)],
        ),
        (
            "My twin brother Max and I went hiking.",
            [
                ("User's brother is Max", "family", "brother Max", False, False),
                ("User went hiking", "go", "hiking", False, False),
            ],
        ),
        (
            "My sister is called Ana.",
            [("User's sister is Ana", "family", "sister Ana", False, False)],
        ),
        (
            "My sister Ana is visiting. She is a nurse.",
            [
                ("User's sister is Ana", "family", "sister Ana", False, False),
                ("User's sister Ana is a nurse", "occupation", "nurse", False, False),
            ],
        ),
        (
            "My wife, Jo, loves hiking.",
            [("User's wife Jo loves hiking", "likes", "hiking", False, False)],
        ),
        (
            "My dog Rex digs everything up.",
            [("User has a dog named Rex", "has_pet", "a dog named Rex", False, False)],
        ),
        (
            "my dog Rex digs everything up.",
            [("User has a dog named Rex", "has_pet", "a dog named Rex", False, False)],
        ),
        ("My dog digs everything up.", [("User has a dog", "has_pet", "a dog", False, False)]),
        (
            "My old cat, named Tom, sleeps all day.",
            [("User has a cat named Tom", "has_pet", "a cat named Tom", False, False)],
        ),
        (
            "My cat is called Luna.",
            [("User has a cat named Luna", "has_pet", "a cat named Luna", False, False)],
        ),
        (
            "My hamster, Nibbles, escaped again.",
            [
                (
                    "User has a hamster named Nibbles",
                    "has_pet",
                    "a hamster named Nibbles",
                    False,
                    False,
                )
            ],
        ),
        (
            "My iguana Spike eats lettuce.",
            [("User has an iguana named Spike", "has_pet", "an iguana named Spike", False, False)],
        ),
    ],
)
def test_a_relative_or_a_pet_named_in_passing_is_met_and_what_is_mine_is_kept(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I eat sushi and ramen.",
            [
                ("User eats sushi", "eats", "sushi", False, "behavior"),
                ("User eats ramen", "eats", "ramen", False, "behavior"),
            ],
        ),
        ("I drink oat milk.", [("User drinks oat milk", "drinks", "oat milk", False, "behavior")]),
        (
            "I don't like olives or capers.",
            [
                ("User doesn't like olives", "dislikes", "olives", False, "preference"),
                ("User doesn't like capers", "dislikes", "capers", False, "preference"),
            ],
        ),
    ],
)
def test_what_is_eaten_is_behaviour_and_what_is_not_liked_is_a_dislike_said_positively(
    text: str, expected: list[tuple[str, str, str, bool, str | None]]
) -> None:
    assert [
        (f.content, f.predicate, f.value, f.negated, f.category) for f in extract_facts(text)
    ] == expected


@pytest.mark.parametrize(
    "text", ["knitting is relaxing.", "Knitting was relaxing for me.", "Gardening is hard work."]
)
def test_an_activity_that_is_the_subject_is_not_kept_as_something_the_user_does(
    text: str,
) -> None:
    assert flagged_facts_of(text) == []


def test_an_activity_alone_is_what_the_user_is_doing() -> None:
    assert flagged_facts_of("baking sourdough.") == [
        ("User is baking sourdough", "be", "baking sourdough", False, False)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Hobby-wise I keep bees in my garden.",
            [("User keeps bees in their garden", "keep", "bees in their garden", False, False)],
        ),
        (
            "Money-wise we keep a strict budget spreadsheet.",
            [
                (
                    "User keeps a strict budget spreadsheet",
                    "keep",
                    "a strict budget spreadsheet",
                    False,
                    False,
                )
            ],
        ),
    ],
)
def test_a_clause_after_a_topic_ending_in_wise_is_kept(text: str, expected: list[Flagged]) -> None:
    assert flagged_facts_of(text) == expected


def test_working_for_oneself_names_no_employer() -> None:
    assert flagged_facts_of("I work for myself.") == [
        ("User works for themselves", "work", "for themselves", False, False)
    ]


@pytest.mark.parametrize(
    "text",
    [
        "I keep no bees in my garden.",
        "I never keep bees in my garden.",
        "I do not keep bees in my garden.",
        "I don't keep bees in my garden.",
    ],
)
def test_what_the_user_does_not_do_is_not_kept_as_what_they_do(text: str) -> None:
    assert [f for f in extract_facts(text) if not f.negated] == []


def test_adverbs_before_the_verb_stay_in_the_users_words() -> None:
    assert flagged_facts_of("I also still keep bees in my garden.") == [
        ("User also still keeps bees in their garden", "keep", "bees in their garden", False, False)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I did a PhD.", [("User did a PhD", "degree", "a PhD", False, False)]),
        (
            "I finished my masters.",
            [("User did their masters", "degree", "my masters", False, False)],
        ),
        (
            "I finished my first marathon.",
            [
                (
                    "User finished their first marathon",
                    "finish",
                    "their first marathon",
                    False,
                    False,
                )
            ],
        ),
        (
            "I do yoga with my neighbours.",
            [("User does yoga with their neighbours", "hobby", "yoga", False, False)],
        ),
        (
            "I'm married to that guy.",
            [("User is married", "relationship_status", "married", False, False)],
        ),
        (
            "I moved into a place in Lyon.",
            [("User lives in Lyon", "lives_in", "Lyon", False, True)],
        ),
        ("I live here now.", []),
        ("I live at home.", [("User lives at home", "live", "at home", False, False)]),
    ],
)
def test_a_degree_needs_its_word_near_the_verb_and_a_place_needs_a_name(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize("text", ["I graduated in 2019.", "I graduated with honours."])
def test_graduating_names_a_school_only_after_from(text: str) -> None:
    assert flagged_facts_of(text) == [("User graduated", "school", "graduated", False, True)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "My wife Jo and my dog Rex went for a walk.",
            [
                ("User's wife is Jo", "partner", "wife Jo", False, False),
                ("User has a dog named Rex", "has_pet", "a dog named Rex", False, False),
            ],
        ),
        (
            "My dog Rex and my wife Jo went for a walk.",
            [
                ("User has a dog named Rex", "has_pet", "a dog named Rex", False, False),
                ("User's wife is Jo", "partner", "wife Jo", False, False),
            ],
        ),
        (
            "My wife Jo and my brother Max went sailing.",
            [
                ("User's wife is Jo", "partner", "wife Jo", False, False),
                ("User's brother is Max", "family", "brother Max", False, False),
            ],
        ),
    ],
)
def test_every_relative_and_pet_named_in_one_clause_is_met(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


def test_an_irregular_past_opening_a_clause_is_kept_in_the_users_words() -> None:
    assert flagged_facts_of("Built a treehouse for my nephews.") == [
        (
            "User built a treehouse for their nephews",
            "build",
            "a treehouse for their nephews",
            False,
            False,
        )
    ]


def test_a_relative_named_in_passing_is_who_she_is_in_the_next_sentence() -> None:
    assert flagged_facts_of("Yesterday I visited my aunt Rosa. She lives in Porto.") == [
        ("User's aunt is Rosa", "family", "aunt Rosa", False, False),
        ("User's aunt Rosa lives in Porto", "lives_in", "Porto", False, False),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I keep pet rats.", [("User keeps pet rats", "keep", "pet rats", False, False)]),
        ("I fix old radios.", [("User fixes old radios", "fix", "old radios", False, False)]),
    ],
)
def test_three_letter_words_count_as_content(text: str, expected: list[Flagged]) -> None:
    assert flagged_facts_of(text) == expected


def test_a_pet_whose_name_follows_s_called_is_named() -> None:
    found = flagged_facts_of("My little puppy's called Biscuit.")
    assert [row for row in found if row[1] == "has_pet"] == [
        ("User has a puppy named Biscuit", "has_pet", "a puppy named Biscuit", False, False)
    ]


@pytest.mark.parametrize(
    ("text", "content", "value"),
    [
        (
            "We are on the waiting list for an allotment.",
            "User is on the waiting list for an allotment",
            "on the waiting list for an allotment",
        ),
        (
            "We are renovating a farmhouse in Wales.",
            "User is renovating a farmhouse in Wales",
            "renovating a farmhouse in Wales",
        ),
    ],
)
def test_we_are_is_what_the_user_is(text: str, content: str, value: str) -> None:
    assert flagged_facts_of(text) == [(content, "be", value, False, False)]


# english_phrase and english_implied: a sentence per cue word and branch


def _detail_after_first_word(text: str) -> str:
    phrase = phrase_reader.Phrase.of(text)
    phrase.pos = 1
    return phrase_reader.detail(phrase)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        pytest.param("tea with milk", " with milk", id="adverbial-kept"),
        pytest.param("tea in the morning,", " in the morning", id="trailing-comma-dropped"),
        pytest.param("tea in the morning and coffee at night", " in the morning", id="and"),
        pytest.param("tea because it calms me", "", id="because"),
        pytest.param("tea which is odd", "", id="which"),
        pytest.param("tea but not coffee", "", id="but"),
        pytest.param("tea when it rains", "", id="when"),
        pytest.param("tea, mostly green", ", mostly green", id="comma-mostly"),
        pytest.param("tea, especially green", ", especially green", id="comma-especially"),
        pytest.param("tea, with milk", ", with milk", id="comma-with"),
        pytest.param("tea, every morning", ", every morning", id="comma-every"),
        pytest.param("tea, I guess", "", id="comma-new-clause"),
        pytest.param("tea, with milk, , usually", ", with milk", id="double-comma"),
        pytest.param("tea now with milk", " with milk", id="now-dropped"),
        pytest.param("tea last week with milk", " with milk", id="last-week"),
        pytest.param("tea this year in Leeds", " in Leeds", id="this-year"),
        pytest.param("tea next month in Leeds", " in Leeds", id="next-month"),
        pytest.param("tea last of all", " last of all", id="last-without-a-unit"),
        pytest.param("tea 3 years ago in Leeds", " in Leeds", id="digits-ago"),
        pytest.param("tea a few weeks ago in Leeds", " in Leeds", id="a-few-ago"),
        pytest.param("tea since 2019", "", id="since-a-year"),
        pytest.param("tea since 1998", "", id="since-a-last-century-year"),
        pytest.param("tea since May", " since May", id="since-a-month-kept"),
        pytest.param("tea since 1850 in Leeds", " since 1850 in Leeds", id="since-old-year"),
        pytest.param("tea for ages", "", id="for-ages"),
        pytest.param("tea for six years", "", id="for-years"),
        pytest.param("tea for six years because it helps", "", id="for-years-then-because"),
        pytest.param("tea for six years, with milk", ", with milk", id="for-years-comma"),
        pytest.param("tea for my health", " for my health", id="for-a-reason-kept"),
        pytest.param("tea these days", "", id="these-days"),
        pytest.param("tea right now", "", id="right-now"),
        pytest.param("tea at the moment with milk", " with milk", id="at-the-moment"),
        pytest.param("tea at home", " at home", id="at-home-kept"),
        pytest.param("tea right here", " right here", id="right-here-kept"),
        pytest.param("tea as well", "", id="as-well"),
        pytest.param("tea as a treat", " as a treat", id="as-a-treat-kept"),
        pytest.param("tea a lot", "", id="a-lot"),
        pytest.param("tea so much", "", id="so-much"),
        pytest.param("tea very much", "", id="very-much"),
    ],
)
def test_the_detail_after_a_value_keeps_adverbials_and_drops_time_words(
    text: str, kept: str
) -> None:
    assert _detail_after_first_word(text) == kept


@pytest.mark.parametrize(
    ("text", "read"),
    [
        pytest.param("energy drinks two weeks ago", "energy drinks", id="number-word-span"),
        pytest.param("energy drinks 3 years ago", "energy drinks", id="digit-span"),
        pytest.param("energy drinks couple of months ago", "energy drinks", id="couple-of"),
        pytest.param("energy drinks couple months ago", "energy drinks", id="couple"),
        pytest.param("two cats", "two cats", id="a-count-first-is-no-span"),
        pytest.param("3 kids", "3 kids", id="digits-not-a-span"),
        pytest.param("every day", "", id="never-first"),
        pytest.param("in Leeds", "in Leeds", id="preposition-first"),
        pytest.param("tea in the morning", "tea", id="preposition-ends"),
        pytest.param("tea, coffee and juice", "tea, coffee and juice", id="list-and"),
        pytest.param("tea, coffee or juice", "tea, coffee or juice", id="list-or"),
        pytest.param("tea, coffee", "tea", id="comma-no-list"),
        pytest.param("tea, in the morning and juice", "tea", id="comma-then-adverbial"),
        pytest.param("tea and", "tea", id="trailing-and"),
        pytest.param("tea or", "tea", id="trailing-or"),
        pytest.param("French fluently", "French", id="ly-adverb"),
        pytest.param("my aunt Polly", "my aunt Polly", id="short-ly-name"),
        pytest.param("my family", "my family", id="family-is-no-adverb"),
    ],
)
def test_a_value_runs_to_its_boundary(text: str, read: str) -> None:
    assert phrase_reader.value(phrase_reader.Phrase.of(text)) == read


@pytest.mark.parametrize(
    ("typed", "written"),
    [
        pytest.param("paris", "Paris", id="a-city"),
        pytest.param("Paris", "Paris", id="capitals-kept"),
        pytest.param("new york", "New York", id="two-words"),
        pytest.param("a small agency", "a small agency", id="a"),
        pytest.param("an old bakery", "an old bakery", id="an"),
        pytest.param("my hometown", "my hometown", id="my"),
        pytest.param("our office", "our office", id="our"),
        pytest.param("some startup", "some startup", id="some"),
        pytest.param("rio de janeiro", "Rio de Janeiro", id="de"),
        pytest.param("isle of man", "Isle of Man", id="of"),
        pytest.param("rio de la plata", "Rio de la Plata", id="la"),
        pytest.param("trinidad and tobago", "Trinidad and Tobago", id="and"),
        pytest.param("the bbc", "the BBC", id="the-and-no-vowels"),
        pytest.param("st louis", "St Louis", id="abbreviation"),
        pytest.param("ibm", "IBM", id="acronym"),
        pytest.param("hsbc", "HSBC", id="four-letters-no-vowel"),
        pytest.param("lynch", "Lynch", id="five-letters-no-vowel"),
    ],
)
def test_a_place_typed_in_lower_case_is_written_as_a_name(typed: str, written: str) -> None:
    assert phrase_reader.capitalize_place(typed) == written


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        pytest.param("tea, coffee and juice", ["tea", "coffee", "juice"], id="comma-and"),
        pytest.param("tea or coffee", ["tea", "coffee"], id="or"),
        pytest.param("tea & coffee", ["tea", "coffee"], id="ampersand"),
        pytest.param("tea, and coffee", ["tea", "coffee"], id="comma-and-together"),
        pytest.param("tea, or coffee", ["tea", "coffee"], id="comma-or-together"),
        pytest.param("rock and roll", ["rock and roll"], id="compound"),
        pytest.param("Mac and Cheese", ["Mac and Cheese"], id="compound-capitals"),
        pytest.param("two cats, Miso and Tofu", ["two cats, Miso and Tofu"], id="count-names"),
        pytest.param("3 cats, Miso and Tofu", ["3 cats, Miso and Tofu"], id="digits-names"),
        pytest.param("a dog, Rex", ["a dog, Rex"], id="a-dog-named"),
        pytest.param("cats, Miso and Tofu", ["cats", "Miso", "Tofu"], id="no-count"),
        pytest.param("Miso, Tofu and Bean", ["Miso", "Tofu", "Bean"], id="names"),
        pytest.param("two cats, Miso and Big Tofu", ["two cats", "Miso", "Big Tofu"], id="long"),
        pytest.param("two cats and a dog", ["two cats", "a dog"], id="lower-case-second"),
        pytest.param("green tea", ["green tea"], id="one"),
    ],
)
def test_a_list_value_splits_into_items_and_keeps_names_with_their_count(
    text: str, parts: list[str]
) -> None:
    assert phrase_reader.items(text) == parts


@pytest.mark.parametrize(
    ("text", "points"),
    [
        pytest.param("it", True, id="it"),
        pytest.param("That you said", True, id="that"),
        pytest.param("", True, id="empty"),
        pytest.param("   ", True, id="blank"),
        pytest.param("!!", True, id="no-letters"),
        pytest.param("Paris", False, id="a-place"),
        pytest.param("itching powder", False, id="a-word-starting-with-it"),
    ],
)
def test_a_pointer_is_a_word_for_the_conversation(text: str, points: bool) -> None:
    assert phrase_reader.pointer(text) is points


def test_the_users_own_words_are_restated_in_the_third_person() -> None:
    said = "I told my Mom it's mine, me and Myself"
    assert (
        phrase_reader.third_person_words(said)
        == "they told their Mom it's theirs, them and themselves"
    )
    assert phrase_reader.third_person_words("iPhone is mine") == "iPhone is theirs"


def test_tokens_keep_handles_versions_and_addresses_whole() -> None:
    assert phrase_reader.tokens("I'm a C++ dev, mail a.b@c.com #tag v2.0!") == [
        "I'm",
        "a",
        "C++",
        "dev",
        ",",
        "mail",
        "a.b@c.com",
        "#tag",
        "v2.0",
    ]


def test_a_phrase_reads_words_and_positions_within_its_bounds() -> None:
    phrase = phrase_reader.Phrase.of("I Really love Tea")
    assert (phrase.peek(), phrase.peek(-1), phrase.word(), phrase.word(-1)) == ("i", "", "I", "")
    assert (phrase.peek(4), phrase.word(4), phrase.peek_at(3), phrase.peek_at(-1)) == (
        "",
        "",
        "tea",
        "",
    )
    assert phrase.peek_at(4) == ""
    assert (phrase.peek_at(0), phrase.peek_at(1)) == ("i", "really")
    assert not phrase.take("i", "love")
    assert phrase.pos == 0
    assert phrase.take("i", "really")
    assert (phrase.pos, phrase.peek(), phrase.word(1), phrase.word(-1)) == (
        2,
        "love",
        "Tea",
        "Really",
    )
    phrase.skip(frozenset({"love", "really"}))
    assert (phrase.pos, phrase.done()) == (3, False)
    phrase.skip(frozenset({"tea"}))
    assert (phrase.pos, phrase.done()) == (4, True)


@pytest.mark.parametrize(
    ("text", "row"),
    [
        pytest.param(
            "I used to live in Rome.",
            ("User previously lived in Rome", "lives_in", "Rome", True, True),
            id="used-to",
        ),
        pytest.param(
            "I lived in Rome.",
            ("User previously lived in Rome", "lives_in", "Rome", False, False),
            id="simple-past-state",
        ),
        pytest.param(
            "I was living in Rome.",
            ("User previously lived in Rome", "lives_in", "Rome", False, False),
            id="past-progressive",
        ),
        pytest.param(
            "I'm living in Rome.",
            ("User is living in Rome", "lives_in", "Rome", False, False),
            id="progressive",
        ),
        pytest.param(
            "I'm not living in Rome.",
            ("User doesn't live in Rome", "lives_in", "Rome", True, False),
            id="progressive-negated",
        ),
        pytest.param(
            "I no longer live in Rome.",
            ("User no longer lives in Rome", "lives_in", "Rome", True, True),
            id="no-longer",
        ),
        pytest.param(
            "I'm not working at Google anymore.",
            ("User no longer works at Google", "employer", "Google", True, True),
            id="not-anymore",
        ),
        pytest.param(
            "I moved to Leeds.",
            ("User lives in Leeds", "lives_in", "Leeds", False, True),
            id="event-past",
        ),
        pytest.param(
            "I can speak French.",
            ("User can speak French", "speaks", "French", False, False),
            id="ability",
        ),
        pytest.param(
            "I usually drink coffee.",
            ("User usually drinks coffee", "drinks", "coffee", False, False),
            id="frequency",
        ),
        pytest.param(
            "I usually don't drink coffee.",
            ("User doesn't drink coffee", "drinks", "coffee", True, False),
            id="frequency-negated",
        ),
        pytest.param(
            "I never drink coffee.",
            ("User doesn't drink coffee", "drinks", "coffee", True, False),
            id="never",
        ),
        pytest.param(
            "I don't have a car.",
            ("User doesn't have a car", "owns", "a car", True, False),
            id="have-negated",
        ),
        pytest.param(
            "I haven't had a car.",
            ("User has not had a car", "owns", "a car", True, False),
            id="have-perfect-negated",
        ),
        pytest.param(
            "I had a dog.",
            ("User previously had a dog", "has_pet", "a dog", False, False),
            id="had",
        ),
        pytest.param(
            "I've had a dog.", ("User has a dog", "has_pet", "a dog", False, False), id="have-had"
        ),
        pytest.param(
            "I haven't been to Japan.",
            ("User has not been to Japan", "visited", "Japan", True, False),
            id="have-been-negated",
        ),
        pytest.param(
            "I have been to Japan.",
            ("User has been to Japan", "visited", "Japan", False, False),
            id="have-been",
        ),
        pytest.param(
            "I was a teacher.",
            ("User was previously a teacher", "occupation", "teacher", False, False),
            id="be-past",
        ),
        pytest.param(
            "I used to be a teacher.",
            ("User was previously a teacher", "occupation", "teacher", True, True),
            id="be-used-to",
        ),
        pytest.param(
            "I'm no longer a teacher.",
            ("User is no longer a teacher", "occupation", "teacher", True, True),
            id="be-no-longer",
        ),
        pytest.param(
            "I'm not a teacher.",
            ("User is not a teacher", "occupation", "teacher", True, False),
            id="be-not",
        ),
        pytest.param(
            "I'm a teacher.", ("User is a teacher", "occupation", "teacher", False, False), id="be"
        ),
        pytest.param(
            "On Sundays I play tennis.",
            ("User plays tennis on Sundays", "hobby", "tennis", False, False),
            id="occasion",
        ),
        pytest.param(
            "I live in Lyon with my wife.",
            ("User lives in Lyon with their wife", "lives_in", "Lyon", False, False),
            id="my-restated",
        ),
        pytest.param(
            "I live in new york.",
            ("User lives in New York", "lives_in", "New York", False, False),
            id="place-capitalized",
        ),
        pytest.param(
            "I work at the bbc.",
            ("User works at the BBC", "employer", "the BBC", False, False),
            id="acronym",
        ),
        pytest.param(
            "I love hiking, especially in the mountains.",
            ("User loves hiking, especially in the mountains", "likes", "hiking", False, False),
            id="detail-after-comma",
        ),
        pytest.param(
            "I love hiking because it relaxes me.",
            ("User loves hiking", "likes", "hiking", False, False),
            id="detail-ends-at-because",
        ),
        pytest.param(
            "I've lived in Berlin since 2019.",
            ("User lives in Berlin", "lives_in", "Berlin", False, False),
            id="since-a-year",
        ),
        pytest.param(
            "I love tennis so much.",
            ("User loves tennis", "likes", "tennis", False, False),
            id="so-much",
        ),
    ],
)
def test_the_clause_is_restated_about_the_user_with_their_verb_form(
    text: str, row: Flagged
) -> None:
    assert flagged_facts_of(text) == [row]


def test_a_second_verb_of_the_same_subject_is_read_with_the_first() -> None:
    assert flagged_facts_of("I love hiking and sing in a choir.") == [
        ("User loves hiking", "likes", "hiking", False, False),
        ("User sings in a choir", "sing", "a choir", False, False),
    ]


def test_an_emit_without_a_value_finds_nothing() -> None:
    reading = phrase_reader.Reading(USER, phrase_reader.Group(), phrase_reader.Phrase.of(""))
    reading.emit("likes", "  ", "User likes")
    assert reading.found == []
    reading.emit("likes", " tea ", "User likes tea", key="drink", updates=True, category="food")
    reading.emit("likes", "coffee", "User likes coffee", negated=True)
    assert [
        (s.predicate, s.value, s.content, s.key, s.negated, s.updates_previous, s.category)
        for s in reading.found
    ] == [
        ("likes", "tea", "User likes tea", "drink", False, True, "food"),
        ("likes", "coffee", "User likes coffee", None, True, False, None),
    ]
    again = reading.again(phrase_reader.Phrase.of("and sing"))
    assert (again.speaker, again.group, again.found, again.phrase.low) == (
        USER,
        reading.group,
        reading.found,
        ["and", "sing"],
    )


@pytest.mark.parametrize(
    ("text", "read_as"),
    [
        pytest.param("Just moved to Leeds", "moved to Leeds", id="filler-then-past"),
        pytest.param("yeah basically just moved to Leeds", "moved to Leeds", id="three-fillers"),
        pytest.param("so yeah basically just moved to Leeds", None, id="four-fillers-too-many"),
        pytest.param("just", None, id="only-a-filler"),
        pytest.param("Moves to Leeds", None, id="third-person-present"),
        pytest.param("Went to Paris", "Went to Paris", id="irregular-past"),
        pytest.param("Was in Paris", None, id="was"),
        pytest.param("Married with two kids", "am married with two kids", id="status"),
        pytest.param("married", "am married", id="status-alone"),
        pytest.param("Divorced since 2016", "am divorced since 2016", id="status-since"),
        pytest.param("Married Sam last year", "Married Sam last year", id="married-a-name"),
        pytest.param("Married her last year", "Married her last year", id="married-her"),
        pytest.param("Training for a marathon", "am training for a marathon", id="ongoing"),
        pytest.param("Moving", "am moving", id="ongoing-alone"),
        pytest.param("Ordering lunch is a puzzle", None, id="gerund-subject"),
        pytest.param("Vegan for five years", "am vegan for five years", id="diet"),
        pytest.param("Strict vegan for five years", "am strict vegan for five years", id="strict"),
        pytest.param("Mostly vegetarian", "am vegetarian", id="adverb-then-diet"),
        pytest.param("Strict parents", None, id="strict-without-a-diet"),
        pytest.param("Been vegan for years", "have Been vegan for years", id="been"),
        pytest.param("Quit sugar", "have Quit sugar", id="quit-first"),
        pytest.param("Also quit sugar", None, id="quit-after-a-filler"),
        pytest.param("Two kids, both girls", "have two kids , both girls", id="kids"),
        pytest.param("Two kids", "have two kids", id="two-kids"),
        pytest.param("3 kids", "have 3 kids", id="digit-kids"),
        pytest.param("A dog and two cats", "have a dog and two cats", id="pets"),
        pytest.param("Two cats", "have two cats", id="two-cats"),
        pytest.param("Two big fluffy cats", "have two big fluffy cats", id="noun-third-word"),
        pytest.param("Two very big fluffy cats", None, id="noun-too-far"),
        pytest.param("Two", None, id="a-count-alone"),
        pytest.param("A cat called Miso", "have a cat called Miso", id="called"),
        pytest.param(
            "Two cats named Miso and Tofu", "have two cats named Miso and Tofu", id="named"
        ),
        pytest.param("A son aged 5", "have a son aged 5", id="aged"),
        pytest.param("Two cats are asleep", None, id="cats-are"),
        pytest.param("My two cats", None, id="my-count"),
        pytest.param("Also two cats", None, id="count-after-a-filler"),
        pytest.param("Big fan of jazz", "am a fan of jazz", id="big-fan"),
        pytest.param("Huge fan of jazz", "am a Huge fan of jazz", id="huge-fan"),
        pytest.param("Fan of jazz", "am a Fan of jazz", id="fan"),
        pytest.param("A fan of jazz", "am a fan of jazz", id="a-fan"),
        pytest.param("Kinda a big fan of jazz", "am a big fan of jazz", id="kinda-a-big-fan"),
        pytest.param("Big fan", None, id="fan-of-nothing"),
        pytest.param("Into baking", "am into baking", id="into"),
        pytest.param("Really really into baking", "am into baking", id="adverbs-then-into"),
        pytest.param("Learning Spanish is fun", None, id="learning-is"),
        pytest.param("Cooking is fun", None, id="gerund-then-is"),
        pytest.param("Strict vegan", "am strict vegan", id="strict-vegan-alone"),
        pytest.param("Married Sam", "Married Sam", id="married-a-name-alone"),
        pytest.param("Two cats live with me", None, id="cats-live"),
        pytest.param("Two kids, aged 5 and 7", "have two kids , aged 5 and 7", id="kids-aged"),
    ],
)
def test_a_clause_without_its_i_is_read_as_the_users(text: str, read_as: str | None) -> None:
    phrase = phrase_reader.Phrase.of(text)
    speaker = implied_i(phrase)
    if read_as is None:
        assert speaker is None
        assert phrase.pos == 0
    else:
        assert speaker is USER
        assert " ".join(phrase.toks[phrase.pos :]) == read_as
        assert phrase.low[phrase.pos :] == [t.casefold() for t in phrase.toks[phrase.pos :]]


@pytest.mark.parametrize(
    ("text", "row"),
    [
        pytest.param(
            "Just moved to Leeds.",
            ("User lives in Leeds", "lives_in", "Leeds", False, True),
            id="moved",
        ),
        pytest.param(
            "Also started pottery.",
            ("User started pottery", "hobby", "pottery", False, False),
            id="started",
        ),
        pytest.param(
            "Really into baking.", ("User likes baking", "likes", "baking", False, False), id="into"
        ),
        pytest.param(
            "Allergic to kiwi.",
            ("User is allergic to kiwi", "allergic_to", "kiwi", False, False),
            id="allergic",
        ),
        pytest.param(
            "Married with two kids.",
            ("User is married", "relationship_status", "married", False, False),
            id="married",
        ),
        pytest.param(
            "Strict vegan for five years.",
            ("User is vegan", "diet", "vegan", False, True),
            id="vegan",
        ),
        pytest.param(
            "Been vegan for years.",
            ("User is vegan", "diet", "vegan", False, True),
            id="been-vegan",
        ),
        pytest.param(
            "Quit sugar last month.", ("User quit sugar", "habit", "sugar", True, False), id="quit"
        ),
        pytest.param(
            "Two kids, both girls.",
            ("User has two kids", "family", "two kids", False, False),
            id="kids",
        ),
        pytest.param(
            "A dog and two cats.",
            ("User has a dog and two cats", "has_pet", "a dog and two cats", False, False),
            id="pets",
        ),
        pytest.param(
            "Training for a marathon.",
            ("User is training for a marathon", "goal", "a marathon", False, False),
            id="training",
        ),
        pytest.param(
            "Big fan of jazz.", ("User is a fan of jazz", "likes", "jazz", False, False), id="fan"
        ),
        pytest.param(
            "Fluent in Spanish.",
            ("User speaks Spanish", "speaks", "Spanish", False, False),
            id="fluent",
        ),
        pytest.param(
            "Learning Spanish.",
            ("User is learning Spanish", "learning", "Spanish", False, False),
            id="learning",
        ),
    ],
)
def test_a_chat_sentence_without_its_i_gives_the_users_fact(text: str, row: Flagged) -> None:
    assert flagged_facts_of(text) == [row]


@pytest.mark.parametrize(
    ("text", "read"),
    [
        pytest.param("an apple a day", "an apple a day", id="a-day-is-no-span"),
        pytest.param("three meals a day", "three meals a day", id="meals-a-day"),
        pytest.param("flat 2", "flat 2", id="a-number-last"),
        pytest.param("three coffees an hour", "three coffees an hour", id="an-hour-is-no-span"),
        pytest.param("two weeks", "two weeks", id="a-span-first-is-the-value"),
        pytest.param(", tea", "", id="a-comma-first"),
        pytest.param("tea, and", "tea", id="trailing-comma-and"),
        pytest.param("room two", "room two", id="a-number-word-last"),
        pytest.param("energy drinks couple", "energy drinks couple", id="couple-last"),
        pytest.param("energy drinks couple of", "energy drinks couple of", id="couple-of-last"),
    ],
)
def test_a_count_is_no_span_of_time_without_its_unit(text: str, read: str) -> None:
    assert phrase_reader.value(phrase_reader.Phrase.of(text)) == read


def test_the_second_verb_keeps_the_occasion_said_before_the_subject() -> None:
    assert flagged_facts_of("On Sundays I play tennis and sing in a choir.") == [
        ("User plays tennis on Sundays", "hobby", "tennis", False, False),
        ("User sings in a choir on Sundays", "sing", "a choir", False, False),
    ]
    assert flagged_facts_of("I was a teacher and lived in Rome.") == [
        ("User was previously a teacher", "occupation", "teacher", False, False),
        ("User previously lived in Rome", "lives_in", "Rome", False, False),
    ]


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        pytest.param("tea next", " next", id="next-last"),
        pytest.param("tea for my mum every day", " for my mum every day", id="for-someone"),
        pytest.param("tea for about six years, with milk", ", with milk", id="for-about-years"),
        pytest.param("tea with milk these days", " with milk", id="these-days-after"),
        pytest.param("tea with milk a lot", " with milk", id="a-lot-after"),
        pytest.param("tea a lot, with milk", ", with milk", id="a-lot-then-comma"),
        pytest.param("tea with milk as well", " with milk", id="as-well-after"),
        pytest.param("tea with milk now", " with milk", id="now-after"),
        pytest.param("tea with milk 3 years ago", " with milk", id="ago-after"),
        pytest.param("tea with milk since 2019", " with milk", id="since-after"),
        pytest.param("tea with milk last year", " with milk", id="last-year-after"),
    ],
)
def test_time_words_later_in_the_detail_are_dropped_too(text: str, kept: str) -> None:
    assert _detail_after_first_word(text) == kept


@pytest.mark.parametrize(
    ("text", "row"),
    [
        pytest.param(
            "I was allergic to peanuts.",
            ("User was previously allergic to peanuts", "allergic_to", "peanuts", False, False),
            id="be-past",
        ),
        pytest.param(
            "I used to be allergic to peanuts.",
            ("User was previously allergic to peanuts", "allergic_to", "peanuts", True, False),
            id="be-used-to",
        ),
        pytest.param(
            "I'm no longer allergic to peanuts.",
            ("User is no longer allergic to peanuts", "allergic_to", "peanuts", True, False),
            id="be-no-longer",
        ),
        pytest.param(
            "I'm not allergic to peanuts.",
            ("User is not allergic to peanuts", "allergic_to", "peanuts", True, False),
            id="be-not",
        ),
        pytest.param(
            "I was in a relationship.",
            (
                "User was previously in a relationship",
                "relationship_status",
                "in a relationship",
                False,
                False,
            ),
            id="in-a-relationship",
        ),
        pytest.param(
            "I was Catholic.",
            ("User was previously Catholic", "religion", "Catholic", False, False),
            id="religion",
        ),
        pytest.param(
            "I speak French poorly.",
            ("User speaks French poorly", "speaks", "French", False, False),
            id="ly-adverb-ends-the-value",
        ),
    ],
)
def test_a_state_of_being_is_restated_with_its_time(text: str, row: Flagged) -> None:
    assert flagged_facts_of(text) == [row]


@pytest.mark.parametrize(
    ("text", "row"),
    [
        pytest.param(
            "I can play the piano.",
            ("User can play the piano", "hobby", "the piano", False, False),
            id="play",
        ),
        pytest.param("I can cook.", ("User can cook", "habit", "cooking", False, False), id="cook"),
        pytest.param(
            "I can swim.", ("User can swim", "habit", "swimming", False, False), id="swim"
        ),
    ],
)
def test_what_the_user_can_do_is_said_with_can(text: str, row: Flagged) -> None:
    assert flagged_facts_of(text) == [row]


@pytest.mark.parametrize(
    ("text", "rows"),
    [
        pytest.param(
            "I smoked a lot and quit.",
            [("User no longer smokes", "habit", "smoking", True, False)],
            id="quit-what-the-message-said",
        ),
        pytest.param(
            "I drink coffee and quit smoking.",
            [
                ("User drinks coffee", "drinks", "coffee", False, False),
                ("User no longer smokes", "habit", "smoking", True, False),
            ],
            id="quit-an-object",
        ),
    ],
)
def test_a_second_verb_reads_the_whole_message_for_what_it_leaves_unsaid(
    text: str, rows: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == rows


# chinese and chinese_verbs: a sentence per cue word and branch

# fmt: off
CHINESE_CUES: dict[str, tuple[str, list[Flagged]]] = {
    # tastes: 不 before the verb, 讨厌/受不了, 偏好, the other words of liking, the past
    "dont-like": ("我不喜欢香菜。", [("用户不喜欢香菜", "dislikes", "香菜", False, False)]),
    "hate": ("我讨厌下雨。", [("用户讨厌下雨", "dislikes", "下雨", False, False)]),
    "cant-stand": ("我受不了噪音。", [("用户受不了噪音", "dislikes", "噪音", False, False)]),
    "prefer": ("我偏好安静。", [("用户偏好安静", "prefers", "安静", False, False)]),
    "love-most": ("我最爱火锅。", [("用户最爱火锅", "likes", "火锅", False, False)]),
    "love-deeply": ("我热爱跑步。", [("用户热爱跑步", "likes", "跑步", False, False)]),
    "hooked": ("我迷上了滑雪。", [("用户迷上了滑雪", "likes", "滑雪", False, False)]),
    "liked-before": ("我以前喜欢咖啡。", [("用户以前喜欢咖啡", "likes", "咖啡", True, False)]),
    "no-longer-like": ("我不再喜欢咖啡了。",
                       [("用户不再喜欢咖啡", "likes", "咖啡", True, True)]),
    "like-two": ("我喜欢看书和游泳。", [("用户喜欢看书", "likes", "看书", False, False),
                                  ("用户喜欢游泳", "likes", "游泳", False, False)]),
    "like-list": ("我喜欢猫、狗与兔子。", [("用户喜欢猫", "likes", "猫", False, False),
                                    ("用户喜欢狗", "likes", "狗", False, False),
                                    ("用户喜欢兔子", "likes", "兔子", False, False)]),
    "usually-like": ("我平时喜欢看书。", [("用户平时喜欢看书", "likes", "看书", False, False)]),
    "afraid-very": ("我很怕狗。", [("用户很怕狗", "afraid_of", "狗", False, False)]),
    "afraid-two": ("我害怕蜘蛛和蛇。", [("用户害怕蜘蛛", "afraid_of", "蜘蛛", False, False),
                                   ("用户害怕蛇", "afraid_of", "蛇", False, False)]),
    "allergic-to": ("我对猫毛过敏。", [("用户对猫毛过敏", "allergic_to", "猫毛", False, False)]),
    "intolerant-to": ("我对海鲜不耐受。",
                      [("用户对海鲜过敏", "allergic_to", "海鲜", False, False)]),
    # relationships
    "married": ("我结婚了。", [("用户结婚了", "relationship_status", "已婚", False, True)]),
    "divorced": ("我离婚了。", [("用户离婚了", "relationship_status", "离婚", False, True)]),
    "engaged": ("我订婚了。", [("用户订婚了", "relationship_status", "订婚", False, True)]),
    "broke-up": ("我分手了。", [("用户单身", "relationship_status", "单身", False, True)]),
    "single": ("我单身。", [("用户单身", "relationship_status", "单身", False, True)]),
    "partner-before": ("我以前有女朋友。",
                       [("用户以前有女朋友", "relationship_status", "恋爱中", True, True)]),
    "no-girlfriend": ("我没有女朋友。",
                      [("用户没有女朋友", "relationship_status", "单身", False, True)]),
    # where the user lives
    "with-husband-in": ("我和老公都在北京。", [("用户住在北京", "lives_in", "北京", False, False)]),
    "family-home-in": ("我们家在成都。", [("用户住在成都", "lives_in", "成都", False, False)]),
    "in-person-in": ("我人在深圳。", [("用户住在深圳", "lives_in", "深圳", False, False)]),
    "we-live": ("我们住在成都。", [("用户住在成都", "lives_in", "成都", False, False)]),
    "whole-family": ("我们全家都住在杭州。",
                     [("用户住在杭州", "lives_in", "杭州", False, False)]),
    "lived-before": ("我以前住在上海。", [("用户以前住在上海", "lives_in", "上海", True, False)]),
    "lived-originally": ("我原来住在北京。",
                         [("用户以前住在北京", "lives_in", "北京", True, False)]),
    "lived-as-a-child": ("我小时候住在农村。",
                         [("用户以前住在农村", "lives_in", "农村", True, False)]),
    "not-living-in": ("我不住在北京了。", [("用户不住在北京", "lives_in", "北京", True, False)]),
    "moved-go": ("我搬去了深圳。", [("用户住在深圳", "lives_in", "深圳", False, True)]),
    "moved-house": ("我搬家到了广州。", [("用户住在广州", "lives_in", "广州", False, True)]),
    "finally-moved": ("我终于搬到上海了。", [("用户住在上海", "lives_in", "上海", False, True)]),
    "just-moved": ("我刚搬到上海。", [("用户住在上海", "lives_in", "上海", False, True)]),
    "nowadays-live": ("我如今住在深圳。", [("用户住在深圳", "lives_in", "深圳", False, True)]),
    "rent-in": ("我在南京租房住。", [("用户住在南京", "lives_in", "南京", False, False)]),
    "live-in-after": ("我在杭州住。", [("用户住在杭州", "lives_in", "杭州", False, False)]),
    "now-in-city": ("我现在在北京。", [("用户住在北京", "lives_in", "北京", False, True)]),
    "we-are-in": ("我们在纽约。", [("用户住在纽约", "lives_in", "纽约", False, False)]),
    "lead-filler": ("对了，我住在广州。", [("用户住在广州", "lives_in", "广州", False, False)]),
    "written-about-user": ("用户住在北京。", [("用户住在北京", "lives_in", "北京", False, False)]),
    # work and school
    "go-to-work": ("我在腾讯上班。", [("用户在腾讯上班", "employer", "腾讯", False, False)]),
    "intern": ("我在医院实习。", [("用户在医院实习", "employer", "医院", False, False)]),
    "odd-job": ("我在一家餐厅打工。",
                [("用户在一家餐厅打工", "employer", "一家餐厅", False, False)]),
    "already-working": ("我已经在腾讯上班了。",
                        [("用户在腾讯上班", "employer", "腾讯", False, True)]),
    "currently-working": ("我目前在腾讯工作。",
                          [("用户在腾讯工作", "employer", "腾讯", False, True)]),
    "worked-once": ("我曾经在华为工作。",
                    [("用户以前在华为工作", "employer", "华为", True, False)]),
    "worked-in-the-past": ("我过去在银行工作。",
                           [("用户以前在银行工作", "employer", "银行", True, False)]),
    "work-as-at": ("我在华为当工程师。", [("用户在华为工作", "employer", "华为", False, False),
                                   ("用户做工程师", "occupation", "工程师", False, False)]),
    "works-at-school": ("我在学校工作。", [("用户在学校工作", "employer", "学校", False, False)]),
    "still-in-hospital-unit": ("我还在医院。", [("用户在医院", "employer", "医院", False, False)]),
    "a-nurse-really": ("其实我是护士。", [("用户是护士", "occupation", "护士", False, False)]),
    "was-a-teacher": ("我以前是老师。", [("用户以前是老师", "occupation", "老师", True, False)]),
    "not-a-doctor": ("我不是医生。", [("用户不是医生", "occupation", "医生", True, False)]),
    "student-now": ("我现在是大学生。",
                    [("用户是大学生", "occupation", "大学生", False, True)]),
    "studies-major": ("我是读计算机专业的。",
                      [("用户学计算机", "studies", "计算机", False, False)]),
    "professor": ("我是一位教授。", [("用户是一位教授", "occupation", "教授", False, False)]),
    "firefighter": ("我是消防员。", [("用户是消防员", "occupation", "消防员", False, False)]),
    "store-manager": ("我是店长。", [("用户是店长", "occupation", "店长", False, False)]),
    "designer": ("我是一个设计师。", [("用户是一个设计师", "occupation", "设计师", False, False)]),
    "runs-a-gym": ("我是开健身房的。",
                   [("用户开健身房", "occupation", "开健身房", False, False)]),
    "opened-a-shop": ("我开了一家咖啡店。",
                      [("用户开了一家咖啡店", "occupation", "一家咖啡店", False, True)]),
    "vegan": ("我是纯素。", [("用户是纯素", "diet", "纯素", False, False)]),
    "vegetarian-person": ("我是素食者。", [("用户是素食者", "diet", "素食", False, False)]),
    "zodiac": ("我属龙。", [("用户属龙", "zodiac", "龙", False, False)]),
    "from-city-person": ("我是北京人。", [("用户来自北京", "from", "北京", False, False)]),
    "grad-school": ("我在复旦读研。", [("用户在复旦读书", "school", "复旦", False, False)]),
    "undergrad-was": ("我本科是在武汉大学读的。",
                      [("用户在武汉大学读书", "school", "武汉大学", False, False)]),
    "college-was": ("我大学是在南京读的。", [("用户在南京读书", "school", "南京", False, False)]),
    "school-year": ("我读高二。", [("用户在读高二", "school", "高二", False, False)]),
    "kindergarten": ("我女儿读幼儿园。",
                     [("用户的女儿在读幼儿园", "school", "幼儿园", False, False)]),
    "grade": ("我女儿上三年级。", [("用户的女儿上三年级", "school", "三年级", False, True)]),
    "year-now": ("我大二。", [("用户大二", "school", "大二", False, False)]),
    "graduated": ("我大学毕业了。", [("用户已经毕业", "school", "已毕业", False, True)]),
    # health, pets, family, things
    "suffers-from": ("我患有抑郁症。", [("用户有抑郁症", "health", "抑郁症", False, False)]),
    "signed-up-class": ("我报了一个瑜伽班。",
                        [("用户在学瑜伽班", "learning", "瑜伽班", False, False)]),
    "has-sister": ("我有个妹妹。", [("用户有个妹妹", "family", "个妹妹", False, False)]),
    "has-a-cat": ("我有一只猫。", [("用户有一只猫", "has_pet", "一只猫", False, False)]),
    "family-has-cats": ("我家有两只猫。", [("用户有两只猫", "has_pet", "两只猫", False, False)]),
    "keeps-fish": ("我养了一条鱼。", [("用户养了一条鱼", "has_pet", "一条鱼", False, False)]),
    "adopted-dog": ("我收养了一只狗。", [("用户收养了一只狗", "has_pet", "一只狗", False, False)]),
    "bought-parrot": ("我买了一只鹦鹉。",
                      [("用户买了一只鹦鹉", "has_pet", "一只鹦鹉", False, False)]),
    "owns-flat": ("我有一套房子。", [("用户有一套房子", "owns", "一套房子", False, False)]),
    "owns-guitar": ("我有一把吉他。", [("用户有一把吉他", "owns", "一把吉他", False, False)]),
    "no-car": ("我没有车。", [("用户没有车", "owns", "车", True, False)]),
    "no-cat": ("我没有猫。", [("用户没有猫", "has_pet", "猫", True, False)]),
    "no-siblings": ("我没有兄弟姐妹。",
                    [("用户没有兄弟姐妹", "family", "兄弟姐妹", True, False)]),
    "no-dog-kept": ("我没养狗。", [("用户没养狗", "has_pet", "狗", True, False)]),
    # languages, learning, food and drink, quitting, goals
    "speaks-two": ("我会说日语和韩语。", [("用户会说日语", "speaks", "日语", False, False),
                                   ("用户会说韩语", "speaks", "韩语", False, False)]),
    "speaks-cantonese": ("我会讲粤语。", [("用户会讲粤语", "speaks", "粤语", False, False)]),
    "speaks-mandarin": ("我说普通话。", [("用户说普通话", "speaks", "普通话", False, False)]),
    "speaks-chinese": ("我讲中文。", [("用户讲中文", "speaks", "中文", False, False)]),
    "learning-to-paint": ("我在学习画画。", [("用户在学画画", "learning", "画画", False, False)]),
    "learning-lately": ("我最近在学日语。", [("用户在学日语", "learning", "日语", False, True)]),
    "learning-since": ("我去年开始学钢琴。", [("用户在学钢琴", "learning", "钢琴", False, True)]),
    "not-learning": ("我不学钢琴了。", [("用户不学钢琴", "learning", "钢琴", True, False)]),
    "topic-no-longer": ("钢琴我已经不学了。",
                        [("用户不再学钢琴", "learning", "钢琴", True, True)]),
    "topic-allergy-too": ("花生我也过敏。",
                          [("用户对花生过敏", "allergic_to", "花生", False, False)]),
    "drinks-tea": ("我喝茶。", [("用户喝茶", "drinks", "茶", False, False)]),
    "drinks-two": ("我喝咖啡和茶。", [("用户喝咖啡", "drinks", "咖啡", False, False),
                                ("用户喝茶", "drinks", "茶", False, False)]),
    "eats-spicy": ("我吃辣的。", [("用户吃辣", "eats", "辣", False, False)]),
    "no-alcohol-honestly": ("说实话我不喝酒。", [("用户不喝酒", "drinks", "酒", True, False)]),
    "never-again-meat": ("我再也不吃肉了。", [("用户不再吃肉", "eats", "肉", True, True)]),
    "no-more-coffee": ("我已经不喝咖啡了。", [("用户不再喝咖啡", "drinks", "咖啡", True, True)]),
    "rarely-drinks": ("我不太喝酒。", [("用户不喝酒", "drinks", "酒", True, False)]),
    "cannot-eat-spicy": ("我不能吃辣。", [("用户不吃辣", "eats", "辣", True, False)]),
    "cannot-drink-milk": ("我没法喝牛奶。", [("用户不喝牛奶", "drinks", "牛奶", True, False)]),
    "quit-smoking": ("我戒烟了。", [("用户戒了烟", "habit", "烟", True, True)]),
    "quit-drinking": ("我戒酒了。", [("用户戒了酒", "habit", "酒", True, True)]),
    "quit-off": ("我戒掉了酒。", [("用户戒了酒", "habit", "酒", True, True)]),
    "want-to-buy": ("我想要买房。", [("用户想要买房", "goal", "买房", False, False)]),
    "prepare": ("我准备考研。", [("用户准备考研", "goal", "考研", False, False)]),
    "planning": ("我计划去旅游。", [("用户计划去旅游", "goal", "去旅游", False, False)]),
    "hope": ("我希望去冰岛。", [("用户希望去冰岛", "goal", "去冰岛", False, False)]),
    # pastimes and habits
    "go-to-gym": ("我去健身。", [("用户健身", "hobby", "健身", False, False)]),
    "runs-every-day": ("我每天跑步。", [("用户每天跑步", "hobby", "跑步", False, False)]),
    "runs-mornings": ("我每天早上跑步。", [("用户每天早上跑步", "hobby", "跑步", False, False)]),
    "plays-piano": ("我弹钢琴。", [("用户弹钢琴", "hobby", "钢琴", False, False)]),
    "tennis-mondays": ("我每周一打网球。",
                       [("用户每周一打网球", "hobby", "网球", False, False)]),
    "games-at-night": ("我晚上经常打游戏。",
                       [("用户晚上经常打游戏", "hobby", "游戏", False, False)]),
    "with-friends": ("我跟朋友一起打篮球。",
                     [("用户跟朋友一起打篮球", "hobby", "篮球", False, False)]),
    "often-movies": ("我经常看电影。", [("用户经常看电影", "habit", "看电影", False, False)]),
    # names, ages, attributes
    "name": ("我叫李雷。", [("用户叫李雷", "name", "李雷", False, False)]),
    "name-is": ("我的名字是李雷。", [("用户的名字是李雷", "name", "李雷", False, False)]),
    "name-called": ("我名字叫李雷。", [("用户的名字是李雷", "name", "李雷", False, False)]),
    "my-name-called": ("我的名字叫小红。", [("用户的名字是小红", "name", "小红", False, False)]),
    "call-me": ("你可以叫我老王。", [("用户叫老王", "name", "老王", False, True)]),
    "age": ("我25岁。", [("用户25岁", "age", "25", False, False)]),
    "email": ("我的邮箱是a@b.com。", [("用户的邮箱是a@b.com", "email", "a@b.com", False, False)]),
    "phone": ("我的电话是123456。", [("用户的电话是123456", "phone", "123456", False, False)]),
    "birthday-digits": ("我的生日是3月5日。",
                        [("用户的生日是3月5日", "birthday", "3月5日", False, False)]),
    "hobby-is": ("我的爱好是摄影。", [("用户的爱好是摄影", "hobby", "摄影", False, False)]),
    "major-is": ("我的专业是计算机。", [("用户的专业是计算机", "studies", "计算机", False, False)]),
    "wechat": ("我的微信号是abc123。",
               [("用户的微信号是abc123", "wechat", "abc123", False, False)]),
    "dream": ("我的梦想是当画家。", [("用户的目标是当画家", "goal", "当画家", False, False)]),
    "job-is": ("我的工作是老师。", [("用户的工作是老师", "occupation", "老师", False, False)]),
    "hometown-is": ("我的家乡是湖南。", [("用户的家乡是湖南", "from", "湖南", False, False)]),
    # other people
    "mother": ("我妈妈是老师。", [("用户的妈妈是老师", "occupation", "老师", False, False)]),
    "husband-no-my": ("老公是医生。", [("用户的老公是医生", "occupation", "医生", False, False)]),
    "brother": ("我弟弟是医生。", [("用户的弟弟是医生", "occupation", "医生", False, False)]),
    "sister-named": ("我妹妹安娜是护士。",
                     [("用户的妹妹安娜是护士", "occupation", "护士", False, False)]),
    "wife-named": ("我老婆小美是律师。",
                   [("用户的老婆小美是律师", "occupation", "律师", False, False)]),
    "best-friend": ("我最好的朋友是老师。",
                    [("用户的朋友是老师", "occupation", "老师", False, False)]),
    "partner-then-name": ("对象是大学同学，叫陈默。",
                          [("用户的对象叫陈默", "name", "陈默", False, False)]),
    "dating-laughing": ("哈哈哈我脱单了。",
                        [("用户恋爱中", "relationship_status", "恋爱中", False, True)]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), CHINESE_CUES.values(), ids=CHINESE_CUES.keys())
def test_every_chinese_cue_word_reads_as_its_own_fact_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


# fmt: off
CHINESE_BRANCHES: dict[str, tuple[str, list[Flagged]]] = {
    # a content with a comma keeps its flags when it turns full-width
    "pet-named-before": ("我以前养了一只狗，叫旺财。",
                         [("用户以前养了一只狗，叫旺财", "has_pet", "一只狗,叫旺财", True, False)]),
    "pet-named-just": ("我刚养了一只猫，叫咪咪。",
                       [("用户养了一只猫，叫咪咪", "has_pet", "一只猫,叫咪咪", False, True)]),
    # the words before the verb: a change, then a habit word; the past, then a habit word
    "lately-every-day": ("我最近每天跑步。", [("用户每天跑步", "hobby", "跑步", False, True)]),
    "before-every-day": ("我以前每天跑步。", [("用户以前跑步", "hobby", "跑步", True, False)]),
    "too": ("我也喜欢猫。", [("用户喜欢猫", "likes", "猫", False, False)]),
    "every-day-all": ("我每天都跑步。", [("用户每天跑步", "hobby", "跑步", False, False)]),
    "before-not": ("我以前不吃辣。", [("用户不再吃辣", "eats", "辣", True, False)]),
    "no-longer-kept": ("我已经没养狗了。", [("用户不再养狗", "has_pet", "狗", True, True)]),
    "not-play": ("我不玩游戏。", [("用户不玩游戏", "hobby", "游戏", True, False)]),
    "diary-daily": ("我每天写日记。", [("用户每天写日记", "habit", "写日记", False, False)]),
    # wants and names
    "want-lose-weight": ("我想减肥。", [("用户想减肥", "goal", "减肥", False, False)]),
    "long-name": ("我叫欧阳娜娜。", [("用户叫欧阳娜娜", "name", "欧阳娜娜", False, False)]),
    "latin-name": ("我叫Alex。", [("用户叫Alex", "name", "Alex", False, False)]),
    "friend-long-name": ("我朋友欧阳娜娜是老师。",
                         [("用户的朋友欧阳娜娜是老师", "occupation", "老师", False, False)]),
    # job changes, health, partners, schools
    "changed-to": ("我换到腾讯工作了。", [("用户在腾讯工作", "employer", "腾讯", False, True)]),
    "went-to-work-at": ("我去了字节工作。", [("用户在字节工作", "employer", "字节", False, True)]),
    "ocd": ("我有强迫症。", [("用户有强迫症", "health", "强迫症", False, False)]),
    "has-boyfriend": ("我有一个男朋友。",
                      [("用户有一个男朋友", "relationship_status", "恋爱中", False, True)]),
    "graduated-fudan": ("我毕业于复旦大学。",
                        [("用户毕业于复旦大学", "school", "毕业于复旦大学", False, True)]),
    # a pet, then its name; a relative, then 她
    "cat-then-name": ("我养了只猫，猫叫团子。",
                      [("用户养了只猫", "has_pet", "只猫", False, False),
                       ("用户的猫叫团子", "has_pet", "猫团子", False, False)]),
    "dog-then-names": ("我有只狗，狗叫旺财和来福。",
                       [("用户有只狗", "has_pet", "只狗", False, False),
                        ("用户的狗叫旺财和来福", "has_pet", "狗旺财和来福", False, False)]),
    "sister-then-she": ("我姐姐是医生，她住在上海。",
                        [("用户的姐姐是医生", "occupation", "医生", False, False),
                         ("用户的姐姐住在上海", "lives_in", "上海", False, False)]),
    "girlfriend-then-she": ("我女朋友叫小红，她是护士。",
                            [("用户的女朋友叫小红", "name", "小红", False, False),
                             ("用户的女朋友小红是护士", "occupation", "护士", False, False)]),
    # a plain statement no verb reads, kept in the user's words
    "note-phone": ("我iPhone用了五年了。",
                   [("用户iPhone用了五年", "note", "iPhone用了五年", False, False)]),
    "note-followers": ("我B站粉丝有一万了。",
                       [("用户B站粉丝有一万", "note", "B站粉丝有一万", False, False)]),
    "note-python": ("我Python写得很好。",
                    [("用户Python写得很好", "note", "Python写得很好", False, False)]),
}
# fmt: on


@pytest.mark.parametrize(
    ("text", "expected"), CHINESE_BRANCHES.values(), ids=CHINESE_BRANCHES.keys()
)
def test_every_chinese_branch_reads_as_its_own_fact_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "我在路上。",  # on the way: no place
        "我喜欢这个。",  # a pointer
        "我喜欢那个。",
        "我喜欢它。",
        "我很喜欢您的节目。",  # said to the listener
        "我想去。",  # a wish with no object
        "我想问一下。",  # a request
        "我想了解一下。",
        "我改主意了。",  # a change of mind is no new habit
    ],
)
def test_a_chinese_pointer_request_or_change_of_mind_gives_no_fact(text: str) -> None:
    assert extract_facts(text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我现在在上海。", [("用户住在上海", "lives_in", "上海", False, True)]),
        ("我在上海住。", [("用户住在上海", "lives_in", "上海", False, False)]),
        ("我在上海租房子住。", [("用户住在上海", "lives_in", "上海", False, False)]),
        ("我在上饶。", [("用户住在上饶", "lives_in", "上饶", False, False)]),
        ("我在山上。", []),
        ("我在公司上班。", [("用户在公司上班", "employer", "公司", False, False)]),
    ],
)
def test_a_city_whose_name_has_shang_is_a_place_and_shang_ban_still_work(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


# fmt: off
CHINESE_SUBJECTS: dict[str, tuple[str, list[Flagged]]] = {
    # the object said first, then 我 and the verb
    "topic-drink": ("咖啡我每天喝。", [("用户每天喝咖啡", "drinks", "咖啡", False, False)]),
    "topic-play": ("篮球我也打。", [("用户打篮球", "hobby", "篮球", False, False)]),
    "topic-weekly": ("羽毛球我每周打。",
                     [("用户每周打羽毛球", "hobby", "羽毛球", False, False)]),
    "topic-intolerant": ("牛奶我也不耐受。",
                         [("用户对牛奶过敏", "allergic_to", "牛奶", False, False)]),
    "topic-allergic": ("芒果我过敏。", [("用户对芒果过敏", "allergic_to", "芒果", False, False)]),
    "topic-learning": ("日语我在学。", [("用户在学日语", "learning", "日语", False, False)]),
    # who the user lives with, the family home, time words before 我
    "with-my-husband": ("我和我老公都住在北京。",
                        [("用户住在北京", "lives_in", "北京", False, False)]),
    "with-wife": ("我跟老婆住在杭州。", [("用户住在杭州", "lives_in", "杭州", False, False)]),
    "with-roommate": ("我跟室友一起住在深圳。",
                      [("用户住在深圳", "lives_in", "深圳", False, False)]),
    "with-friends-like": ("我和朋友都喜欢爬山。",
                          [("用户喜欢爬山", "likes", "爬山", False, False)]),
    "home-in": ("我家在成都。", [("用户住在成都", "lives_in", "成都", False, False)]),
    "family-has-dog": ("我家有一只狗。", [("用户有一只狗", "has_pet", "一只狗", False, False)]),
    "our-family-keeps": ("我们家养了两只猫。",
                         [("用户养了两只猫", "has_pet", "两只猫", False, False)]),
    "family-husband": ("我家老公是医生。",
                       [("用户的老公是医生", "occupation", "医生", False, False)]),
    "family-son": ("我家儿子上三年级。",
                   [("用户的儿子上三年级", "school", "三年级", False, True)]),
    "my-friend": ("我的朋友是老师。", [("用户的朋友是老师", "occupation", "老师", False, False)]),
    "myself-opened": ("我自己开了一家店。",
                      [("用户开了一家店", "occupation", "一家店", False, True)]),
    "mornings-first": ("每天早上我都跑步。",
                       [("用户每天早上跑步", "hobby", "跑步", False, False)]),
    "last-month-first": ("上个月我搬到了北京。",
                         [("用户住在北京", "lives_in", "北京", False, True)]),
    "these-days-first": ("这段时间我在学日语。",
                         [("用户这段时间在学日语", "learning", "日语", False, False)]),
    "hello-first": ("你好，我叫小明。", [("用户叫小明", "name", "小明", False, False)]),
    "implied-hobby": ("爱好是摄影。", [("用户的爱好是摄影", "hobby", "摄影", False, False)]),
    "then-no-subject": ("我住在北京，在腾讯工作。",
                        [("用户住在北京", "lives_in", "北京", False, False),
                         ("用户在腾讯工作", "employer", "腾讯", False, False)]),
    "husband-then-he": ("我老公是医生，他在协和医院上班。",
                        [("用户的老公是医生", "occupation", "医生", False, False),
                         ("用户的老公在协和医院上班", "employer", "协和医院", False, False)]),
    # 是 + what the user is
    "phd-student": ("我是博士生。", [("用户是博士生", "occupation", "博士生", False, False)]),
    "high-schooler": ("我是高中生。", [("用户是高中生", "occupation", "高中生", False, False)]),
    "son-middle-school": ("我儿子是初中生。",
                          [("用户的儿子是初中生", "occupation", "初中生", False, False)]),
    "daughter-primary": ("我女儿是小学生。",
                         [("用户的女儿是小学生", "occupation", "小学生", False, False)]),
    "overseas-student": ("我是留学生。", [("用户是留学生", "occupation", "留学生", False, False)]),
    "now-a-nurse": ("我现在是护士。", [("用户是护士", "occupation", "护士", False, True)]),
    "now-a-lawyer": ("我现在是一名律师。", [("用户是一名律师", "occupation", "律师", False, True)]),
    "lately-opened": ("我最近开了一家花店。",
                      [("用户开了一家花店", "occupation", "一家花店", False, True)]),
    "from-region": ("我是内蒙古人。", [("用户来自内蒙古", "from", "内蒙古", False, False)]),
    "from-province": ("我是黑龙江省人。", [("用户来自黑龙江省", "from", "黑龙江省", False, False)]),
    "from-guangdong": ("我是广东人。", [("用户来自广东", "from", "广东", False, False)]),
    "studied-medicine": ("我是学医的。", [("用户学医", "studies", "医", False, False)]),
    "studied-law": ("我是读法律的。", [("用户学法律", "studies", "法律", False, False)]),
    "police": ("我是警察。", [("用户是警察", "occupation", "警察", False, False)]),
    "captain": ("我是船长。", [("用户是船长", "occupation", "船长", False, False)]),
    "diplomat": ("我是外交官。", [("用户是外交官", "occupation", "外交官", False, False)]),
    "sailor": ("我是水手。", [("用户是水手", "occupation", "水手", False, False)]),
    "electrician": ("我是电工。", [("用户是电工", "occupation", "电工", False, False)]),
}
# fmt: on


@pytest.mark.parametrize(
    ("text", "expected"), CHINESE_SUBJECTS.values(), ids=CHINESE_SUBJECTS.keys()
)
def test_every_chinese_subject_and_what_it_is_reads_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我想换工作。", [("用户想换工作", "goal", "换工作", False, False)]),
        ("我在找工作。", []),
        ("我在换工作。", []),
        (
            "我换了工作，去了宁德时代。",
            [("用户在宁德时代工作", "employer", "宁德时代", False, True)],
        ),
        ("我找到新工作了，进了华为。", [("用户在华为工作", "employer", "华为", False, True)]),
        ("我跳槽了，去了宁德时代。", [("用户在宁德时代工作", "employer", "宁德时代", False, True)]),
        (
            "我上个月跳槽了，加入了字节跳动。",
            [("用户在字节跳动工作", "employer", "字节跳动", False, True)],
        ),
        ("我跳槽到华为工作。", [("用户在华为工作", "employer", "华为", False, True)]),
    ],
)
def test_a_job_looked_for_is_no_employer_and_the_one_joined_after_a_change_is(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


def test_a_place_gone_to_in_a_message_not_about_work_is_no_employer() -> None:
    assert [f for f in extract_facts("我上周去了北京。") if f.predicate == "employer"] == []


# fmt: off
CHINESE_TASTES: dict[str, tuple[str, list[Flagged]]] = {
    "resent": ("我反感抽烟。", [("用户反感抽烟", "dislikes", "抽烟", False, False)]),
    "rather-stay": ("我宁愿在家。", [("用户宁愿在家", "prefers", "在家", False, False)]),
    "rather-tea": ("我宁愿喝茶。", [("用户宁愿喝茶", "prefers", "喝茶", False, False)]),
    "not-love": ("我不爱吃香菜。", [("用户不爱吃香菜", "dislikes", "吃香菜", False, False)]),
    "like-most": ("我最喜欢蓝色。", [("用户最喜欢蓝色", "likes", "蓝色", False, False)]),
    "cherish": ("我喜爱古典音乐。",
                [("用户喜爱古典音乐", "likes", "古典音乐", False, False)]),
    "super-love": ("我超爱火锅。", [("用户超爱火锅", "likes", "火锅", False, False)]),
    "disliked-before": ("我以前不喜欢猫。",
                        [("用户以前不喜欢猫", "dislikes", "猫", True, False)]),
    "not-afraid": ("我不怕蛇。", [("用户不怕蛇", "afraid_of", "蛇", True, False)]),
    "cannot-speak": ("我不会说日语。", [("用户不说日语", "speaks", "日语", True, False)]),
    "speaks-english": ("我会说英文。", [("用户会说英文", "speaks", "英文", False, False)]),
    "cannot-speak-cantonese": ("我不会讲粤语。",
                               [("用户不讲粤语", "speaks", "粤语", True, False)]),
    "spoke-before": ("我以前会说法语。", [("用户以前说法语", "speaks", "法语", True, False)]),
    "keeps-no-cat": ("我不养猫。", [("用户没养猫", "has_pet", "猫", True, False)]),
    "had-a-car": ("我以前有一辆车。", [("用户以前有一辆车", "owns", "一辆车", True, False)]),
    "quit-coffee": ("我戒了咖啡。", [("用户戒了咖啡", "habit", "咖啡", True, True)]),
    "quit-sweets": ("我戒掉了甜食。", [("用户戒了甜食", "habit", "甜食", True, True)]),
    "already-quit": ("我已经戒烟了。", [("用户戒了烟", "habit", "烟", True, True)]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), CHINESE_TASTES.values(), ids=CHINESE_TASTES.keys())
def test_every_chinese_taste_language_and_thing_given_up_reads_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


# fmt: off
CHINESE_MORE: dict[str, tuple[str, list[Flagged]]] = {
    # a plain statement kept in the user's words: 3 Chinese characters are enough, the value
    # is cut at 30 characters, 我的 and 我 inside it become 用户
    "note-three": ("我iPhone用了3年。",
                   [("用户iPhone用了3年", "note", "iPhone用了3年", False, False)]),
    "note-long": ("我iPhone用了3年了从来没坏过电池也还很好用真的是非常耐用的一部手机推荐大家买。",
                  [("用户iPhone用了3年了从来没坏过电池也还很好用真的是非常耐用的一部手机推荐大家买",
                    "note", "iPhone用了3年了从来没坏过电池也还很好用真的是非常耐用",
                    False, False)]),
    "note-mine": ("我iPhone是我的第一部手机。",
                  [("用户iPhone是用户的第一部手机", "note", "iPhone是用户的第一部手机",
                    False, False)]),
    # call me, after a filler
    "filler-call-me": ("其实你可以叫我老王。", [("用户叫老王", "name", "老王", False, True)]),
    "filler-just-call-me": ("对了，你就叫我老王吧。",
                            [("用户叫老王", "name", "老王", False, True)]),
    # 她 is the relative met before, not the user who spoke between
    "she-after-me": ("我姐姐是医生，我是护士，她住在上海。",
                     [("用户的姐姐是医生", "occupation", "医生", False, False),
                      ("用户是护士", "occupation", "护士", False, False),
                      ("用户的姐姐住在上海", "lives_in", "上海", False, False)]),
    "relative-then-name": ("我姐姐是护士，叫安娜。",
                           [("用户的姐姐是护士", "occupation", "护士", False, False),
                            ("用户的姐姐叫安娜", "name", "安娜", False, False)]),
    "topic-one-char": ("茶我每天喝。", [("用户每天喝茶", "drinks", "茶", False, False)]),
    "timed-then-verb": ("周末我一般出去玩。",
                        [("用户周末一般出去玩", "habit", "出去玩", False, False)]),
    "runs-a-restaurant": ("我是开餐馆的。", [("用户开餐馆", "occupation", "开餐馆", False, False)]),
    "chronic-illness": ("我有慢性病。", [("用户有慢性病", "health", "慢性病", False, False)]),
    "skin-disease": ("我有皮肤病。", [("用户有皮肤病", "health", "皮肤病", False, False)]),
    "no-chronic-illness": ("我没有慢性病。",
                           [("用户没有慢性病", "health", "慢性病", True, False)]),
    # an illness not had says so (it said 用户有糖尿病)
    "no-diabetes": ("我没有糖尿病。", [("用户没有糖尿病", "health", "糖尿病", True, False)]),
    "had-high-blood-pressure": ("我以前有高血压。",
                                [("用户以前有高血压", "health", "高血压", True, False)]),
    "no-more-high-blood-pressure": ("我已经没有高血压了。",
                                    [("用户不再有高血压", "health", "高血压", True, True)]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), CHINESE_MORE.values(), ids=CHINESE_MORE.keys())
def test_every_chinese_note_name_pronoun_and_illness_reads_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "我妹妹iPhone用了五年。",  # a plain statement about someone else is no note
        "iPhone用了五年。",  # nor one without a subject
        "我可能搬到上海。",  # a hedge
        "我住在哪里",  # a question without its mark
        "我住在北京？",  # a question
        "我在你家。",  # about the listener
        "我朋友的妈妈是老师。",  # a friend's mother: not the user's
        "她是医生。",  # 她 with nobody met before
    ],
)
def test_a_chinese_hedge_question_or_someone_elses_fact_gives_nothing(text: str) -> None:
    assert extract_facts(text) == []


def test_a_chinese_note_says_user_for_every_i_in_it() -> None:
    assert flagged_facts_of("我iPhone是我自己买的。") == [
        ("用户iPhone是用户自己买", "note", "iPhone是用户自己买", False, False)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Restoring a 1967 Mini Cooper in my garage.",
            [
                (
                    "User is restoring a 1967 Mini Cooper in their garage",
                    "be",
                    "restoring a 1967 Mini Cooper in their garage",
                )
            ],
        ),
        (
            "Knitting scarves for the whole family this winter.",
            [
                (
                    "User is knitting scarves for the whole family this winter",
                    "be",
                    "knitting scarves for the whole family this winter",
                )
            ],
        ),
    ],
)
def test_a_sentence_that_opens_with_what_the_user_is_doing_keeps_it_in_lower_case(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 我的猫叫X: the user's pet, by name; an age said next is the pet's.
        ("我的猫叫团子。", [("用户的猫叫团子", "has_pet", "猫团子", False, False)]),
        (
            "我的狗狗叫豆豆，今年三岁了。",
            [("用户的狗狗叫豆豆", "has_pet", "狗狗豆豆", False, False)],
        ),
        (
            "我有一只狗叫豆豆，今年三岁了。",
            [("用户有一只狗叫豆豆", "has_pet", "一只狗叫豆豆", False, False)],
        ),
        (
            "我养了两只猫，住在上海。",
            [
                ("用户养了两只猫", "has_pet", "两只猫", False, False),
                ("用户住在上海", "lives_in", "上海", False, False),
            ],
        ),
        ("我的车叫小白。", []),
        # 跳槽到/换工作去了: the new employer, with or without 工作 after it.
        ("我跳槽到了华为工作。", [("用户在华为工作", "employer", "华为", False, True)]),
        ("我跳槽到华为了。", [("用户在华为工作", "employer", "华为", False, True)]),
        ("我换工作去了字节跳动。", [("用户在字节跳动工作", "employer", "字节跳动", False, True)]),
        (
            "我跳槽到华为当工程师了。",
            [
                ("用户在华为工作", "employer", "华为", False, True),
                ("用户做工程师", "occupation", "工程师", False, True),
            ],
        ),
        # What did not change replaces nothing; 不再 still does.
        ("我没有跳槽到华为。", [("用户不在华为工作", "employer", "华为", True, False)]),
        ("我不再喜欢咖啡了。", [("用户不再喜欢咖啡", "likes", "咖啡", True, True)]),
    ],
)
def test_a_chinese_pet_by_name_a_move_to_a_new_employer_and_what_did_not_change(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # 不讨厌 is no dislike.
        ("我不讨厌下雨。", [("用户不讨厌下雨", "dislikes", "下雨", True, False)]),
        ("我讨厌下雨。", [("用户讨厌下雨", "dislikes", "下雨", False, False)]),
        ("我不喜欢下雨。", [("用户不喜欢下雨", "dislikes", "下雨", False, False)]),
        # 学过: learned once, not learning now.
        ("我学过画画。", [("用户以前学过画画", "learning", "画画", True, False)]),
        ("我在学钢琴。", [("用户在学钢琴", "learning", "钢琴", False, False)]),
        # 老家在X: the place, without 在.
        ("我老家在湖南。", [("用户的家乡是湖南", "from", "湖南", False, False)]),
        # How long is not part of the employer; 干 is working; 麦当劳 is one place.
        ("我在字节干了三年。", [("用户在字节工作", "employer", "字节", False, False)]),
        ("我在华为工作了五年多。", [("用户在华为工作", "employer", "华为", False, False)]),
        ("我在麦当劳打工。", [("用户在麦当劳打工", "employer", "麦当劳", False, False)]),
        (
            "我在麦当劳当店长。",
            [
                ("用户在麦当劳工作", "employer", "麦当劳", False, False),
                ("用户做店长", "occupation", "店长", False, False),
            ],
        ),
        # 在学校 is a place, not 在学 (learning).
        (
            "我在学校当老师。",
            [
                ("用户在学校工作", "employer", "学校", False, False),
                ("用户做老师", "occupation", "老师", False, False),
            ],
        ),
    ],
)
def test_a_chinese_dislike_denied_a_skill_learned_once_a_hometown_and_a_workplace(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My hobby is painting.", [("User's hobby is painting", "hobby", "painting")]),
        (
            "My hobbies are chess and sailing.",
            [
                ("User's hobby is chess", "hobby", "chess"),
                ("User's hobby is sailing", "hobby", "sailing"),
            ],
        ),
        (
            "My goal is running a marathon.",
            [("User's goal is running a marathon", "goal", "running a marathon")],
        ),
        ("My birthday is coming up.", []),
        ("My job is tutoring.", []),
        ("I was born in 1990.", [("User was born in 1990", "birthday", "1990")]),
        (
            "I was born on 3 May 1990.",
            [("User's birthday is 3 May 1990", "birthday", "3 May 1990")],
        ),
    ],
)
def test_an_activity_as_a_hobby_one_hobby_at_a_time_and_a_year_of_birth(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # What was not so then is no earlier state.
        ("I was never married.", [("User was not married", "relationship_status", "married")]),
        ("I didn't have a car.", [("User did not have a car", "owns", "a car")]),
        ("I used to live in Rome.", [("User previously lived in Rome", "lives_in", "Rome")]),
        # One year, no empty key, the "to" of a goal.
        ("My daughter is 1.", [("User's daughter is 1 year old", "age", "1")]),
        ("My favorite is pizza.", [("User's favorite is pizza", "favorite", "pizza")]),
        (
            "My goal is to run a marathon.",
            [("User's goal is to run a marathon", "goal", "run a marathon")],
        ),
    ],
)
def test_a_denied_past_an_age_of_one_a_bare_favorite_and_a_goal_read_as_said(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


# english, clauses and lexicon: the subject, the clauses, the verb forms


@pytest.mark.parametrize(
    ("verb", "form"),
    [
        ("live", "lives"),
        ("pass", "passes"),
        ("wash", "washes"),
        ("watch", "watches"),
        ("fix", "fixes"),
        ("buzz", "buzzes"),
        ("echo", "echoes"),
        ("study", "studies"),
        ("play", "plays"),
        ("be", "is"),
        ("have lived here", "has lived here"),
        ("get used to", "gets used to"),
        ("grew up", "grew up"),
    ],
)
def test_a_verb_said_about_the_user_takes_its_third_person_form(verb: str, form: str) -> None:
    assert third_person(verb) == form


@pytest.mark.parametrize(
    ("verb", "form"),
    [
        ("work", "worked"),
        ("live", "lived"),
        ("study", "studied"),
        ("play", "played"),
        ("go", "went"),
        ("take", "took"),
    ],
)
def test_a_verb_said_about_the_past_takes_its_past_form(verb: str, form: str) -> None:
    assert past(verb) == form


@pytest.mark.parametrize(
    ("verb", "form"),
    [
        ("tie", "tying"),
        ("hike", "hiking"),
        ("use", "using"),
        ("see", "seeing"),
        ("dye", "dyeing"),
        ("hoe", "hoeing"),
        ("be", "being"),
        ("run", "running"),
        ("swim", "swimming"),
        ("stop", "stopping"),
        ("itch", "itching"),
        ("fix", "fixing"),
        ("row", "rowing"),
        ("play", "playing"),
        ("open", "opening"),
        ("read", "reading"),
    ],
)
def test_a_verb_takes_its_ing_form(verb: str, form: str) -> None:
    assert gerund(verb) == form


@pytest.mark.parametrize(
    ("word", "base"),
    [
        ("went", "go"),
        ("Went", "go"),
        ("am", "be"),
        ("'m", "be"),
        ("'ve", "have"),
        ("hike", "hike"),
        ("studies", "study"),
        ("carries", "carry"),
        ("tries", "try"),
        ("watches", "watch"),
        ("fixes", "fix"),
        ("relaxes", "relax"),
        ("dances", "dance"),
        ("hikes", "hike"),
        ("LIVES", "live"),
        ("plays", "play"),
        ("boss", "boss"),
        ("studied", "study"),
        ("carried", "carry"),
        ("cried", "cry"),
        ("spied", "spy"),
        ("stopped", "stop"),
        ("swapped", "swap"),
        ("called", "call"),
        ("filled", "fill"),
        ("kissed", "kiss"),
        ("buzzed", "buzz"),
        ("hiked", "hike"),
        ("commuted", "commute"),
        ("landed", "land"),
        ("added", "add"),  # it was "ad": a doubled letter is undone after four letters only
        ("jogged", "jog"),
        ("played", "play"),
        ("hiking", "hike"),
        ("running", "run"),
        ("jogging", "jog"),
        ("singing", "sing"),
        ("being", "be"),
        ("skiing", "ski"),
        ("winking", "wink"),
        ("ring", "ring"),
        ("table", "table"),
    ],
)
def test_a_verb_form_leads_back_to_its_base_form(word: str, base: str) -> None:
    assert lemma(word) == base


ClauseRow = tuple[str, bool, str]  # text, question, the clause before it in the sentence


# fmt: off
CLAUSES: dict[str, tuple[str, list[ClauseRow]]] = {
    # sentences end at . ! ? ; a line break, a dash, an emoji; a message may start with a break
    "two-sentences": ("I'm a nurse. Are you a doctor?",
                      [("I am a nurse", False, ""), ("Are you a doctor", True, "")]),
    "semicolon": ("I love hiking; I hate running",
                  [("I love hiking", False, ""), ("I hate running", False, "")]),
    "no-space-after-bang": ("I love tea!I love coffee",
                            [("I love tea", False, ""), ("I love coffee", False, "")]),
    "dash": ("I'm a nurse - I work nights",
             [("I am a nurse", False, ""), ("I work nights", False, "")]),
    "emoji": ("I'm a nurse 🙂 I work nights",
              [("I am a nurse 🙂", False, ""), ("I work nights", False, "")]),
    "leading-line-break": ("\nI moved to Leeds\nI love it",
                           [("I moved to Leeds", False, ""), ("I love it", False, "")]),
    # a question: a question mark, a question's first words, 吗
    "question-mark-only": ("I'm a nurse. Any tips for night shifts?",
                           [("I am a nurse", False, ""), ("Any tips for night shifts", True, "")]),
    "asks-without-mark": ("do you like jazz", [("do you like jazz", True, "")]),
    "ma": ("我喜欢猫吗。", [("我喜欢猫吗", True, "")]),
    "ma-unpunctuated": ("我喜欢猫吗", [("我喜欢猫吗", True, "")]),
    "chinese-statement": ("我喜欢猫。", [("我喜欢猫", False, "")]),
    "chinese-comma": ("我是护士，我住在北京",
                      [("我是护士", False, ""), ("我住在北京", False, "我是护士")]),
    # irony drops its sentence and only that one
    "irony-then-fact": ("Sure, I love Mondays. I'm a nurse.", [("I am a nurse", False, "")]),
    # clauses of one sentence: each remembers the one before it
    "and-but": ("I'm a nurse and I live in Leeds, but I hate night shifts",
                [("I am a nurse", False, ""), ("I live in Leeds", False, "I am a nurse"),
                 ("I hate night shifts", False, "I live in Leeds")]),
    "but-bare-verb": ("I'm a nurse, but love it.",
                      [("I am a nurse", False, ""), ("love it", False, "I am a nurse")]),
    "brackets-stripped": ("(I love tea)", [("I love tea", False, "")]),
    "final-x-kept": ("My favourite film is Malcolm X.",
                     [("My favourite film is Malcolm X", False, "")]),
    # run-on sentences split before an "I" that starts a clause of its own
    "run-on": ("i moved to berlin i work at siemens",
               [("I moved to berlin", False, ""),
                ("I work at siemens", False, "I moved to berlin")]),
    "run-on-after-think": ("i love my job I think",
                           [("I love my job", False, ""), ("I think", False, "I love my job")]),
    "joined-i": ("the music I like is jazz", [("the music I like is jazz", False, "")]),
    "capitalised-before-i": ("I love Leeds I live there now",
                             [("I love Leeds I live there now", False, "")]),
    "number-before-i": ("i moved here in 2019 I love it",
                        [("I moved here in 2019 I love it", False, "")]),
    "no-verb-before-i": ("honestly tbh I love it", [("honestly tbh I love it", False, "")]),
    "one-word-before-i": ("tbh I love it", [("tbh I love it", False, "")]),
    # a routine: the verbs after its colon are the user's
    "routine": ("My routine is pretty fixed: swim at 6:30, then work 9 to 5.",
                [("My routine is pretty fixed", False, ""),
                 ("I swim at 6:30", False, "My routine is pretty fixed"),
                 ("I work 9 to 5", False, "I swim at 6:30")]),
    "routine-but-then": ("My weekends are lazy: sleep in, but then walk the dog.",
                         [("My weekends are lazy", False, ""),
                          ("I sleep in", False, "My weekends are lazy"),
                          ("I walk the dog", False, "I sleep in")]),
    "routine-nouns": ("My day: coffee at 7, then emails.",
                      [("My day", False, ""), ("coffee at 7", False, "My day"),
                       ("emails", False, "coffee at 7")]),
    # emphasis put back in the plain order
    "cleft-when-comma": ("What I do every Sunday is a parkrun, rain or shine.",
                         [("I do a parkrun every Sunday, rain or shine", False, "")]),
    "cleft-comma": ("What I love most is sailing, especially in summer.",
                    [("I love sailing, especially in summer", False, "")]),
    "cleft-when": ("What I do on weekends is climbing",
                   [("I do climbing on weekends", False, "")]),
    "openers": ("Ok, well, I'm a nurse.", [("I am a nurse", False, "")]),
    "opener-so": ("ok so I moved to Leeds", [("I moved to Leeds", False, "")]),
    "where-i-live": ("Bristol is where I live now.", [("I live in Bristol now", False, "")]),
    "my-thing": ("Cricket's more my thing now.", [("I like Cricket now", False, "")]),
    "age-now": ("32 now", [("I am 32 now", False, "")]),
    "the-name": ("The name's Bond", [("my name is Bond", False, "")]),
    "favourite-colon": ("My favourite band: Muse", [("my favourite band is Muse", False, "")]),
    "hate-colon": ("Hate: mornings", [("I hate mornings", False, "")]),
    "is-home": ("Rome is home", [("I live in Rome", False, "")]),
    "home-is": ("Home is Leeds", [("I live in Leeds", False, "")]),
    "is-my": ("Leeds is my favourite city", [("my favourite city is Leeds", False, "")]),
    "list-colon": ("Foods I love: ramen, pierogi", [("I love ramen, pierogi", False, "")]),
    "number-colon": ("Number: 0770 900", [("my Number is 0770 900", False, "")]),
    # one spelling: width, apostrophes, contractions, quotations, spaces
    "full-width": ("I ＬＯＶＥ tea", [("I LOVE tea", False, "")]),
    "curly-apostrophe": ("I’m a nurse", [("I am a nurse", False, "")]),
    "quotation-out": ("I can't stand \"Friends\" at all",
                      [("I can not stand … at all", False, "")]),
    "single-quotes-out": ("I said 'no way' to him", [("I said … to him", False, "")]),
    "im": ("im a nurse", [("I am a nurse", False, "")]),
    "an-im": ("Send me an im later", [("Send me an im later", False, "")]),
    "ive": ("ive been to Paris", [("I have been to Paris", False, "")]),
    "id": ("I'd love a dog", [("I would love a dog", False, "")]),
    "ill": ("I'll move to Rome", [("I will move to Rome", False, "")]),
    "were": ("we're vegans", [("we are vegans", False, "")]),
    "weve": ("we've got two cats", [("we have got two cats", False, "")]),
    "cant": ("I cant swim", [("I can not swim", False, "")]),
    "wont": ("I won't eat meat", [("I will not eat meat", False, "")]),
    "didnt": ("I didnt go", [("I did not go", False, "")]),
    "hes": ("he's a chef", [("he is a chef", False, "")]),
    "names": ("my name's Ada", [("my name is Ada", False, "")]),
    "gluten-free": ("I'm gluten free", [("I am gluten-free", False, "")]),
    "plant-based": ("I eat plant based", [("I eat plant-based", False, "")]),
    "relative-is": ("My husband's allergic to dogs",
                    [("My husband is allergic to dogs", False, "")]),
    "relative-owns": ("My son's dog is cute", [("My son's dog is cute", False, "")]),
    "relative-has-been": ("my mum's been ill", [("my mum has been ill", False, "")]),
    "as-well-as": ("I love tea as well as coffee", [("I love tea and coffee", False, "")]),
    "spaces": ("I   love    tea", [("I love tea", False, "")]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), CLAUSES.values(), ids=CLAUSES.keys())
def test_a_message_is_cut_into_clauses_in_one_spelling(
    text: str, expected: list[ClauseRow]
) -> None:
    assert [(c.text, c.question, c.follows) for c in clauses(text)] == expected


# fmt: off
ENGLISH_SUBJECTS: dict[str, tuple[str, list[Flagged]]] = {
    # "my" + a relative, after adjectives; "'s" is "is" when a state, an age or a job follows
    "daddy": ("My daddy is a chef.",
              [("User's daddy is a chef", "occupation", "chef", False, False)]),
    "little-sister-studying": ("My little sister's studying law.",
                               [("User's sister is studying law", "studies", "law", False, False)]),
    "older-brother-age": ("My older brother's 30.",
                          [("User's brother is 30 years old", "age", "30", False, False)]),
    "older-brother-married": ("My older brother's married.",
                              [("User's brother is married", "relationship_status", "married",
                                False, False)]),
    "younger-sister-diet": ("My younger sister's vegan.",
                            [("User's sister is vegan", "diet", "vegan", False, True)]),
    "big-brother-nationality": ("My big brother's Italian.",
                                [("User's brother is Italian", "nationality", "Italian",
                                  False, False)]),
    "little-brother-job": ("My little brother's a nurse.",
                           [("User's brother is a nurse", "occupation", "nurse", False, False)]),
    "older-sister-retired": ("My older sister's retired.",
                             [("User's sister is retired", "occupation", "retired", False, True)]),
    "year-old": ("My 5-year-old son loves dinosaurs.",
                 [("User's son loves dinosaurs", "likes", "dinosaurs", False, False)]),
    "little-sister": ("My little sister lives in Paris.",
                      [("User's sister lives in Paris", "lives_in", "Paris", False, False)]),
    # in-laws however they are spelt
    "in-law-hyphens": ("My sister-in-law is a nurse.",
                       [("User's sister-in-law is a nurse", "occupation", "nurse", False, False)]),
    "in-law-space": ("My sister in-law is a nurse.",
                     [("User's sister-in-law is a nurse", "occupation", "nurse", False, False)]),
    "in-law-stray-space": ("My sister -in-law is a nurse.",
                           [("User's sister-in-law is a nurse", "occupation", "nurse",
                             False, False)]),
    "in-law-named": ("My brother-in-law Tom lives in York.",
                     [("User's brother-in-law Tom lives in York", "lives_in", "York",
                       False, False)]),
    # a relative's name: after a comma, "named", "called", or in lower case before a verb
    "name-commas": ("My brother, Tom, is a chef.",
                    [("User's brother Tom is a chef", "occupation", "chef", False, False)]),
    "named": ("My brother named Tom is a chef.",
              [("User's brother Tom is a chef", "occupation", "chef", False, False)]),
    "called": ("My brother called Tom lives in York.",
               [("User's brother Tom lives in York", "lives_in", "York", False, False)]),
    "lower-case-name-is": ("my friend raj is a doctor",
                           [("User's friend Raj is a doctor", "occupation", "doctor",
                             False, False)]),
    "lower-case-name-verb": ("my friend raj lives in Delhi",
                             [("User's friend Raj lives in Delhi", "lives_in", "Delhi",
                               False, False)]),
    "lower-case-name-adverb": ("my friend raj really loves cricket",
                               [("User's friend Raj loves cricket", "likes", "cricket",
                                 False, False)]),
    "name-kept-as-written": ("My friend DeShawn lives in Atlanta.",
                             [("User's friend DeShawn lives in Atlanta", "lives_in", "Atlanta",
                               False, False)]),
    "title-case-is-no-name": ("My Brother Is A Chef.",
                              [("User's brother is a Chef", "occupation", "Chef", False, False)]),
    # a person met earlier in the message, after a time phrase and a comma
    "named-later": ("My sister Ana lives in Leeds. On Sundays, Ana plays tennis.",
                    [("User's sister Ana lives in Leeds", "lives_in", "Leeds", False, False),
                     ("User's sister Ana plays tennis on Sundays", "hobby", "tennis",
                      False, False)]),
    # what comes before "I": fillers and time phrases, kept in the content
    "filler-comma": ("Honestly, I love tea.", [("User loves tea", "likes", "tea", False, False)]),
    "filler": ("lol I love tea", [("User loves tea", "likes", "tea", False, False)]),
    "filler-then-at": ("Honestly, at this point I love Leeds.",
                       [("User loves Leeds at this point", "likes", "Leeds", False, False)]),
    "filler-at-no-comma": ("Honestly at the moment I live in Leeds.",
                           [("User lives in Leeds at the moment", "lives_in", "Leeds",
                             False, False)]),
    "opener-for": ("Btw, for breakfast I eat oats.",
                   [("User eats oats for breakfast", "eats", "oats", False, False)]),
    "opener-on": ("On Sundays I play football.",
                  [("User plays football on Sundays", "hobby", "football", False, False)]),
    "opener-at-a-name": ("At SpaceX I work on rockets.",
                         [("User works on rockets at SpaceX", "works_on", "rockets",
                           False, False)]),
    "opener-every": ("Every morning I drink coffee.",
                     [("User drinks coffee every morning", "drinks", "coffee", False, False)]),
    "wise": ("Health-wise I am vegan.", [("User is vegan", "diet", "vegan", False, True)]),
    # the verb group: change adverbs, "never" before a participle, "have" + a noun
    "change-then-adverb": ("I now actually work at Google.",
                           [("User works at Google", "employer", "Google", False, True)]),
    "never-participle": ("I've never smoked.",
                         [("User doesn't smoke", "habit", "smoking", True, False)]),
    "never-owned": ("I have never owned a car.",
                    [("User doesn't own a car", "owns", "a car", True, False)]),
    "have-a-plural-noun": ("I have drinks with friends on Fridays.",
                           [("User has drinks with friends on Fridays", "have",
                             "drinks with friends on Fridays", False, False)]),
    "can": ("I can speak French.",
            [("User can speak French", "speaks", "French", False, False)]),
    # "call me": who may say it before
    "you-can-call-me": ("You can call me Ishmael.",
                        [("User's name is Ishmael", "name", "Ishmael", False, False)]),
    "just-call-me": ("Just call me Ish.", [("User's name is Ish", "name", "Ish", False, False)]),
    "please-call-me": ("Please call me Ada.",
                       [("User's name is Ada", "name", "Ada", False, False)]),
    "please-comma-call-me": ("Please, call me Ada.",
                             [("User's name is Ada", "name", "Ada", False, False)]),
    "people-call-me": ("People call me Ada.",
                       [("User's name is Ada", "name", "Ada", False, False)]),
    "everyone-calls-me": ("Everyone calls me Ada.",
                          [("User's name is Ada", "name", "Ada", False, False)]),
    "friends-call-me": ("Friends call me Ada.",
                        [("User's name is Ada", "name", "Ada", False, False)]),
    "all-my-friends": ("All my friends call me Ada.",
                       [("User's name is Ada", "name", "Ada", False, False)]),
    "most-people": ("Most people call me Ada.",
                    [("User's name is Ada", "name", "Ada", False, False)]),
    "usually": ("Usually people call me Ada.",
                [("User's name is Ada", "name", "Ada", False, False)]),
    "and-you-can": ("And you can call me Jo.", [("User's name is Jo", "name", "Jo", False, False)]),
}
# fmt: on


@pytest.mark.parametrize(
    ("text", "expected"), ENGLISH_SUBJECTS.values(), ids=ENGLISH_SUBJECTS.keys()
)
def test_every_english_subject_and_verb_group_reads_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Jess says I cook too much.",  # what someone else says about the user
        "Honestly, Jess says I cook too much.",
        "Last summer when I lived in Rome I was happy.",  # a time clause before the subject
        "Maybe I love tea.",  # a hedge
        "Perhaps I love tea.",
        "If I move to Rome I will learn Italian.",  # a condition
        "I didn't like school.",  # a past reaction
        "I can be grumpy in the mornings.",  # what the user can be is no fact
    ],
)
def test_an_english_clause_about_someone_elses_view_a_hedge_or_a_past_reaction_gives_nothing(
    text: str,
) -> None:
    assert extract_facts(text) == []


def test_a_plural_thing_of_the_users_is_no_relative() -> None:
    assert [f.predicate for f in extract_facts("My shoes are from Italy.")] == ["be"]


# "in", "on", "for" ... are fillers too: after "Honestly," they read as the time phrase they
# start (they were stripped with the fillers, and "Honestly, for breakfast I eat oats" gave
# nothing).
# fmt: off
FILLER_THEN_TIME: dict[str, tuple[str, list[Flagged]]] = {
    "in": ("Actually, in summer I drink iced coffee.",
           [("User drinks iced coffee in summer", "drinks", "iced coffee", False, False)]),
    "on": ("Actually on Sundays I play football.",
           [("User plays football on Sundays", "hobby", "football", False, False)]),
    "and-on": ("Oh and on Sundays I play football.",
               [("User plays football on Sundays", "hobby", "football", False, False)]),
    "at": ("Honestly at the moment I live in Leeds.",
           [("User lives in Leeds at the moment", "lives_in", "Leeds", False, False)]),
    "since": ("Actually, since the pandemic I work from home.",
              [("User works from home", "habit", "working from home", False, False)]),
    "after": ("Honestly, after dinner I drink tea.",
              [("User drinks tea after dinner", "drinks", "tea", False, False)]),
    "before": ("Actually, before school I drink tea.",
               [("User drinks tea before school", "drinks", "tea", False, False)]),
    "during": ("Honestly, during exams I drink tea.",
               [("User drinks tea during exams", "drinks", "tea", False, False)]),
    "for": ("Honestly, for breakfast I eat oats.",
            [("User eats oats for breakfast", "eats", "oats", False, False)]),
    "from": ("Honestly, from Monday to Friday I work from home.",
             [("User works from home", "habit", "working from home", False, False)]),
    "every": ("Honestly, every Sunday I play football.",
              [("User plays football every Sunday", "hobby", "football", False, False)]),
    "each": ("Actually, each Sunday I play tennis.",
             [("User plays tennis each Sunday", "hobby", "tennis", False, False)]),
    "last": ("Actually, last summer I moved to Rome.",
             [("User lives in Rome", "lives_in", "Rome", False, True)]),
    "this": ("Honestly, this summer I started running.",
             [("User runs", "habit", "running", False, False)]),
}
# fmt: on


@pytest.mark.parametrize(
    ("text", "expected"), FILLER_THEN_TIME.values(), ids=FILLER_THEN_TIME.keys()
)
def test_a_time_phrase_after_a_filler_still_comes_before_the_user(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize("text", ["my friend from work is a chef", "my friend at work is a chef"])
def test_a_preposition_after_a_relative_is_no_lower_case_name(text: str) -> None:
    # it said "User's friend From works is a chef"
    assert [f for f in extract_facts(text) if "From" in f.content or "At" in f.content] == []


# fmt: off
ENGLISH_PEOPLE: dict[str, tuple[str, list[Flagged]]] = {
    # "our", "another friend", "a colleague": a person of the user's
    "our": ("Our daughter lives in Paris.",
            [("User's daughter lives in Paris", "lives_in", "Paris", False, False)]),
    "another-friend": ("Another friend, Chloe, runs a bakery.",
                       [("User's friend Chloe runs a bakery", "run", "a bakery", False, False)]),
    "a-friend": ("A friend, Chloe, runs a bakery.",
                 [("User's friend Chloe runs a bakery", "run", "a bakery", False, False)]),
    "a-colleague": ("A colleague, Sam, is a nurse.",
                    [("User's colleague Sam is a nurse", "occupation", "nurse", False, False)]),
    # he, she, they, his, her: the person met before
    "he": ("My brother is a chef. He lives in Leeds.",
           [("User's brother is a chef", "occupation", "chef", False, False),
            ("User's brother lives in Leeds", "lives_in", "Leeds", False, False)]),
    "she": ("My sister is a nurse. She lives in York.",
            [("User's sister is a nurse", "occupation", "nurse", False, False),
             ("User's sister lives in York", "lives_in", "York", False, False)]),
    "they": ("My partner is a nurse. They live in York.",
             [("User's partner is a nurse", "occupation", "nurse", False, False),
              ("User's partner lives in York", "lives_in", "York", False, False)]),
    "his-name": ("My brother is a chef. His name is Tom.",
                 [("User's brother is a chef", "occupation", "chef", False, False),
                  ("User's brother's name is Tom", "name", "Tom", False, False)]),
    "her-name": ("My sister is a nurse. Her name is Priya.",
                 [("User's sister is a nurse", "occupation", "nurse", False, False),
                  ("User's sister's name is Priya", "name", "Priya", False, False)]),
    "her-name-nobody-before": ("Her name is Priya.", []),
    "the-job": ("The job is great.", []),
    # a name met before: capitalised, or in lower case before a verb
    "name-again-adverb": ("My sister Ana lives in Leeds. Ana really loves tennis.",
                          [("User's sister Ana lives in Leeds", "lives_in", "Leeds", False, False),
                           ("User's sister Ana loves tennis", "likes", "tennis", False, False)]),
    "name-again-lower-verb": ("My sister Ana lives in Leeds. ana works at Google.",
                              [("User's sister Ana lives in Leeds", "lives_in", "Leeds",
                                False, False),
                               ("User's sister Ana works at Google", "employer", "Google",
                                False, False)]),
    "name-again-lower-is": ("My sister Ana lives in Leeds. ana is a nurse.",
                            [("User's sister Ana lives in Leeds", "lives_in", "Leeds",
                              False, False),
                             ("User's sister Ana is a nurse", "occupation", "nurse",
                              False, False)]),
    "name-again-has": ("My sister Ana lives in Leeds. Ana has two kids.",
                       [("User's sister Ana lives in Leeds", "lives_in", "Leeds", False, False),
                        ("User's sister Ana has two kids", "family", "two kids", False, False)]),
    # "Mum", "Dad" without "my", first in the clause only
    "bare-mum": ("Mum is a nurse.",
                 [("User's mum is a nurse", "occupation", "nurse", False, False)]),
    "bare-mum-not-first": ("Honestly mum is a nurse.", []),
    # "have got", "can be"
    "havent-really-got": ("I haven't really got a car.",
                          [("User doesn't have a car", "owns", "a car", True, False)]),
    "can-be": ("I can be vegan at home.", []),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), ENGLISH_PEOPLE.values(), ids=ENGLISH_PEOPLE.keys())
def test_every_person_the_user_names_or_points_back_to_reads_with_its_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


# fmt: off
ENGLISH_MORE: dict[str, tuple[str, list[Flagged]]] = {
    # "no more X for me": a habit given up
    "no-more": ("No more coffee for me.",
                [("User no longer has coffee", "habit", "coffee", True, False)]),
    # a relative named by "'s name is": the name is theirs for the rest of the message
    "name-then-name": ("My sister's name is Ana. Ana lives in Leeds.",
                       [("User's sister's name is Ana", "name", "Ana", False, False),
                        ("User's sister Ana lives in Leeds", "lives_in", "Leeds", False, False)]),
    # "have" + an -ing noun is no perfect tense
    "have-ing-noun": ("I have skiing lessons on Sundays.",
                      [("User has skiing lessons on Sundays", "have",
                        "skiing lessons on Sundays", False, False)]),
    "name-then-he": ("My brother's name is Tom. He is a chef.",
                     [("User's brother's name is Tom", "name", "Tom", False, False),
                      ("User's brother Tom is a chef", "occupation", "chef", False, False)]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), ENGLISH_MORE.values(), ids=ENGLISH_MORE.keys())
def test_a_habit_given_up_and_a_name_given_later_read_with_their_flags(
    text: str, expected: list[Flagged]
) -> None:
    assert flagged_facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My sisters are both married.", [("sisters", "relationship_status", "married")]),
        ("My cousins are vegan.", [("cousins", "diet", "vegan")]),
        ("My aunts are from Cork.", [("aunts", "from", "Cork")]),
    ],
)
def test_relatives_in_the_plural_are_people_too(
    text: str, expected: list[tuple[str, str, str]]
) -> None:
    # the subject, predicate and value only: the content says "User's sisters is married"
    assert [(f.subject, f.predicate, f.value) for f in extract_facts(text)] == expected


# The readers' mutants a full run left (m-wt19b). english_capture: the last-resort
# reading in the user's words, the relatives met in passing, the pets named on the way.

LIGHTHOUSE = (
    "a lighthouse keeper who falls in love with a sailor from a distant northern island"
    " town far away"
)

# fmt: off
CAPTURED: dict[str, tuple[str, list[Row]]] = {
    # "take" is a verb the capture keeps, unlike the other stative ones it skips
    "often-take": ("I often take the train to Leeds.",
                   [("User often takes the train to Leeds", "take", "the train to Leeds")]),
    # the verb after the adverbs, with nothing after it: the verb is the value
    "finally-relented": ("I finally relented.", [("User finally relented", "relent", "relented")]),
    # the value is cut at 80 characters, the content keeps every word
    "long-possession": (
        f"My novel is about {LIGHTHOUSE}.",
        [(f"User's novel is about {LIGHTHOUSE}", "novel", f"about {LIGHTHOUSE}"[:80])],
    ),
    "long-restated": (
        f"I DM a campaign about {LIGHTHOUSE}.",
        [(f"User dms a campaign about {LIGHTHOUSE}", "dm", f"a campaign about {LIGHTHOUSE}"[:80])],
    ),
    # a relative already said about is not introduced again, the next one is
    "said-then-met": (
        "My sister Ana lives in Lyon and my friend Sam and I went hiking.",
        [
            ("User's sister Ana lives in Lyon", "lives_in", "Lyon"),
            ("User's friend is Sam", "knows", "friend Sam"),
            ("User went hiking", "go", "hiking"),
        ],
    ),
    # a "my <word> <Name>" that is no relative does not stop the relatives after it
    "pet-then-relative": (
        "My dog Rex loves my sister Ana.",
        [
            ("User's sister is Ana", "family", "sister Ana"),
            ("User has a dog named Rex", "has_pet", "a dog named Rex"),
        ],
    ),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), CAPTURED.values(), ids=CAPTURED.keys())
def test_a_clause_no_reading_understood_is_kept_in_the_users_words(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


def test_a_pet_is_found_after_a_my_that_is_no_pet() -> None:
    facts = facts_of("My neighbour walks my dog Rex every morning.")
    assert ("User has a dog named Rex", "has_pet", "a dog named Rex") in facts


def test_a_relative_met_after_one_said_about_in_the_same_clause_is_introduced() -> None:
    facts = facts_of("My sister Ana lives in Lyon with my friend Sam.")
    assert ("User's friend is Sam", "knows", "friend Sam") in facts
    assert not any(predicate == "family" for _, predicate, _ in facts)  # Ana is said about


@pytest.mark.parametrize("text", ["I painted one.", "I restored one.", "I adore one."])
def test_a_verb_whose_only_object_points_back_is_about_the_conversations_thing(
    text: str,
) -> None:
    assert extract_facts(text) == []


# english_copula. "born in the ..." was always a time: "I was born in the Netherlands" gave
# the birthday "the Netherlands"; a capital after "the" names a place.

# fmt: off
BORN_IN_THE: dict[str, tuple[str, list[Row]]] = {
    "the-netherlands": ("I was born in the Netherlands.",
                        [("User was born in the Netherlands", "from", "the Netherlands")]),
    "the-us": ("I was born in the US.", [("User was born in the US", "from", "the US")]),
    "sister-the-uk": ("My sister was born in the UK.",
                      [("User's sister was born in the UK", "from", "the UK")]),
    "the-90s": ("I was born in the 90s.", [("User's birthday is the 90s", "birthday", "the 90s")]),
    "the-summer": ("I was born in the summer of 1990.",
                   [("User's birthday is the summer of 1990", "birthday", "the summer of 1990")]),
}
# fmt: on


@pytest.mark.parametrize(("text", "expected"), BORN_IN_THE.values(), ids=BORN_IN_THE.keys())
def test_born_in_the_with_a_capital_is_a_place_and_otherwise_a_time(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


# chinese_verbs, english_verbs: the bounds of a name and an age, the verb a generic
# reading keeps, and whose a switched habit is. "我叫了外卖" ("I ordered takeout") gave the
# name "了外卖".


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我叫明。", [("用户叫明", "name", "明")]),  # a one-character name
        ("我叫小明。", [("用户叫小明", "name", "小明")]),
        ("我叫外卖送到家。", []),  # five characters: 叫外卖 is ordering takeout
        ("我叫了外卖。", []),
        ("我叫了救护车。", []),
    ],
)
def test_a_chinese_name_is_one_to_four_characters_and_never_starts_with_le(
    text: str, expected: list[Row]
) -> None:
    assert facts_of(text) == expected


@pytest.mark.parametrize(
    ("text", "age"),
    [
        ("My son turned 1 last week.", ["1"]),
        ("I turned 129 today.", ["129"]),
        ("My daughter turned 0.", []),
        ("I turned 130 today.", []),
    ],
)
def test_turning_an_age_reads_one_to_129(text: str, age: list[str]) -> None:
    assert [value for _, predicate, value in facts_of(text) if predicate == "age"] == age


def test_calling_someone_keeps_who_as_the_value_not_when() -> None:
    assert facts_of("I call my mom every Sunday.") == [
        ("User calls their mom every Sunday", "call", "my mom")
    ]


def test_a_habit_someone_else_switched_to_is_theirs() -> None:
    [fact] = extract_facts("我妹妹改喝茶了。")
    assert (fact.content, fact.subject, fact.updates_previous) == ("用户的妹妹喝茶", "妹妹", True)


def test_an_aside_after_a_comma_is_not_more_of_the_pet() -> None:
    # only ", a ...", ", named ...", ", called ...", ", both ..." go on the noun phrase
    assert facts_of("I have a dog, lucky me.") == [("User has a dog", "has_pet", "a dog")]


@pytest.mark.parametrize(
    ("text", "contents"),
    [
        pytest.param("I love <img src=x onerror=alert(1)>", [], id="tag"),
        pytest.param("I love <img src=x onerror=alert(1)> and cats", [], id="tag-then-more"),
        pytest.param("I like the <script>alert(1)</script> tag", [], id="script"),
        pytest.param("I use `rm -rf /` daily", [], id="inline-code"),
        pytest.param("I love ```python\nprint(1)\n```", [], id="fenced-code"),
        pytest.param('I love "Dune" and cats', [], id="quotation"),
        pytest.param("我喜欢<img src=x onerror=alert(1)>", [], id="zh-tag"),
        pytest.param("我喜欢`print(1)`", [], id="zh-code"),
        pytest.param("I love <b>jazz</b>", ["User loves jazz"], id="formatting-tag"),
        pytest.param("I love jazz <img src=x>", ["User loves jazz"], id="tag-after"),
        pytest.param("I live in Oslo <!-- a note -->", ["User lives in Oslo"], id="comment"),
        pytest.param("我住在<b>上海</b>", ["用户住在上海"], id="zh-formatting-tag"),
        pytest.param("I love <3 cats", ["User loves 3 cats"], id="no-tag"),
        pytest.param("I love rock & roll", ["User loves rock & roll"], id="ampersand"),
        pytest.param(
            "I work at Procter & Gamble", ["User works at Procter & Gamble"], id="ampersand-name"
        ),
        pytest.param(
            "I love cats & I hate dogs", ["User loves cats", "User hates dogs"], id="ampersand-and"
        ),
        pytest.param("I like the", [], id="cut-after-article"),
    ],
)
def test_markup_and_code_are_no_fact_and_an_ampersand_is_punctuation(
    text: str, contents: list[str]
) -> None:
    assert [f.content for f in extract_facts(text)] == contents
