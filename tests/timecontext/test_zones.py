"""Client zones of the open turn and the process zone (time-context §7, time-context §8.2,
time-context §12)."""

from __future__ import annotations

import os
import zoneinfo
from pathlib import Path
from typing import Any

import pytest

from schedule import ScheduleInputError
from schedule import canonicalize_time_zone as canonicalize
from timecontext import (
    ZONE_SHAPE,
    ClientZoneError,
    TimeContext,
    TimeContextConfigError,
    client_zones,
    process_zone,
    sampled_zone,
)

from .support import ManualClock, U

SYSTEM_FAILED = "time-context: failed to resolve the system time zone"


# --- time-context §7.1 which messages count ----------------------------------------------

def test_e5_counting() -> None:
    messages = [
        U("a", "Asia/Tokyo"),
        {"role": "user", "source": {"kind": "user", "clientTimeZone": "Europe/Paris"},
         "content": []},
        U("b"),
        U("c", "UTC"),
        U("d", "Asia/Tokyo"),
    ]
    assert client_zones(messages, canonicalize) == ("Asia/Tokyo", "UTC")


def test_one_zoned_and_one_unzoned_prompt_is_unique() -> None:
    assert client_zones([U("a"), U("b", "Europe/Berlin")], canonicalize) == ("Europe/Berlin",)


def test_no_zone_is_empty() -> None:
    assert client_zones([], canonicalize) == ()
    assert client_zones([U("a"), U("b")], canonicalize) == ()


@pytest.mark.parametrize(
    "message",
    [
        # plugin messages and readings, even with a zone
        {"source": {"kind": "plugin", "plugin": "time-context", "rpcId": "r",
                    "clientTimeZone": "utc"}},
        # user sources without a string rpcId, even with an invalid zone
        {"source": {"kind": "user", "clientTimeZone": "utc"}},
        {"source": {"kind": "user", "rpcId": 7, "clientTimeZone": "utc"}},
        {"source": {"kind": "user", "rpcId": None, "clientTimeZone": "utc"}},
        # non-string zones
        {"source": {"kind": "user", "rpcId": "r", "clientTimeZone": None}},
        {"source": {"kind": "user", "rpcId": "r", "clientTimeZone": 5}},
        {"source": {"kind": "user", "rpcId": "r", "clientTimeZone": ["Asia/Tokyo"]}},
        # other kinds, sources and data that are not dicts
        {"source": {"kind": "goal", "rpcId": "r", "clientTimeZone": "utc"}},
        {"source": {"kind": "User", "rpcId": "r", "clientTimeZone": "utc"}},
        {"source": "user"},
        {"source": ["kind", "user"]},
        {"role": "user"},
        ["source", {"kind": "user", "rpcId": "r", "clientTimeZone": "utc"}],
        "hello",
        None,
    ],
)
def test_messages_that_contribute_nothing(message: Any) -> None:
    assert client_zones([message, U("x", "Europe/Berlin")], canonicalize) == ("Europe/Berlin",)


def test_an_empty_rpc_id_still_counts() -> None:
    assert client_zones([U("", "Asia/Tokyo")], canonicalize) == ("Asia/Tokyo",)
    with pytest.raises(ClientZoneError):
        client_zones([U("", "utc")], canonicalize)


def test_zones_are_sorted_by_code_point_and_deduplicated() -> None:
    zones = ["UTC", "Europe/Berlin", "America/Sao_Paulo", "Asia/Tokyo", "Europe/Berlin",
             "Etc/GMT+5", "America/Argentina/Buenos_Aires"]
    result = client_zones([U(str(i), z) for i, z in enumerate(zones)], canonicalize)
    assert result == ("America/Argentina/Buenos_Aires", "America/Sao_Paulo", "Asia/Tokyo",
                      "Etc/GMT+5", "Europe/Berlin", "UTC")


# --- time-context §7.2 validation ----------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("utc", 'client time zone must be canonical UTC or IANA Area/Location: "utc"'),
        ("Asia/Shanghai\n",
         'client time zone must be canonical UTC or IANA Area/Location: "Asia/Shanghai\\n"'),
        ("Mars/Olympus", 'client time zone is unsupported: "Mars/Olympus"'),
        ("Asia/Calcutta", 'client time zone must be canonical: "Asia/Calcutta"'),
        # more of each kind
        ("", 'client time zone must be canonical UTC or IANA Area/Location: ""'),
        ("GMT", 'client time zone must be canonical UTC or IANA Area/Location: "GMT"'),
        ("+08:00", 'client time zone must be canonical UTC or IANA Area/Location: "+08:00"'),
        ("Asia//Shanghai",
         'client time zone must be canonical UTC or IANA Area/Location: "Asia//Shanghai"'),
        (" Asia/Tokyo",
         'client time zone must be canonical UTC or IANA Area/Location: " Asia/Tokyo"'),
        ("Europe/Zürich",
         'client time zone must be canonical UTC or IANA Area/Location: "Europe/Zürich"'),
        ("America/../Asia/Tokyo", 'client time zone is unsupported: "America/../Asia/Tokyo"'),
        ("posix/Europe/Paris", 'client time zone is unsupported: "posix/Europe/Paris"'),
        ("Etc/UTC", 'client time zone must be canonical: "Etc/UTC"'),
        ("asia/tokyo", 'client time zone must be canonical: "asia/tokyo"'),
        ("US/Eastern", 'client time zone must be canonical: "US/Eastern"'),
        ("Europe/Kiev", 'client time zone must be canonical: "Europe/Kiev"'),
    ],
)
def test_e6_validation_errors(value: str, message: str) -> None:
    with pytest.raises(ClientZoneError) as caught:
        client_zones([U("r", value)], canonicalize)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_first_bad_value_in_message_order_wins_even_in_a_mixed_turn() -> None:
    messages = [U("a", "Europe/Berlin"), U("b", "Mars/Olympus"), U("c", "utc"), U("d", "UTC")]
    with pytest.raises(ClientZoneError, match=r'^client time zone is unsupported: "Mars/Olympus"$'):
        client_zones(messages, canonicalize)


