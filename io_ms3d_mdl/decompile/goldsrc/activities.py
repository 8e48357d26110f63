"""Half-Life's activity names, by number (the SDK's ``activity.h``: ``ACT_IDLE`` is 1, then one after another), so
a ``$sequence`` names its activity as a modder wrote it. ``studiomdl`` also reads ``ACT_<number>``, which is what an
activity beyond this table (a mod's own) is written as."""

from __future__ import annotations

ACTIVITIES = [
    "IDLE",
    "GUARD",
    "WALK",
    "RUN",
    "FLY",
    "SWIM",
    "HOP",
    "LEAP",
    "FALL",
    "LAND",
    "STRAFE_LEFT",
    "STRAFE_RIGHT",
    "ROLL_LEFT",
    "ROLL_RIGHT",
    "TURN_LEFT",
    "TURN_RIGHT",
    "CROUCH",
    "CROUCHIDLE",
    "STAND",
    "USE",
    "SIGNAL1",
    "SIGNAL2",
    "SIGNAL3",
    "TWITCH",
    "COWER",
    "SMALL_FLINCH",
    "BIG_FLINCH",
    "RANGE_ATTACK1",
    "RANGE_ATTACK2",
    "MELEE_ATTACK1",
    "MELEE_ATTACK2",
    "RELOAD",
    "ARM",
    "DISARM",
    "EAT",
    "DIESIMPLE",
    "DIEBACKWARD",
    "DIEFORWARD",
    "DIEVIOLENT",
    "BARNACLE_HIT",
    "BARNACLE_PULL",
    "BARNACLE_CHOMP",
    "BARNACLE_CHEW",
    "SLEEP",
    "INSPECT_FLOOR",
    "INSPECT_WALL",
    "IDLE_ANGRY",
    "WALK_HURT",
    "RUN_HURT",
    "HOVER",
    "GLIDE",
    "FLY_LEFT",
    "FLY_RIGHT",
    "DETECT_SCENT",
    "SNIFF",
    "BITE",
    "THREAT_DISPLAY",
    "FEAR_DISPLAY",
    "EXCITED",
    "SPECIAL_ATTACK1",
    "SPECIAL_ATTACK2",
    "COMBAT_IDLE",
    "WALK_SCARED",
    "RUN_SCARED",
    "VICTORY_DANCE",
    "DIE_HEADSHOT",
    "DIE_CHESTSHOT",
    "DIE_GUTSHOT",
    "DIE_BACKSHOT",
    "FLINCH_HEAD",
    "FLINCH_CHEST",
    "FLINCH_STOMACH",
    "FLINCH_LEFTARM",
    "FLINCH_RIGHTARM",
    "FLINCH_LEFTLEG",
    "FLINCH_RIGHTLEG",
]
assert len(ACTIVITIES) == 76


def activity_name(number: int) -> str:
    """``ACT_WALK`` for 3; ``ACT_<number>`` for one the table does not name."""
    return f"ACT_{ACTIVITIES[number - 1]}" if 1 <= number <= len(ACTIVITIES) else f"ACT_{number}"


def activity_number(name: str) -> int:
    """The number ``studiomdl`` gives an activity token (0: not an activity)."""
    upper = name.upper()
    if upper.startswith("ACT_") and upper[4:] in ACTIVITIES:
        return ACTIVITIES.index(upper[4:]) + 1
    if upper.startswith("ACT_"):
        digits = upper[4:]
        sign = -1 if digits.startswith("-") else 1
        digits = digits.lstrip("+-")
        count = len(digits) - len(digits.lstrip("0123456789"))
        return sign * int(digits[:count]) if count else 0
    return 0
