//! Per-database overrides of the memory and persistence policies: `db-maxmemory`,
//! `db-maxmemory-policy`, `db-persistence`, `db-appendfsync`. Each value is a list of
//! `<db> <setting>` pairs, like `client-output-buffer-limit`'s classes: setting one merges it
//! into the list (per database, the last one wins), and a setting equal to the global default
//! (`0`, `default`, `yes`) drops the database's override. An empty value clears them all.
//! The canonical form, what CONFIG GET prints and CONFIG REWRITE writes, lists the overrides
//! by database number.

use super::params::MAXMEMORY_POLICIES;
use super::values::{memtoull, strtoll_full};

/// The parameters this module gives their syntax.
pub const DB_OVERRIDE_PARAMS: &[&str] = &[
    "db-maxmemory",
    "db-maxmemory-policy",
    "db-persistence",
    "db-appendfsync",
];

pub fn is_db_override(name: &str) -> bool {
    DB_OVERRIDE_PARAMS.contains(&name)
}

/// The `(db, setting)` pairs of a canonical value.
pub fn db_pairs(canonical: &str) -> impl Iterator<Item = (usize, &str)> {
    let words: Vec<&str> = canonical.split_whitespace().collect();
    let pairs: Vec<(usize, &str)> = words
        .chunks_exact(2)
        .filter_map(|c| Some((c[0].parse().ok()?, c[1])))
        .collect();
    pairs.into_iter()
}

/// Validate `argv` (pairs) for parameter `name` and merge it into `current`, for a server
/// of `databases` databases. Returns the new canonical value or Redis-style error text.
pub fn merge(
    name: &str,
    argv: &[String],
    current: &str,
    databases: usize,
) -> Result<String, String> {
    if argv.is_empty() || (argv.len() == 1 && argv[0].is_empty()) {
        return Ok(String::new());
    }
    if !argv.len().is_multiple_of(2) {
        return Err(format!(
            "wrong number of arguments, {name} takes <db> <value> pairs"
        ));
    }
    let mut merged: Vec<(usize, String)> = db_pairs(current)
        .map(|(db, v)| (db, v.to_string()))
        .collect();
    for pair in argv.chunks(2) {
        let db = strtoll_full(&pair[0])
            .filter(|db| (0..databases as i64).contains(db) && !pair[0].is_empty())
            .ok_or_else(|| {
                format!(
                    "Invalid argument '{}' for {name}: the database index must be between 0 and {}",
                    pair[0],
                    databases.saturating_sub(1)
                )
            })? as usize;
        let setting = canonical_setting(name, &pair[1]).ok_or_else(|| {
            format!(
                "Invalid argument '{}' for {name} of database {db}: {}",
                pair[1],
                expected(name)
            )
        })?;
        merged.retain(|(d, _)| *d != db);
        if let Some(s) = setting {
            merged.push((db, s));
        }
    }
    merged.sort_by_key(|(db, _)| *db);
    Ok(merged
        .iter()
        .map(|(db, s)| format!("{db} {s}"))
        .collect::<Vec<_>>()
        .join(" "))
}

/// A setting's canonical form: Some(None) when it is the global default (no override),
/// None when it is invalid.
fn canonical_setting(name: &str, v: &str) -> Option<Option<String>> {
    let lower = v.to_ascii_lowercase();
    let keep = |s: &str| Some(Some(s.to_string()));
    match name {
        "db-maxmemory" => match memtoull(v)? {
            0 => Some(None),
            bytes => keep(&bytes.to_string()),
        },
        "db-maxmemory-policy" => match lower.as_str() {
            "default" => Some(None),
            p if MAXMEMORY_POLICIES.iter().any(|(n, _)| *n == p) => keep(p),
            _ => None,
        },
        "db-persistence" => match lower.as_str() {
            "yes" => Some(None),
            "no" => keep("no"),
            _ => None,
        },
        "db-appendfsync" => match lower.as_str() {
            "default" => Some(None),
            "always" | "everysec" | "no" => keep(&lower),
            _ => None,
        },
        _ => None,
    }
}

fn expected(name: &str) -> &'static str {
    match name {
        "db-maxmemory" => "argument must be a memory value (0: no quota)",
        "db-maxmemory-policy" => {
            "must be one of volatile-lru, volatile-lfu, volatile-random, volatile-ttl, \
             allkeys-lru, allkeys-lfu, allkeys-random, noeviction, default"
        }
        "db-persistence" => "argument must be 'yes' or 'no'",
        _ => "must be one of always, everysec, no, default",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn merges_per_database_and_drops_defaults() {
        let v = merge("db-maxmemory", &args("3 2gb 1 100mb"), "", 16).unwrap();
        assert_eq!(v, "1 104857600 3 2147483648");
        let v = merge("db-maxmemory", &args("3 0 2 1kb"), &v, 16).unwrap();
        assert_eq!(v, "1 104857600 2 1024");
        assert_eq!(merge("db-maxmemory", &args(""), &v, 16).unwrap(), "");
        let p = merge("db-maxmemory-policy", &args("1 ALLKEYS-LRU"), "", 16).unwrap();
        assert_eq!(p, "1 allkeys-lru");
        assert_eq!(
            merge("db-maxmemory-policy", &args("1 default"), &p, 16).unwrap(),
            ""
        );
        assert_eq!(
            merge("db-persistence", &args("1 no 2 yes"), "", 16).unwrap(),
            "1 no"
        );
        assert_eq!(
            merge("db-appendfsync", &args("2 always 1 no"), "", 16).unwrap(),
            "1 no 2 always"
        );
    }

    #[test]
    fn rejects_bad_pairs() {
        let e = merge("db-maxmemory", &args("16 1mb"), "", 16).unwrap_err();
        assert!(e.contains("between 0 and 15"), "{e}");
        assert!(merge("db-maxmemory", &args("-1 1mb"), "", 16).is_err());
        assert!(merge("db-maxmemory", &args("1"), "", 16).is_err());
        assert!(merge("db-maxmemory", &args("1 lots"), "", 16).is_err());
        assert!(merge("db-maxmemory-policy", &args("1 lru"), "", 16).is_err());
        assert!(merge("db-persistence", &args("1 maybe"), "", 16).is_err());
        assert!(merge("db-appendfsync", &args("1 sometimes"), "", 16).is_err());
    }
}
