"""GEO commands through redis-py's own helpers (RESP2 and RESP3): geoadd, geopos, geodist,
geohash, geosearch, geosearchstore, georadius, georadiusbymember, and a differential pass
against redis-server."""

import random

import pytest
import redis

SICILY = (13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania")


def test_geoadd_pos_dist_hash(r):
    assert r.geoadd("Sicily", SICILY) == 2
    assert r.geoadd("Sicily", (13.5, 38.1, "Palermo"), nx=True) == 0
    assert r.geoadd("Sicily", (13.5, 38.1, "Palermo", 1, 1, "X"), xx=True, ch=True) == 1
    assert r.geoadd("Sicily", SICILY[:3], ch=True) == 1
    pos = r.geopos("Sicily", "Palermo", "Catania", "nope")
    assert pos[0] == pytest.approx((13.361389, 38.115556), abs=1e-5)
    assert pos[1] == pytest.approx((15.087269, 37.502669), abs=1e-5)
    assert pos[2] is None
    assert r.geodist("Sicily", "Palermo", "Catania") == 166274.1516
    assert r.geodist("Sicily", "Palermo", "Catania", "km") == 166.2742
    assert r.geodist("Sicily", "Palermo", "nope") is None
    assert r.geohash("Sicily", "Palermo", "Catania", "nope") == ["sqc8b49rny0", "sqdtr74hyu0", None]
    with pytest.raises(redis.ResponseError, match=r"^invalid longitude,latitude pair 200\.000000,1\.000000$"):
        r.geoadd("Sicily", (200, 1, "bad"))
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        r.execute_command("GEOADD", "Sicily", "NX", "XX", 1, 1, "a")


def test_searches(r):
    r.geoadd("Sicily", SICILY)
    assert r.geosearch("Sicily", longitude=15, latitude=37, radius=200, unit="km", sort="ASC") == [
        "Catania",
        "Palermo",
    ]
    res = r.geosearch(
        "Sicily", member="Palermo", width=400, height=400, unit="km", sort="DESC",
        withdist=True, withcoord=True, withhash=True,
    )
    assert [x[0] for x in res] == ["Catania", "Palermo"]
    assert res[0][1] == 166.2742 and res[0][2] == 3479447370796909
    assert res[1][3] == pytest.approx((13.361389, 38.115556), abs=1e-5)
    assert r.georadius("Sicily", 15, 37, 200, "km", count=1) == ["Catania"]
    assert r.georadiusbymember("Sicily", "Palermo", 10, "km") == ["Palermo"]
    assert r.geosearchstore("dst", "Sicily", longitude=15, latitude=37, radius=200, unit="km", storedist=True) == 2
    assert r.zrange("dst", 0, -1) == ["Catania", "Palermo"]
    assert r.zscore("dst", "Palermo") == pytest.approx(190.4424, abs=1e-4)
    assert r.georadius("Sicily", 15, 37, 200, "km", store="dst2") == 2
    assert r.zscore("dst2", "Catania") == 3479447370796909
    assert r.geosearchstore("dst", "Sicily", longitude=15, latitude=37, radius=1, unit="m") == 0
    assert r.exists("dst") == 0
    with pytest.raises(redis.ResponseError, match=r"^could not decode requested zset member$"):
        r.geosearch("Sicily", member="nope", radius=1, unit="km")
    with pytest.raises(redis.ResponseError, match=r"^the ANY argument requires COUNT argument$"):
        r.execute_command("GEOSEARCH", "Sicily", "FROMLONLAT", 1, 1, "BYRADIUS", 1, "km", "ANY")


def test_differential(pair):
    t, ref = pair
    rng = random.Random(5)
    for c in (t, ref):
        c.flushall()
    points = []
    for i in range(300):
        points += [round(rng.uniform(-20, 20), 6), round(rng.uniform(-20, 20), 6), f"m{i}"]
    assert t.geoadd("g", points) == ref.geoadd("g", points) == 300
    for _ in range(100):
        lon, lat = round(rng.uniform(-20, 20), 6), round(rng.uniform(-20, 20), 6)
        radius = round(rng.uniform(1, 3000), 3)
        count = rng.choice([None, 1, 5, 50])
        kw = dict(withdist=True, withcoord=rng.random() < 0.5, withhash=rng.random() < 0.5)
        a = t.geosearch("g", longitude=lon, latitude=lat, radius=radius, unit="km", sort="ASC", count=count, **kw)
        b = ref.geosearch("g", longitude=lon, latitude=lat, radius=radius, unit="km", sort="ASC", count=count, **kw)
        assert a == b
        a = t.georadius("g", lon, lat, radius, "km", count=count, sort="DESC")
        b = ref.georadius("g", lon, lat, radius, "km", count=count, sort="DESC")
        assert a == b
