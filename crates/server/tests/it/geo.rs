//! GEO family against the real binary: every command, argument parsing and error texts,
//! RESP2 and RESP3 reply shapes, STORE/STOREDIST results (encodings, TTL, deletion), and a
//! randomized differential run against Debian's redis-server when it is installed (same
//! members, distances, coordinates, hashes and order, byte for byte).
use crate::common::{check, Server};

/// Replies rendered compactly; a RESP3 null is `(null)` and a nil array `(nilarr)`.
type Raw = crate::common::Raw<true>;

/// Run a scripted test on tern, then on redis-server when it is installed, so that every
/// expected reply is Redis's own.
fn on_both(f: fn(&Server)) {
    f(&Server::tern(&[]));
    if let Some(r) = Server::redis(&[]) {
        f(&r);
    }
}

const WRONGTYPE: &str = "!WRONGTYPE Operation against a key holding the wrong kind of value";

fn sicily(c: &mut Raw) {
    check(
        c,
        &[
            ("DEL Sicily", ":0"),
            (
                "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
                ":2",
            ),
        ],
    );
}

#[test]
fn geoadd_options_and_errors() {
    on_both(geoadd_options_and_errors_on);
}

fn geoadd_options_and_errors_on(s: &Server) {
    let mut c = Raw::new(s.port);
    sicily(&mut c);
    check(
        &mut c,
        &[
            ("ZSCORE Sicily Palermo", "3479099956230698"),
            ("ZSCORE Sicily Catania", "3479447370796909"),
            ("GEOADD Sicily 13.361389 38.115556 Palermo", ":0"),
            ("GEOADD Sicily NX 13.5 38.1 Palermo 15 37 X", ":1"),
            (
                "GEOPOS Sicily Palermo",
                "[[13.36138933897018433,38.11555639549629859]]",
            ),
            ("GEOADD Sicily XX 13.5 38.1 Palermo 15 37 Y", ":0"),
            (
                "GEOPOS Sicily Palermo",
                "[[13.50000053644180298,38.10000081174143105]]",
            ),
            ("EXISTS Y", ":0"),
            ("GEOADD Sicily XX CH 13.4 38.1 Palermo 15 37 Y", ":1"),
            ("GEOADD Sicily CH 13.4 38.1 Palermo 15.1 37 X 1 1 Z", ":2"),
            ("GEOADD Sicily ch nx 13.3 38.1 Palermo 2 2 W", ":1"),
            // The same member twice: added, then updated.
            ("GEOADD dup 1 1 a 2 2 a", ":1"),
            ("GEOADD dup2 CH 1 1 a 2 2 a", ":2"),
            ("GEOADD Sicily XX NX 1 1 a", "!ERR syntax error"),
            ("GEOADD Sicily NX XX CH", "!ERR syntax error"),
            ("GEOADD Sicily NX CH CH", "!ERR syntax error"),
            ("GEOADD Sicily 1 1 a 2", "!ERR syntax error"),
            ("GEOADD Sicily GT 1 a", "!ERR value is not a valid float"),
            ("GEOADD Sicily abc 1 a", "!ERR value is not a valid float"),
            ("GEOADD Sicily 1 1e400 a", "!ERR value is not a valid float"),
            ("GEOADD Sicily nan 1 a", "!ERR value is not a valid float"),
            (
                "GEOADD Sicily 200 100 a",
                "!ERR invalid longitude,latitude pair 200.000000,100.000000",
            ),
            (
                "GEOADD Sicily 1 1 ok 20 85.06 a",
                "!ERR invalid longitude,latitude pair 20.000000,85.060000",
            ),
            ("ZSCORE Sicily ok", "(nil)"),
            (
                "GEOADD Sicily -inf 0 a",
                "!ERR invalid longitude,latitude pair -inf,0.000000",
            ),
            ("GEOADD Sicily 180 85.05112878 edge", ":1"),
            ("GEOADD Sicily -180 -85.05112878 edge2", ":1"),
            (
                "GEOADD Sicily 1 1",
                "!ERR wrong number of arguments for 'geoadd' command",
            ),
            ("GEOADD newkey XX 1 1 a", ":0"),
            ("EXISTS newkey", ":0"),
            ("SET str x", "OK"),
            ("GEOADD str 1 1 a", WRONGTYPE),
            // Coordinates are checked before the key's type.
            (
                "GEOADD str 200 1 a",
                "!ERR invalid longitude,latitude pair 200.000000,1.000000",
            ),
        ],
    );
}