def test_values_are_validated_before_deduplication() -> None:
    messages = [U("a", "Asia/Kolkata"), U("b", "Asia/Calcutta")]
    with pytest.raises(ClientZoneError, match="must be canonical"):
        client_zones(messages, canonicalize)


def test_any_exception_of_the_canonicaliser_means_unsupported() -> None:
    def picky(name: str) -> str:
        raise KeyError(name)

    with pytest.raises(ClientZoneError) as caught:
        client_zones([U("a", "Europe/Berlin")], picky)
    assert str(caught.value) == 'client time zone is unsupported: "Europe/Berlin"'
    assert isinstance(caught.value.__cause__, KeyError)


def test_the_canonicaliser_is_not_called_for_malformed_values() -> None:
    calls: list[str] = []

    def spy(name: str) -> str:
        calls.append(name)
        return canonicalize(name)

    with pytest.raises(ClientZoneError):
        client_zones([U("a", "Europe/Berlin"), U("b", "EST")], spy)
    assert calls == ["Europe/Berlin"]


def test_zone_shape_needs_fullmatch() -> None:
    assert ZONE_SHAPE.fullmatch("America/Argentina/Buenos_Aires")
    assert ZONE_SHAPE.fullmatch("Etc/GMT-14")
    assert ZONE_SHAPE.match("Asia/Shanghai\n") and not ZONE_SHAPE.fullmatch("Asia/Shanghai\n")
    assert not ZONE_SHAPE.fullmatch("UTC")
    assert not ZONE_SHAPE.fullmatch("Asia/")
    assert not ZONE_SHAPE.fullmatch("1Asia/Tokyo")


# --- time-context §12 the properties timecontext relies on ----------------------------------

def test_every_zone_shaped_name_canonicalises_to_a_value_that_passes_every_check() -> None:
    """time-context §12: every available zone name that passes the shape gate is accepted, in any
    letter case (only ``UTC`` is case-sensitive), and its result is idempotent and passes
    time-context §7.2's three checks; every other available name is refused."""
    accepted = 0
    for name in sorted(zoneinfo.available_timezones()):
        if name != "UTC" and ZONE_SHAPE.fullmatch(name) is None:
            with pytest.raises(ScheduleInputError) as refused:
                canonicalize(name)
            assert refused.value.code == "invalid_time_zone"
            continue
        result = canonicalize(name)
        assert canonicalize(result) == result
        assert client_zones([U("r", result)], canonicalize) == (result,)
        if name != "UTC":
            assert canonicalize(name.lower()) == result
            assert canonicalize(name.upper()) == result
        accepted += 1
    assert accepted > 400  # tzdata holds about 550 Area/Location names


# --- time-context §8.2 process zone -------------------------------------------------------

def link(tmp_path: Path, target: str, name: str = "localtime") -> str:
    path = tmp_path / name
    os.symlink(target, path)
    return str(path)


def test_e3_localtime_link_and_no_tz(tmp_path: Path) -> None:
    path = link(tmp_path, "/usr/share/zoneinfo/Australia/Adelaide")
    assert process_zone({}, path, canonicalize) == "Australia/Adelaide"
    assert sampled_zone({}, path, canonicalize) == "Australia/Adelaide"


@pytest.mark.parametrize(
    ("tz", "zone"),
    [
        (":Asia/Calcutta", "Asia/Kolkata"),
        ("", "UTC"),
        ("/usr/share/zoneinfo/posix/Europe/Paris", "Europe/Paris"),
        ("Asia/Calcutta", "Asia/Kolkata"),
        ("Europe/Berlin", "Europe/Berlin"),
        ("UTC", "UTC"),
        ("Etc/UTC", "UTC"),
        ("US/Eastern", "America/New_York"),
        (":/usr/share/zoneinfo/right/Asia/Tokyo", "Asia/Tokyo"),
        ("/opt/zoneinfo/old/zoneinfo/America/Sao_Paulo", "America/Sao_Paulo"),
        ("/usr/share/zoneinfo/Etc/../Europe/Oslo", "Europe/Oslo"),
    ],
)
def test_e7_tz_variable(tmp_path: Path, tz: str, zone: str) -> None:
    # TZ wins over a link that names another zone.
    path = link(tmp_path, "/usr/share/zoneinfo/Pacific/Chatham")
    assert process_zone({"TZ": tz}, path, canonicalize) == zone
    assert sampled_zone({"TZ": tz}, path, canonicalize) == zone


