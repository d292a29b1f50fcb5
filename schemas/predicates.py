"""The predicate vocabulary: what a fact says about its subject, and how many values it holds.

A fact's ``predicate`` names the attribute it states (``lives_in``, ``likes``).
Cardinality decides what a new statement does to older ones about the same
subject: a ``one`` predicate holds a single value at a time (a new address
replaces the old one), a ``many`` predicate accumulates values (a new like
joins the others). Predicates outside the vocabulary count as ``many``:
forgetting something true is worse than keeping two statements side by side.
``key`` splits a ``one`` predicate into slots (``favorite`` of ``color`` and
of ``food`` are two slots). ``opposite`` names the predicate that cannot hold
the same value at once (``likes`` and ``dislikes``).

Extend or override it in the TOML file (``[[predicates]]`` tables, see
``docs/memory.md``); entries there replace built-in ones of the same name.
"""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["DEFAULT_PREDICATES", "Cardinality", "PredicateSpec"]

Cardinality = Literal["one", "many"]


class PredicateSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    cardinality: Cardinality
    #: The taxonomy category a fact with this predicate about the user goes in.
    category: str
    #: Other names for it (a model's or an import's wording), matched after normalising.
    aliases: list[str] = []
    #: The predicate that cannot hold the same value at the same time.
    opposite: str | None = None
    #: Predicates of one family describe the same activity or taste from different sides
    #: ("likes running", "hobby: running"): a negation in one retracts the others' value.
    family: str | None = None
    #: Facts say which slot (``key``) they fill: one value per slot ("favorite" colour).
    keyed: bool = False
    #: One line for the extraction prompt.
    description: str = ""


def _p(
    name: str,
    cardinality: Cardinality,
    category: str,
    description: str,
    aliases: str = "",
    opposite: str | None = None,
    family: str | None = None,
) -> PredicateSpec:
    return PredicateSpec(
        name=name,
        cardinality=cardinality,
        category=category,
        aliases=aliases.split(),
        opposite=opposite,
        family=family,
        description=description,
    )


# fmt: off
DEFAULT_PREDICATES: tuple[PredicateSpec, ...] = (
    # -- one value at a time ------------------------------------------------------------
    _p("name", "one", "identity", "what the subject is called",
       "full_name first_name is_called called is_named goes_by nickname"),
    _p("age", "one", "identity", "age in years", "years_old age_years"),
    _p("birthday", "one", "identity", "date of birth",
       "birth_date born_on date_of_birth dob birthdate"),
    _p("lives_in", "one", "identity", "where the subject lives now",
       "location city residence home lives lives_at resides_in based_in moved_to relocated_to"
       " current_city current_location place_of_residence address hometown_now"),
    _p("from", "one", "identity", "where the subject comes from or grew up",
       "hometown origin born_in grew_up_in comes_from is_from native_of"),
    _p("nationality", "one", "identity", "citizenship or nationality", "citizenship"),
    _p("employer", "one", "project", "who the subject works for",
       "works_at works_for company workplace employed_by job_at employer_name organization"),
    _p("occupation", "one", "project", "job, role or profession",
       "job job_title role profession works_as position title career is_a_profession"),
    _p("school", "one", "project", "school or university attended now",
       "studies_at university college attends school_name"),
    _p("studies", "one", "project", "field of study", "major field_of_study studying degree_in"),
    _p("relationship_status", "one", "identity", "single, married, engaged, divorced ...",
       "marital_status relationship married"),
    _p("partner", "one", "identity", "spouse or partner",
       "spouse wife husband girlfriend boyfriend married_to fiance fiancee"),
    _p("diet", "one", "preference", "vegetarian, vegan, keto ...",
       "diet_type dietary_preference eating_style"),
    _p("email", "one", "identity", "email address", "email_address e-mail mail"),
    _p("phone", "one", "identity", "phone number", "phone_number mobile telephone cell"),
    _p("timezone", "one", "identity", "time zone", "time_zone tz"),
    _p("wechat", "one", "identity", "WeChat ID", "wechat_id weixin"),
    _p("zodiac", "one", "identity", "zodiac or Chinese zodiac sign", "zodiac_sign star_sign"),
    _p("religion", "one", "identity", "religion or belief", "faith belief"),
    _p("pronouns", "one", "identity", "pronouns the subject uses", "preferred_pronouns gender"),
    PredicateSpec(name="favorite", cardinality="one", category="preference", keyed=True,
                  aliases=["favourite", "favorite_thing", "favourite_thing"],
                  description="a favourite; the key says of what (color, food ...)"),
    # -- values accumulate ---------------------------------------------------------------
    _p("likes", "many", "preference", "something the subject likes, loves or enjoys",
       "like loves love enjoys enjoy adores fan_of is_into into interested_in fond_of"
       " passionate_about", opposite="dislikes", family="activity"),
    _p("dislikes", "many", "preference", "something the subject dislikes or hates",
       "dislike hates hate can_not_stand cannot_stand cant_stand does_not_like avoids",
       opposite="likes"),
    _p("prefers", "many", "preference", "a preference between options", "prefer preference",
       family="activity"),
    _p("allergic_to", "many", "identity", "an allergy or intolerance",
       "allergy allergies allergic intolerant_to intolerance"),
    _p("health", "many", "identity", "a health condition",
       "condition has_condition diagnosed_with"),
    _p("has_pet", "many", "identity", "a pet (with its name when known)",
       "pet pets owns_pet has_pets"),
    _p("family", "many", "identity", "a relative of the subject (with the relation and name)",
       "relative has_child has_children children kids has_sibling sibling has_sister"
       " has_brother parent has_family"),
    _p("knows", "many", "identity", "a friend, colleague or other person in the subject's life",
       "friend has_friend colleague coworker acquaintance"),
    _p("speaks", "many", "identity", "a language the subject speaks",
       "language languages speaks_language fluent_in native_language"),
    _p("learning", "many", "goal", "something the subject is learning",
       "learns is_learning studying_language"),
    _p("hobby", "many", "preference", "a hobby, sport or pastime",
       "hobbies plays activity pastime sport practices", family="activity"),
    _p("habit", "many", "behavior", "a routine or habit", "routine habits does_regularly usually",
       family="activity"),
    _p("eats", "many", "behavior", "something the subject eats", "eat food", family="activity"),
    _p("takes", "many", "identity", "a medication or supplement the subject takes",
       "medication medicine supplement takes_medication", family="activity"),
    _p("drinks", "many", "behavior", "something the subject drinks", "drink beverage",
       family="activity"),
    _p("owns", "many", "knowledge", "something the subject owns or drives",
       "has_item possession drives owns_car vehicle car"),
    _p("uses", "many", "knowledge", "a tool, product or service the subject uses",
       "uses_tool tool tools", family="activity"),
    _p("skill", "many", "knowledge", "something the subject can do", "can good_at skills"),
    _p("works_on", "many", "project", "a project the subject is working on",
       "working_on building project projects"),
    _p("goal", "many", "goal", "something the subject wants or plans to do",
       "wants_to plans_to plan aims_to hopes_to intends_to wants goals"),
    _p("visited", "many", "knowledge", "a place the subject has been to",
       "traveled_to travelled_to been_to"),
)
# fmt: on
