"""Word lists and English verb forms for the rule-based extractor.

Small closed classes (relations, pets, diets, languages, occupations) tell
what a value is; the verb table gives lemmas, third-person and past forms so
that a clause can be restated about the user in the third person, whatever its
verb. Nothing here is tied to one phrasing: an unknown verb still gets regular
forms, and an unknown noun is still a value.
"""

from __future__ import annotations

__all__ = [
    "DIETS",
    "EPISODIC",
    "HEALTH",
    "HEDGES",
    "LANGUAGES",
    "NATIONALITIES",
    "NOT_NAMES",
    "OCCUPATIONS",
    "PETS",
    "RELATIONS",
    "RELIGIONS",
    "STATIVE_SKIP",
    "VERBS",
    "gerund",
    "lemma",
    "past",
    "third_person",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: People a user calls "my X"; multi-word ones are joined with "_" (see ``relation_of``).
RELATIONS = _words(
    """
    mother mom mum mommy mama father dad daddy papa parents parent sister brother sibling
    siblings son daughter kid kids child children baby babies twin twins wife husband
    partner spouse boyfriend girlfriend fiance fiancee fiancé fiancée grandmother grandma
    granny grandfather grandpa grandparents grandson granddaughter grandkids grandchildren
    aunt uncle cousin niece nephew stepmom stepdad stepmother stepfather stepson
    stepdaughter stepsister stepbrother in-law mother-in-law father-in-law sister-in-law
    brother-in-law friend friends bestie bff buddy pal mate roommate flatmate housemate
    neighbor neighbour boss manager coworker co-worker colleague colleagues teammate
    mentor teacher therapist doctor landlord ex classmate
    """
)

PETS = _words(
    """
    cat cats kitten kittens kitty dog dogs puppy puppies pup hamster hamsters guinea pig
    pigs rabbit rabbits bunny bunnies parrot parrots bird birds budgie fish goldfish turtle
    turtles tortoise snake snakes lizard gecko horse horses pony ferret ferrets chinchilla
    hedgehog rat rats mouse mice chicken chickens goat goats cockatiel iguana axolotl
    greyhound greyhounds beagle beagles labrador lab retriever poodle terrier spaniel collie
    husky pug dachshund corgi bulldog chihuahua schnauzer doodle labradoodle cockapoo
    whippet lurcher mutt tabby ragdoll siamese tortie kitties pups doggo pupper tetra tetras
    betta gourami guppies guppy budgies canary tarantula
    """
)

DIETS = _words(
    """
    vegetarian vegan pescatarian pescetarian keto paleo gluten-free dairy-free halal kosher
    plant-based carnivore lacto-vegetarian flexitarian raw-vegan
    """
)

HEALTH = _words(
    """
    diabetes diabetic asthma asthmatic adhd autism autistic migraines migraine epilepsy
    epileptic arthritis celiac coeliac eczema anxiety depression insomnia hypertension
    colorblind colourblind deaf blind pregnant dyslexia dyslexic ibs crohn's lupus
    lactose-intolerant parkinson's alzheimer's dementia cancer stroke anaemia anemia anaemic
    anemic hayfever hay-fever
    """
)

LANGUAGES = _words(
    """
    english spanish french german italian portuguese dutch swedish norwegian danish finnish
    polish czech slovak hungarian romanian greek turkish russian ukrainian arabic hebrew
    persian farsi hindi urdu bengali punjabi tamil telugu marathi gujarati chinese mandarin
    cantonese japanese korean vietnamese thai indonesian malay tagalog filipino swahili
    catalan basque galician irish welsh latin esperanto icelandic estonian latvian
    lithuanian serbian croatian bosnian slovenian bulgarian albanian armenian georgian
    """
)

NATIONALITIES = _words(
    """
    american british english french german italian spanish chinese japanese korean indian
    canadian australian mexican brazilian russian dutch swiss swedish polish irish scottish
    portuguese vietnamese thai turkish greek african european asian argentinian chilean
    colombian peruvian nigerian kenyan egyptian moroccan israeli iranian pakistani
    filipino indonesian malaysian singaporean norwegian danish finnish austrian belgian
    czech hungarian romanian ukrainian welsh
    """
)

OCCUPATIONS = _words(
    """
    developer engineer programmer coder teacher student designer doctor nurse scientist
    researcher writer author manager lawyer attorney artist musician accountant consultant
    analyst architect chef cook photographer professor lecturer freelancer founder
    cofounder co-founder entrepreneur journalist editor translator pilot farmer mechanic
    electrician plumber carpenter intern ceo cto cfo coo pm sysadmin admin dev tester
    pharmacist dentist therapist psychologist economist mathematician physicist chemist
    biologist historian librarian tutor instructor coach trainer driver barista waiter
    waitress bartender cashier clerk secretary assistant officer soldier firefighter
    police policeman policewoman salesman salesperson marketer recruiter veterinarian vet
    surgeon paramedic physician radiologist midwife caregiver nanny cleaner janitor
    baker butcher tailor hairdresser barber stylist actor actress dancer singer
    composer producer director animator illustrator copywriter blogger streamer
    youtuber podcaster influencer realtor broker banker trader investor auditor
    bookkeeper paralegal judge diplomat politician professor scholar postdoc phd
    undergrad undergraduate grad retiree homemaker housewife househusband volunteer
    technician machinist welder contractor builder surveyor geologist astronomer
    statistician epidemiologist optometrist pediatrician dermatologist psychiatrist
    counselor counsellor social worker pastor priest rabbi imam monk nun
    lifeguard guide receptionist courier mailman postman dispatcher operator
    """
)

#: Hedges and hypotheticals: a clause with one of them states nothing for sure.
HEDGES = _words(
    """
    might may maybe perhaps possibly probably could would should if unless suppose
    supposing imagine someday sometime wonder wondering considering thinking
    """
)

#: Time words of one occasion: "I had pasta yesterday" is an event, not a lasting fact.
EPISODIC = _words(
    """
    yesterday today tonight tomorrow earlier later soon
    """
)

#: Capitalised words after "I'm" that are not a name.
RELIGIONS = _words(
    """
    muslim christian catholic protestant jewish hindu buddhist sikh atheist agnostic
    orthodox mormon pagan quaker
    """
)

NOT_NAMES = (
    NATIONALITIES
    | RELIGIONS
    | _words(
        """
    not sorry fine good okay ok here back done ready happy sure just so very really still
    also glad tired busy going trying working looking feeling new home in on at the a an
    from into allergic married single divorced engaged vegetarian vegan learning living
    moving starting retired pregnant currently now originally totally always never
    """
    )
)

#: Verbs of talk, thought and perception: "I think ...", "I see", "I mean" say nothing
#: lasting about the user by themselves.
STATIVE_SKIP = _words(
    """
    think guess believe suppose know mean see hear feel wonder wish need agree disagree
    understand remember forget thank apologize promise bet doubt admit realize realise
    notice imagine assume expect mind seem look sound find say tell ask told said asked
    let try tried get got give put keep bring send show hope want
    would could should must might may can will shall ought
    """
)

# Irregular verbs: lemma -> (third person, past, past participle, present participle).
_IRREGULAR: dict[str, tuple[str, str, str]] = {
    "be": ("is", "was", "been"),
    "have": ("has", "had", "had"),
    "do": ("does", "did", "done"),
    "go": ("goes", "went", "gone"),
    "get": ("gets", "got", "gotten"),
    "make": ("makes", "made", "made"),
    "take": ("takes", "took", "taken"),
    "grow": ("grows", "grew", "grown"),
    "know": ("knows", "knew", "known"),
    "speak": ("speaks", "spoke", "spoken"),
    "eat": ("eats", "ate", "eaten"),
    "drink": ("drinks", "drank", "drunk"),
    "drive": ("drives", "drove", "driven"),
    "ride": ("rides", "rode", "ridden"),
    "write": ("writes", "wrote", "written"),
    "read": ("reads", "read", "read"),
    "run": ("runs", "ran", "run"),
    "swim": ("swims", "swam", "swum"),
    "begin": ("begins", "began", "begun"),
    "become": ("becomes", "became", "become"),
    "leave": ("leaves", "left", "left"),
    "quit": ("quits", "quit", "quit"),
    "buy": ("buys", "bought", "bought"),
    "teach": ("teaches", "taught", "taught"),
    "feel": ("feels", "felt", "felt"),
    "find": ("finds", "found", "found"),
    "give": ("gives", "gave", "given"),
    "sing": ("sings", "sang", "sung"),
    "think": ("thinks", "thought", "thought"),
    "build": ("builds", "built", "built"),
    "sell": ("sells", "sold", "sold"),
    "tell": ("tells", "told", "told"),
    "say": ("says", "said", "said"),
    "see": ("sees", "saw", "seen"),
    "meet": ("meets", "met", "met"),
    "keep": ("keeps", "kept", "kept"),
    "sleep": ("sleeps", "slept", "slept"),
    "lose": ("loses", "lost", "lost"),
    "win": ("wins", "won", "won"),
    "fly": ("flies", "flew", "flown"),
    "draw": ("draws", "drew", "drawn"),
    "wear": ("wears", "wore", "worn"),
    "hold": ("holds", "held", "held"),
    "stand": ("stands", "stood", "stood"),
    "forget": ("forgets", "forgot", "forgotten"),
    "choose": ("chooses", "chose", "chosen"),
    "fall": ("falls", "fell", "fallen"),
    "break": ("breaks", "broke", "broken"),
    "hear": ("hears", "heard", "heard"),
    "spend": ("spends", "spent", "spent"),
    "pay": ("pays", "paid", "paid"),
    "put": ("puts", "put", "put"),
    "set": ("sets", "set", "set"),
    "cut": ("cuts", "cut", "cut"),
    "let": ("lets", "let", "let"),
    "lead": ("leads", "led", "led"),
    "bring": ("brings", "brought", "brought"),
    "catch": ("catches", "caught", "caught"),
    "fight": ("fights", "fought", "fought"),
    "shake": ("shakes", "shook", "shaken"),
    "understand": ("understands", "understood", "understood"),
    "dig": ("digs", "dug", "dug"),
    "bake": ("bakes", "baked", "baked"),
    "hide": ("hides", "hid", "hidden"),
    "lie": ("lies", "lay", "lain"),
    "send": ("sends", "sent", "sent"),
}
_FORMS = {form: lemma for lemma, forms in _IRREGULAR.items() for form in (lemma, *forms)} | {
    "am": "be",
    "are": "be",
    "were": "be",
    "'m": "be",
    "'re": "be",
    "'ve": "have",
}

#: Verbs the extractor knows by name (besides the irregular ones); used to tell a verb
#: from a noun when a list or a run-on sentence goes on with one ("and sing").
VERBS = frozenset(_IRREGULAR) | _words(
    """
    like love enjoy adore dislike hate detest loathe prefer live work move relocate settle
    study learn play practice practise collect watch listen own use cook volunteer
    travel visit hike climb surf ski skate knit paint dance garden meditate journal
    fish hunt cycle bike jog train coach mentor support follow raise care help teach code
    program design develop manage start join quit stop retire marry date commute walk
    stay rent attend graduate major speak want plan hope intend aim need try miss
    celebrate turn work call avoid skip wake brew bake smoke vape drive ride grow
    trust respect admire fancy appreciate crave adopt foster sew crochet rescue break
    mentor sponsor host organize organise attend commute binge stream roast grill
    ferment teach write read watch listen build make run manage own share volunteer
    photograph film edit blog vlog podcast tutor babysit foster donate recycle compost
    sail row box wrestle fence golf bowl skydive dive snorkel camp backpack hand diagnose
    follow avoid keep take plant grow bake commute switch swap change save create prepare
    gamble
    """
)


def lemma(word: str) -> str:
    """The base form of an English verb form (``lives`` -> ``live``, ``stopped`` -> ``stop``)."""
    w = word.casefold()
    if w in _FORMS:
        return _FORMS[w]
    if w in VERBS:
        return w
    candidates: list[str] = []
    if w.endswith("ies") and len(w) > 4:
        candidates.append(w[:-3] + "y")
    if w.endswith("es"):
        candidates += [w[:-2], w[:-1]]
    if w.endswith("s") and not w.endswith("ss"):
        candidates.append(w[:-1])
    if w.endswith("ied") and len(w) > 4:
        candidates.append(w[:-3] + "y")
    if w.endswith("ed"):
        stem = w[:-2]
        if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
            candidates.append(stem[:-1])  # swapped -> swap, stopped -> stop; added stays add
        candidates += [stem, stem + "e", w[:-1]]
    if w.endswith("ing") and len(w) > 4:
        stem = w[:-3]
        candidates += [stem, stem + "e"]
        if len(stem) > 2 and stem[-1] == stem[-2]:
            candidates.append(stem[:-1])
    for candidate in candidates:
        if candidate in VERBS:
            return candidate
    return candidates[0] if candidates else w


def third_person(verb: str) -> str:
    """``live`` -> ``lives``, ``watch`` -> ``watches``, ``study`` -> ``studies``; a phrase
    by its first word (``have been`` -> ``has been``)."""
    head, space, rest = verb.partition(" ")
    if space:  # a past form stays as it is ("grew up")
        return verb if lemma(head) != head else f"{third_person(head)} {rest}"
    if verb in _IRREGULAR:
        return _IRREGULAR[verb][0]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def past(verb: str) -> str:
    """``live`` -> ``lived``, ``play`` -> ``played``, ``go`` -> ``went``."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb][1]
    if verb.endswith("e"):
        return verb + "d"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def gerund(verb: str) -> str:
    """``run`` -> ``running``, ``hike`` -> ``hiking``, ``tie`` -> ``tying``."""
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")) and len(verb) > 2:
        return verb[:-1] + "ing"
    vowels = "aeiou"
    # One syllable ending consonant-vowel-consonant doubles: run, swim, stop, shop, jog.
    if (
        len(verb) in (3, 4)
        and verb[-3] not in vowels
        and verb[-2] in vowels
        and verb[-1] not in vowels + "wxy"
        and sum(c in vowels for c in verb) == 1
    ):
        return verb + verb[-1] + "ing"
    return verb + "ing"