#[test]
fn geoadd_encodings() {
    on_both(geoadd_encodings_on);
}

fn geoadd_encodings_on(s: &Server) {
    let mut c = Raw::new(s.port);
    check(
        &mut c,
        &[
            ("GEOADD small 1 1 a 2 2 b", ":2"),
            ("OBJECT ENCODING small", "listpack"),
            ("CONFIG SET zset-max-listpack-entries 4", "OK"),
            ("GEOADD small 3 3 c 4 4 d 5 5 e", ":3"),
            ("OBJECT ENCODING small", "skiplist"),
            // More pairs than a listpack holds create a skiplist at once.
            ("GEOADD big 1 1 a 2 2 b 3 3 c 4 4 d 5 5 e", ":5"),
            ("OBJECT ENCODING big", "skiplist"),
            ("CONFIG SET zset-max-listpack-value 3", "OK"),
            ("GEOADD long 1 1 abcd", ":1"),
            ("OBJECT ENCODING long", "skiplist"),
            (
                "GEOSEARCH big FROMLONLAT 3 3 BYRADIUS 200 km ASC",
                "[c,d,b]",
            ),
        ],
    );
}

#[test]
fn geopos_geohash_geodist() {
    on_both(geopos_geohash_geodist_on);
}

fn geopos_geohash_geodist_on(s: &Server) {
    let mut c = Raw::new(s.port);
    sicily(&mut c);
    check(
        &mut c,
        &[
            (
                "GEOPOS Sicily Palermo Catania NonExisting",
                "[[13.36138933897018433,38.11555639549629859],[15.08726745843887329,37.50266842333162032],(nilarr)]",
            ),
            ("GEOPOS nokey a b", "[(nilarr),(nilarr)]"),
            ("GEOHASH Sicily Palermo Catania nope", "[sqc8b49rny0,sqdtr74hyu0,(nil)]"),
            ("GEOHASH nokey a", "[(nil)]"),
            ("GEOHASH Sicily", "[]"),
            ("GEOPOS Sicily", "[]"),
            ("GEODIST Sicily Palermo Catania", "166274.1516"),
            ("GEODIST Sicily Palermo Catania km", "166.2742"),
            ("GEODIST Sicily Palermo Catania KM", "166.2742"),
            ("GEODIST Sicily Palermo Catania mi", "103.3182"),
            ("GEODIST Sicily Palermo Catania ft", "545518.8700"),
            ("GEODIST Sicily Palermo Palermo", "0.0000"),
            ("GEODIST Sicily Palermo nope", "(nil)"),
            ("GEODIST nokey a b", "(nil)"),
            (
                "GEODIST Sicily Palermo Catania yd",
                "!ERR unsupported unit provided. please use M, KM, FT, MI",
            ),
            ("GEODIST Sicily Palermo Catania km x", "!ERR syntax error"),
            ("GEODIST nokey a b km x", "!ERR syntax error"),
            (
                "GEODIST Sicily a",
                "!ERR wrong number of arguments for 'geodist' command",
            ),
            ("ZADD plain 0 zero", ":1"),
            ("GEOPOS plain zero", "[[-179.99999731779098511,-85.05112751263942528]]"),
            ("SET str x", "OK"),
            ("GEOPOS str a", WRONGTYPE),
            ("GEOHASH str a", WRONGTYPE),
            ("GEODIST str a b", WRONGTYPE),
            // The unit is checked before the key.
            (
                "GEODIST str a b yd",
                "!ERR unsupported unit provided. please use M, KM, FT, MI",
            ),
        ],
    );
    // RESP3: coordinates are doubles, missing positions null.
    let mut c3 = Raw::resp3(s.port);
    assert_eq!(
        c3.q_raw("GEOPOS Sicily Palermo nope"),
        b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"
    );
    assert_eq!(
        c3.q_raw("GEOHASH Sicily Palermo nope"),
        b"*2\r\n$11\r\nsqc8b49rny0\r\n_\r\n"
    );
    assert_eq!(
        c3.q_raw("GEODIST Sicily Palermo Catania"),
        b"$11\r\n166274.1516\r\n"
    );
    assert_eq!(c3.q_raw("GEODIST Sicily Palermo nope"), b"_\r\n");
    let mut c2 = Raw::new(s.port);
    assert_eq!(c2.q_raw("GEOPOS Sicily nope"), b"*1\r\n*-1\r\n");
    assert_eq!(c2.q_raw("GEOHASH Sicily nope"), b"*1\r\n$-1\r\n");
}