@pytest.mark.parametrize(
    "tz",
    ["CET-1CEST", "EST5EDT", "Japan", "utc", ":", "::Asia/Tokyo", "Mars/Olympus", "EST",
     "/etc/Europe/Paris", "/usr/share/zoneinfo/", " Europe/Paris", "<+03>-3"],
)
def test_e7_tz_that_names_no_zone_fails(tmp_path: Path, tz: str) -> None:
    path = link(tmp_path, "/usr/share/zoneinfo/Europe/Berlin")
    with pytest.raises(TimeContextConfigError) as caught:
        process_zone({"TZ": tz}, path, canonicalize)
    assert str(caught.value) == SYSTEM_FAILED
    assert sampled_zone({"TZ": tz}, path, canonicalize) is None


@pytest.mark.parametrize(
    "tz",
    ["/usr/share/zoneinfo/Europe/Paris\0", "/x\0/zoneinfo/UTC", "/x\ud800/zoneinfo/UTC",
     ":/usr/share/zoneinfo/Asia/\ud800", None, 1, b"UTC"],
)
def test_a_tz_the_os_cannot_take_fails_like_any_tz_that_names_no_zone(
    tmp_path: Path, tz: Any
) -> None:
    # time-context §8.2 rule 1 / time-context §8.3: a TZ path with a NUL byte or an unencodable
    # lone surrogate made os.path.realpath raise ValueError/UnicodeEncodeError, and a non-str TZ AttributeError,
    # instead of the documented failure (sampled_zone crashed instead of giving None).
    path = link(tmp_path, "/usr/share/zoneinfo/Europe/Berlin")
    with pytest.raises(TimeContextConfigError) as caught:
        process_zone({"TZ": tz}, path, canonicalize)
    assert str(caught.value) == SYSTEM_FAILED
    assert sampled_zone({"TZ": tz}, path, canonicalize) is None
    with pytest.raises(TimeContextConfigError, match=f"^{SYSTEM_FAILED}$"):
        TimeContext(ManualClock(), canonicalize=canonicalize, environ={"TZ": tz},
                    localtime_path=path)


@pytest.mark.parametrize("path", ["/etc/local\0time", "/etc/\ud800/localtime"])
def test_a_localtime_path_the_os_cannot_take_falls_back_to_utc(path: str) -> None:
    assert process_zone({}, path, canonicalize) == "UTC"
    assert sampled_zone({}, path, canonicalize) is None


def test_e7_localtime_link_to_etc_utc(tmp_path: Path) -> None:
    path = link(tmp_path, "/usr/share/zoneinfo/Etc/UTC")
    assert process_zone({}, path, canonicalize) == "UTC"
    assert sampled_zone({}, path, canonicalize) == "UTC"


def test_relative_and_chained_links_are_resolved(tmp_path: Path) -> None:
    zoneinfo_dir = tmp_path / "share" / "zoneinfo" / "America"
    zoneinfo_dir.mkdir(parents=True)
    (zoneinfo_dir / "Sao_Paulo").write_bytes(b"TZif")
    os.symlink("Sao_Paulo", zoneinfo_dir / "Alias")  # a link inside the database
    path = link(tmp_path, "share/zoneinfo/America/Alias")
    assert process_zone({}, path, canonicalize) == "America/Sao_Paulo"
    chained = link(tmp_path, path, "localtime2")
    assert process_zone({}, chained, canonicalize) == "America/Sao_Paulo"


@pytest.mark.parametrize(
    "target",
    ["db/zoneinfo/Mars/Olympus", "db/zoneinfo/EST5EDT", "db/zoneinfo", "db/zoneinfo/",
     "etc/timezone-file", "db/zoneinfo/Japan", "db/zoneinfo/posix"],
)
def test_a_link_that_names_no_zone_falls_back_to_utc(tmp_path: Path, target: str) -> None:
    # Dangling targets under tmp_path: the machine's own zone files cannot interfere.
    path = link(tmp_path, str(tmp_path / target))
    assert process_zone({}, path, canonicalize) == "UTC"
    assert sampled_zone({}, path, canonicalize) is None


def test_no_link_falls_back_to_utc(tmp_path: Path) -> None:
    regular = tmp_path / "localtime"
    regular.write_bytes(b"TZif")  # a copied zone file names no zone
    missing = tmp_path / "absent"
    for path in (str(regular), str(missing)):
        assert process_zone({"HOME": "/root"}, path, canonicalize) == "UTC"
        assert sampled_zone({}, path, canonicalize) is None