#[test]
fn search_replies_and_options() {
    on_both(search_replies_and_options_on);
}

fn search_replies_and_options_on(s: &Server) {
    let mut c = Raw::new(s.port);
    sicily(&mut c);
    check(
        &mut c,
        &[
            ("GEOADD Sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2", ":2"),
            ("GEORADIUS Sicily 15 37 200 km ASC", "[Catania,Palermo]"),
            ("GEORADIUS Sicily 15 37 200 km DESC", "[Palermo,Catania]"),
            (
                "GEORADIUS Sicily 15 37 200 km WITHDIST ASC",
                "[[Catania,56.4413],[Palermo,190.4424]]",
            ),
            (
                "GEORADIUS Sicily 15 37 200 km WITHCOORD WITHDIST WITHHASH ASC",
                "[[Catania,56.4413,:3479447370796909,[15.08726745843887329,37.50266842333162032]],\
                 [Palermo,190.4424,:3479099956230698,[13.36138933897018433,38.11555639549629859]]]",
            ),
            ("GEORADIUS Sicily 15 37 200 km COUNT 1", "[Catania]"),
            ("GEORADIUS Sicily 15 37 200 km COUNT 1 DESC", "[Palermo]"),
            ("GEORADIUS Sicily 15 37 1 km", "[]"),
            ("GEORADIUS nokey 15 37 200 km", "[]"),
            ("GEORADIUSBYMEMBER Sicily Palermo 200 km ASC", "[Palermo,edge1,Catania]"),
            ("GEORADIUSBYMEMBER_RO Sicily Palermo 200 km ASC", "[Palermo,edge1,Catania]"),
            ("GEORADIUS_RO Sicily 15 37 200 km ASC", "[Catania,Palermo]"),
            ("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 KM ASC", "[Catania,Palermo]"),
            (
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHDIST",
                "[[Catania,56.4413],[Palermo,190.4424],[edge2,279.7403],[edge1,279.7405]]",
            ),
            (
                "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 200 200 km ASC",
                "[Palermo,edge1]",
            ),
            (
                "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 1 ANY",
                "[Palermo]",
            ),
            ("GEOSEARCH nokey FROMMEMBER x BYRADIUS 1 km", "[]"),
            // Errors, in Redis's order.
            ("GEOSEARCH Sicily FROMMEMBER nope BYRADIUS 1 km", "!ERR could not decode requested zset member"),
            ("GEORADIUSBYMEMBER Sicily nope 1 km", "!ERR could not decode requested zset member"),
            ("GEORADIUSBYMEMBER Sicily nope x km", "!ERR could not decode requested zset member"),
            // A missing key skips the member and the radius.
            ("GEORADIUSBYMEMBER nokey nope x km", "[]"),
            ("GEORADIUS Sicily 15 37 x km", "!ERR need numeric radius"),
            ("GEORADIUS Sicily 15 37 -1 km", "!ERR radius cannot be negative"),
            ("GEORADIUS Sicily 15 37 1 yd", "!ERR unsupported unit provided. please use M, KM, FT, MI"),
            ("GEORADIUS Sicily 15 x 1 km", "!ERR value is not a valid float"),
            ("GEORADIUS Sicily 15 95 1 km", "!ERR invalid longitude,latitude pair 15.000000,95.000000"),
            ("GEORADIUS Sicily 15 37 1 km COUNT 0", "!ERR COUNT must be > 0"),
            ("GEORADIUS Sicily 15 37 1 km COUNT -1", "!ERR COUNT must be > 0"),
            ("GEORADIUS Sicily 15 37 1 km COUNT x", "!ERR value is not an integer or out of range"),
            ("GEORADIUS Sicily 15 37 1 km COUNT", "!ERR syntax error"),
            ("GEORADIUS Sicily 15 37 1 km ANY", "!ERR the ANY argument requires COUNT argument"),
            ("GEORADIUS Sicily 15 37 1 km STORE", "!ERR syntax error"),
            ("GEORADIUS_RO Sicily 15 37 1 km STORE x", "!ERR syntax error"),
            ("GEORADIUSBYMEMBER_RO Sicily Palermo 1 km STOREDIST x", "!ERR syntax error"),
            (
                "GEORADIUS Sicily 15 37 1 km STORE x WITHDIST",
                "!ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            ),
            (
                "GEORADIUSBYMEMBER Sicily Palermo 1 km WITHHASH STOREDIST x",
                "!ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            ),
            (
                "GEOSEARCHSTORE dst Sicily FROMMEMBER Palermo BYRADIUS 1 km WITHCOORD",
                "!ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            ),
            ("GEOSEARCH Sicily BYRADIUS 1 km ASC WITHDIST", "!ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH"),
            ("geoSearch Sicily BYRADIUS 1 km ASC ASC", "!ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geoSearch"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 ASC ASC", "!ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH"),
            ("GEOSEARCHSTORE d Sicily FROMLONLAT 1 1 ASC ASC", "!ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCHSTORE"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 FROMMEMBER Palermo BYRADIUS 1 km", "!ERR syntax error"),
            ("GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 1 km", "!ERR syntax error"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km BYBOX 1 1 km", "!ERR syntax error"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1 km BYRADIUS 1 km", "!ERR syntax error"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km STORE x", "!ERR syntax error"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km STOREDIST", "!ERR syntax error"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX -1 1 km", "!ERR height or width cannot be negative"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX x 1 km", "!ERR need numeric width"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 x km", "!ERR need numeric height"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1", "!ERR syntax error"),
            ("GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km ANY", "!ERR the ANY argument requires COUNT argument"),
            ("SET str x", "OK"),
            ("GEOSEARCH str FROMLONLAT 1 1 BYRADIUS 1 km", WRONGTYPE),
            // The type is checked before anything else.
            ("GEORADIUS str 1 1 x km", WRONGTYPE),
            ("GEOSEARCHSTORE d str FROMLONLAT 1 1 BYRADIUS 1 km", WRONGTYPE),
            ("GEOSEARCH", "!ERR wrong number of arguments for 'geosearch' command"),
        ],
    );
    // RESP3: distances stay bulk strings, coordinates become doubles.
    let mut c3 = Raw::resp3(s.port);
    assert_eq!(
        c3.q_raw("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 100 km WITHDIST WITHHASH WITHCOORD"),
        b"*1\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n*2\r\n,15.08726745843887329\r\n,37.50266842333162032\r\n"
            .to_vec()
    );
    assert_eq!(
        c3.q_raw("GEOSEARCH nokey FROMLONLAT 15 37 BYRADIUS 100 km"),
        b"*0\r\n"
    );
}

#[test]
fn store_variants() {
    on_both(store_variants_on);
}

fn store_variants_on(s: &Server) {
    let mut c = Raw::new(s.port);
    sicily(&mut c);
    check(
        &mut c,
        &[
            ("GEORADIUS Sicily 15 37 200 km STORE dst", ":2"),
            (
                "ZRANGE dst 0 -1 WITHSCORES",
                "[Palermo,3479099956230698,Catania,3479447370796909]",
            ),
            ("OBJECT ENCODING dst", "listpack"),
            ("GEORADIUS Sicily 15 37 200 km STOREDIST dst", ":2"),
            ("ZRANGE dst 0 -1", "[Catania,Palermo]"),
            ("GEORADIUS Sicily 15 37 200 km STOREDIST dst COUNT 1", ":1"),
            ("ZRANGE dst 0 -1", "[Catania]"),
            // The last STORE/STOREDIST wins.
            ("GEORADIUS Sicily 15 37 200 km STORE a STOREDIST b", ":2"),
            ("EXISTS a b", ":1"),
            ("ZSCORE b Palermo", "190.44242984775784"),
            ("GEORADIUSBYMEMBER Sicily Palermo 10 km STORE dst2", ":1"),
            ("ZRANGE dst2 0 -1", "[Palermo]"),
            (
                "GEOSEARCHSTORE dst3 Sicily FROMLONLAT 15 37 BYBOX 400 400 km STOREDIST",
                ":2",
            ),
            ("ZRANGE dst3 0 -1", "[Catania,Palermo]"),
            (
                "GEOSEARCHSTORE dst3 Sicily FROMLONLAT 15 37 BYBOX 400 400 km COUNT 1 DESC",
                ":1",
            ),
            ("ZRANGE dst3 0 -1 WITHSCORES", "[Palermo,3479099956230698]"),
            // The destination's type and TTL are replaced.
            ("SET str x EX 100", "OK"),
            (
                "GEOSEARCHSTORE str Sicily FROMLONLAT 15 37 BYRADIUS 200 km",
                ":2",
            ),
            ("TYPE str", "zset"),
            ("TTL str", ":-1"),
            // Empty results delete the destination.
            (
                "GEOSEARCHSTORE str Sicily FROMLONLAT 15 37 BYRADIUS 1 m",
                ":0",
            ),
            ("EXISTS str", ":0"),
            ("SET str x", "OK"),
            ("GEORADIUS nokey 15 37 200 km STORE str", ":0"),
            ("EXISTS str", ":0"),
            ("SET str x", "OK"),
            ("GEORADIUSBYMEMBER nokey m 200 km STORE str", ":0"),
            ("EXISTS str", ":0"),
            ("GEOSEARCHSTORE str nokey FROMMEMBER m BYRADIUS 1 km", ":0"),
            // Source and destination may be the same key.
            (
                "GEOSEARCHSTORE Sicily Sicily FROMMEMBER Palermo BYRADIUS 10 km",
                ":1",
            ),
            ("ZRANGE Sicily 0 -1", "[Palermo]"),
            (
                "GEOPOS Sicily Palermo",
                "[[13.36138933897018433,38.11555639549629859]]",
            ),
        ],
    );
    // Bigger results become skiplists.
    let mut args = vec!["GEOADD".to_string(), "many".to_string()];
    for i in 0..200 {
        args.push(format!("{}", 10.0 + i as f64 * 0.001));
        args.push("45".into());
        args.push(format!("m{i}"));
    }
    let words: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send(&words);
    assert_eq!(c.read(), ":200");
    check(
        &mut c,
        &[
            ("OBJECT ENCODING many", "skiplist"),
            (
                "GEOSEARCHSTORE out many FROMLONLAT 10.1 45 BYRADIUS 100 km",
                ":200",
            ),
            ("OBJECT ENCODING out", "skiplist"),
            (
                "GEOSEARCHSTORE out many FROMLONLAT 10.1 45 BYRADIUS 100 km COUNT 10",
                ":10",
            ),
            ("OBJECT ENCODING out", "listpack"),
            (
                "GEOSEARCH many FROMLONLAT 10.1 45 BYRADIUS 100 km COUNT 3",
                "[m100,m99,m101]",
            ),
            ("ZCARD many", ":200"),
        ],
    );
}

#[test]
fn command_info_and_keys() {
    on_both(command_info_and_keys_on);
}

fn command_info_and_keys_on(s: &Server) {
    let mut c = Raw::new(s.port);
    check(
        &mut c,
        &[
            (
                "COMMAND GETKEYS GEORADIUS k 0 0 10 km STORE a STOREDIST b",
                "[k,a,b]",
            ),
            (
                "COMMAND GETKEYS GEORADIUSBYMEMBER k m 10 km STORE a",
                "[k,a]",
            ),
            (
                "COMMAND GETKEYS GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km",
                "[d,s]",
            ),
            (
                "COMMAND GETKEYS GEOSEARCH s FROMMEMBER m BYRADIUS 1 km",
                "[s]",
            ),
        ],
    );
    let info = c.q("COMMAND INFO georadius");
    assert!(
        info.starts_with(
            "[[georadius,:-6,[write,denyoom,movablekeys],:1,:1,:1,[@write,@geo,@slow]"
        ),
        "{info}"
    );
}

// ---------------------------------------------------------------------------------------------
// Differential run against redis-server
// ---------------------------------------------------------------------------------------------

struct Lcg(u64);

impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn between(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.unit()
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.unit() * xs.len() as f64) as usize % xs.len()]
    }
}

/// `GEO_DIFF_SEED` and `GEO_DIFF_ROUNDS` vary the run (defaults 42 and 300).
#[test]
fn differential_against_redis() {
    let Some(r) = Server::redis(&[]) else {
        eprintln!("redis-server not installed: skipping");
        return;
    };
    let t = Server::tern(&[]);
    for resp3 in [false, true] {
        let (mut a, mut b) = if resp3 {
            (Raw::resp3(t.port), Raw::resp3(r.port))
        } else {
            (Raw::new(t.port), Raw::new(r.port))
        };
        let mut same = |cmd: &str| {
            let (x, y) = (a.q_raw(cmd), b.q_raw(cmd));
            assert_eq!(
                String::from_utf8_lossy(&x),
                String::from_utf8_lossy(&y),
                "command: {cmd}"
            );
        };
        let seed: u64 = std::env::var("GEO_DIFF_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(42);
        let mut rng = Lcg(if resp3 { seed + 7 } else { seed });
        same("FLUSHALL");
        let centers = [
            (13.4, 38.1),
            (-122.4, 37.8),
            (0.0, 0.0),
            (179.9, -84.9),
            (-179.9, 84.9),
        ];
        // Two indexes: a small listpack one and a big skiplist one.
        for (key, n) in [("small", 60), ("big", 1500)] {
            let mut i = 0;
            while i < n {
                let mut cmd = format!("GEOADD {key}");
                for _ in 0..25.min(n - i) {
                    let (lon, lat) = if i % 2 == 0 {
                        (rng.between(-180.0, 180.0), rng.between(-85.05, 85.05))
                    } else {
                        let c = centers[i % centers.len()];
                        let spread = [0.01, 0.5, 5.0][i % 3];
                        (
                            (c.0 + rng.between(-spread, spread)).clamp(-180.0, 180.0),
                            (c.1 + rng.between(-spread, spread)).clamp(-85.05, 85.05),
                        )
                    };
                    cmd += &format!(" {lon:.6} {lat:.6} p{i}");
                    i += 1;
                }
                same(&cmd);
            }
        }
        same("OBJECT ENCODING small");
        same("OBJECT ENCODING big");
        let units = ["m", "km", "mi", "ft", "KM"];
        let factor = |u: &str| match u.to_ascii_lowercase().as_str() {
            "km" => 1000.0,
            "mi" => 1609.34,
            "ft" => 0.3048,
            _ => 1.0,
        };
        let rounds: usize = std::env::var("GEO_DIFF_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300);
        for round in 0..rounds {
            let key = if round % 4 == 0 { "small" } else { "big" };
            let (lon, lat) = if round % 2 == 0 {
                (rng.between(-180.0, 180.0), rng.between(-85.05, 85.05))
            } else {
                let c = centers[round % centers.len()];
                (
                    (c.0 + rng.between(-1.0, 1.0)).clamp(-180.0, 180.0),
                    (c.1 + rng.between(-1.0, 1.0)).clamp(-85.05, 85.05),
                )
            };
            let unit = units[round % units.len()];
            let metres = 10f64.powf(rng.between(0.0, 7.3));
            let size = format!("{:.3}", metres / factor(unit));
            let size2 = format!("{:.3}", metres * rng.between(0.2, 3.0) / factor(unit));
            let mut opts = String::new();
            for o in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
                if rng.unit() < 0.4 {
                    opts += &format!(" {o}");
                }
            }
            let sort = rng.pick(&["", " ASC", " DESC"]);
            opts += sort;
            let count = (rng.unit() * 8.0) as u32;
            if rng.unit() < 0.5 {
                opts += &format!(" COUNT {}", count + 1);
                if rng.unit() < 0.3 {
                    opts += " ANY";
                }
            }
            let member = format!("p{}", (rng.unit() * 60.0) as u32);
            let from = if rng.unit() < 0.3 {
                format!("FROMMEMBER {member}")
            } else {
                format!("FROMLONLAT {lon:.6} {lat:.6}")
            };
            let by = if round % 3 == 0 {
                format!("BYBOX {size} {size2} {unit}")
            } else {
                format!("BYRADIUS {size} {unit}")
            };
            same(&format!("GEOSEARCH {key} {from} {by}{opts}"));
            same(&format!(
                "GEORADIUS {key} {lon:.6} {lat:.6} {size} {unit}{opts}"
            ));
            same(&format!(
                "GEORADIUSBYMEMBER_RO {key} {member} {size} {unit}{opts}"
            ));
            // Stores compare through the stored members and their positions.
            let store_opts = sort.to_string()
                + if opts.contains("COUNT") {
                    " COUNT 3"
                } else {
                    ""
                };
            same(&format!("GEOSEARCHSTORE dst {key} {from} {by}{store_opts}"));
            same("ZRANGE dst 0 -1");
            same("GEOPOS dst p0 p1 p2 p3 p4 p5");
            same(&format!(
                "GEORADIUS {key} {lon:.6} {lat:.6} {size} {unit} STOREDIST dst2{store_opts}"
            ));
            same("ZRANGE dst2 0 -1");
            same("EXISTS dst dst2");
        }
        for m in ["p0", "p1", "p7", "p31", "nope"] {
            same(&format!("GEOPOS big {m} p2 p3"));
            same(&format!("GEOHASH big {m} p2 p3"));
            for u in ["", " km", " mi", " ft"] {
                same(&format!("GEODIST big {m} p5{u}"));
            }
        }
    }
}
