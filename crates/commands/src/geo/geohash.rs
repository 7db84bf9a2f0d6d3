//! Geohash arithmetic behind the GEO commands, computed the way Redis does so that scores,
//! positions, distances, GEOHASH strings and GEOSEARCH candidate boxes come out identical.
//!
//! A position is stored as a sorted-set score: a 52-bit cell id made of 26 latitude bits and
//! 26 longitude bits interleaved (longitude in the odd bit positions), over the Web-Mercator
//! latitude range ±85.05112878 and longitude ±180. GEOSEARCH looks at the cell containing the
//! centre at a precision chosen from the radius plus its eight neighbours, each one a score
//! range of the sorted set, and filters the members by exact distance.

/// 26 bits per coordinate: 52-bit scores, exactly representable as doubles.
pub const STEP_MAX: u8 = 26;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// Earth's quadratic mean radius (WGS-84) used by every distance.
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the Mercator world width in metres, the base of the precision estimate.
pub const MERCATOR_MAX: f64 = 20037726.37;

/// Degrees to radians with the same constant arithmetic as Redis (multiply by π/180).
use tern_runtime::args::parse_f64;

const D_R: f64 = std::f64::consts::PI / 180.0;

#[inline]
fn deg_rad(a: f64) -> f64 {
    a * D_R
}

#[inline]
fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// A cell: `step` bits per coordinate, interleaved into `bits`. The all-zero value (bits 0,
/// step 0) means "no cell" (a neighbour excluded from a search).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    pub const NONE: HashBits = HashBits { bits: 0, step: 0 };

    pub fn is_none(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

impl Range {
    fn is_zero(&self) -> bool {
        self.min == 0.0 && self.max == 0.0
    }
}

/// The coordinate ranges of stored scores.
pub const WGS84_LONG: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
pub const WGS84_LAT: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};
/// The ranges of standard geohash strings (GEOHASH re-encodes into these).
pub const STANDARD_LONG: Range = Range {
    min: -180.0,
    max: 180.0,
};
pub const STANDARD_LAT: Range = Range {
    min: -90.0,
    max: 90.0,
};

/// The rectangle a cell covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    pub hash: HashBits,
    pub longitude: Range,
    pub latitude: Range,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Neighbors {
    pub north: HashBits,
    pub east: HashBits,
    pub west: HashBits,
    pub south: HashBits,
    pub north_east: HashBits,
    pub south_east: HashBits,
    pub north_west: HashBits,
    pub south_west: HashBits,
}

/// Spread the 32 bits of `v` to the even bit positions of a u64.
fn spread(v: u32) -> u64 {
    let mut x = v as u64;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gather the even bit positions of `v` into 32 bits.
fn gather(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// Latitude bits in the even positions, longitude bits in the odd ones.
pub fn interleave(lat: u32, lon: u32) -> u64 {
    spread(lat) | (spread(lon) << 1)
}

/// The inverse of `interleave`: (latitude bits, longitude bits).
pub fn deinterleave(bits: u64) -> (u32, u32) {
    (gather(bits), gather(bits >> 1))
}

/// The cell of `step` bits per coordinate holding a position, within the given ranges.
/// None for positions outside the storable limits or outside the ranges.
pub fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step == 0 || step > 32 || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    // Truncation to 32-bit fixed point; the upper edge (offset == 2^step) is kept as is, which
    // is how a longitude of exactly 180 gets its out-of-range score in Redis too.
    Some(HashBits {
        bits: interleave(lat_offset as u32, long_offset as u32),
        step,
    })
}

pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, step)
}

/// The rectangle covered by a cell. None for the "no cell" value.
pub fn decode(long_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_none() || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    let (ilat, ilon) = deinterleave(hash.bits);
    let cells = (1u64 << hash.step) as f64;
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    Some(Area {
        hash,
        latitude: Range {
            min: lat_range.min + (ilat as f64 / cells) * lat_scale,
            max: lat_range.min + ((ilat as f64 + 1.0) / cells) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (ilon as f64 / cells) * long_scale,
            max: long_range.min + ((ilon as f64 + 1.0) / cells) * long_scale,
        },
    })
}

pub fn decode_wgs84(hash: HashBits) -> Option<Area> {
    decode(WGS84_LONG, WGS84_LAT, hash)
}

/// The centre of an area, clamped to the storable limits: (longitude, latitude).
pub fn area_center(area: &Area) -> (f64, f64) {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The cell id shifted to 52 bits (the sorted-set score of a full-precision cell).
pub fn align52(hash: HashBits) -> u64 {
    hash.bits << (52 - hash.step as u32 * 2)
}

/// The score GEOADD stores for a position, or None when it is outside the limits.
pub fn score_of(longitude: f64, latitude: f64) -> Option<f64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(|h| align52(h) as f64)
}

/// A score converted to cell bits as C's `(uint64_t)` cast does on x86-64: negative scores wrap
/// (two's complement of the truncated integer), out-of-range ones give the "integer
/// indefinite" pattern. Only sorted sets filled by ZADD hold such scores.
pub fn score_bits(score: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    let cvt = |x: f64| -> u64 {
        if !(-TWO63..TWO63).contains(&x) {
            1u64 << 63
        } else {
            x as i64 as u64
        }
    };
    if score < TWO63 {
        cvt(score)
    } else {
        cvt(score - TWO63) ^ (1u64 << 63)
    }
}

/// The position (longitude, latitude) a score stands for, as GEOPOS reports it.
pub fn position_of(score: f64) -> Option<(f64, f64)> {
    let hash = HashBits {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    decode_wgs84(hash).map(|a| area_center(&a))
}

/// Are these coordinates storable? (GEOADD, GEOSEARCH FROMLONLAT, GEORADIUS check this.)
pub fn valid_lonlat(longitude: f64, latitude: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&longitude) && (LAT_MIN..=LAT_MAX).contains(&latitude)
}

/// The error for coordinates outside the limits, formatted like C's `%f`.
pub fn invalid_lonlat_error(longitude: f64, latitude: f64) -> String {
    format!("ERR invalid longitude,latitude pair {longitude:.6},{latitude:.6}")
}

const BASE32: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// The 11-character GEOHASH string of a score: the position is decoded, then re-encoded over
/// the standard ±90 latitude range; the 11th character stands for bits Redis does not keep.
pub fn geohash_string(score: f64) -> Option<[u8; 11]> {
    let (lon, lat) = position_of(score)?;
    let bits = encode(STANDARD_LONG, STANDARD_LAT, lon, lat, STEP_MAX).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = BASE32[idx as usize];
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// Neighbours
// ---------------------------------------------------------------------------------------------

const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
const EVEN: u64 = 0x5555_5555_5555_5555;

/// Step the longitude part (odd bits) of a cell by one cell east (+) or west (-), wrapping.
fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - hash.step as u32 * 2;
    let mut x = hash.bits & ODD;
    let y = hash.bits & EVEN;
    let zz = EVEN >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= ODD >> shift;
    hash.bits = x | y;
}

/// Step the latitude part (even bits) of a cell by one cell north (+) or south (-), wrapping.
fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - hash.step as u32 * 2;
    let x = hash.bits & ODD;
    let mut y = hash.bits & EVEN;
    let zz = ODD >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= EVEN >> shift;
    hash.bits = x | y;
}

/// The eight cells around a cell, at the same precision.
pub fn neighbors(hash: HashBits) -> Neighbors {
    let at = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: at(1, 0),
        west: at(-1, 0),
        south: at(0, -1),
        north: at(0, 1),
        north_west: at(-1, 1),
        north_east: at(1, 1),
        south_east: at(1, -1),
        south_west: at(-1, -1),
    }
}

// ---------------------------------------------------------------------------------------------
// Distances
// ---------------------------------------------------------------------------------------------

/// Distance along a meridian between two latitudes, in metres.
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Great-circle (haversine) distance in metres between two (longitude, latitude) points.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    // Same meridian: the haversine reduces to the latitude difference.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// The distance from the centre (x1, y1) to (x2, y2) when it is within `radius` metres.
pub fn distance_if_in_radius(x1: f64, y1: f64, x2: f64, y2: f64, radius: f64) -> Option<f64> {
    let d = distance(x1, y1, x2, y2);
    (d <= radius).then_some(d)
}

/// The distance from the centre (x1, y1) of a `width_m` × `height_m` box to (x2, y2) when the
/// point lies in the box (half-height along the meridian, half-width along its parallel).
pub fn distance_if_in_rectangle(
    width_m: f64,
    height_m: f64,
    x1: f64,
    y1: f64,
    x2: f64,
    y2: f64,
) -> Option<f64> {
    if lat_distance(y2, y1) > height_m / 2.0 {
        return None;
    }
    if distance(x2, y2, x1, y2) > width_m / 2.0 {
        return None;
    }
    Some(distance(x1, y1, x2, y2))
}

/// Metres per unit for GEO's unit arguments (case-insensitive m, km, ft, mi).
pub fn unit_factor(unit: &[u8]) -> Option<f64> {
    [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)]
        .into_iter()
        .find(|(name, _)| unit.eq_ignore_ascii_case(name.as_bytes()))
        .map(|(_, f)| f)
}

pub const ERR_UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";

/// A distance as GEODIST/WITHDIST print it: rounded (half to even) to 4 decimals.
pub fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    let scaled = (d * 10_000.0).round_ties_even();
    let neg = scaled < 0.0;
    let v = scaled.abs() as u64;
    format!(
        "{}{}.{:04}",
        if neg { "-" } else { "" },
        v / 10_000,
        v % 10_000
    )
}

/// A longitude/latitude argument pair, with Redis's errors (not a float; outside the limits).
pub fn parse_lonlat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), String> {
    let (Some(x), Some(y)) = (parse_f64(lon), parse_f64(lat)) else {
        return Err(tern_runtime::args::ERR_NOT_FLOAT.to_string());
    };
    if !valid_lonlat(x, y) {
        return Err(invalid_lonlat_error(x, y));
    }
    Ok((x, y))
}

/// BYRADIUS / GEORADIUS `<radius> <unit>`: (radius in units, metres per unit).
pub fn parse_radius(radius: &[u8], unit: &[u8]) -> Result<(f64, f64), &'static str> {
    let r = parse_f64(radius).ok_or("ERR need numeric radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative");
    }
    Ok((r, unit_factor(unit).ok_or(ERR_UNIT)?))
}

/// BYBOX `<width> <height> <unit>`: (width, height in units, metres per unit).
pub fn parse_box(
    width: &[u8],
    height: &[u8],
    unit: &[u8],
) -> Result<(f64, f64, f64), &'static str> {
    let w = parse_f64(width).ok_or("ERR need numeric width")?;
    let h = parse_f64(height).ok_or("ERR need numeric height")?;
    if w < 0.0 || h < 0.0 {
        return Err("ERR height or width cannot be negative");
    }
    Ok((w, h, unit_factor(unit).ok_or(ERR_UNIT)?))
}

// ---------------------------------------------------------------------------------------------
// Search areas (GEOSEARCH / GEORADIUS)
// ---------------------------------------------------------------------------------------------

/// The search shape: a radius or a width × height box, in `conversion` metres per unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ShapeKind {
    Circle { radius: f64 },
    Box { width: f64, height: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Centre (longitude, latitude).
    pub center: (f64, f64),
    /// Metres per unit of the radius / width / height.
    pub conversion: f64,
    pub kind: ShapeKind,
}

/// The cells a search looks into, with the bounding box they were chosen for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchAreas {
    pub hash: HashBits,
    pub area: Area,
    pub neighbors: Neighbors,
    /// [min longitude, min latitude, max longitude, max latitude].
    pub bounds: [f64; 4],
}

/// How many bits per coordinate a search of this radius (metres) at this latitude uses.
pub fn estimate_steps_by_radius(range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return STEP_MAX;
    }
    let mut range = range_m;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Cells get narrower towards the poles: take bigger ones.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u8
}

/// The longitude/latitude bounding box of a shape: [min lon, min lat, max lon, max lat].
/// The longitude span is taken at the latitude edge farther from the equator.
pub fn bounding_box(shape: &Shape) -> [f64; 4] {
    let (longitude, latitude) = shape.center;
    let (h, w) = match shape.kind {
        ShapeKind::Circle { radius } => (radius, radius),
        ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
    };
    let height = shape.conversion * h;
    let width = shape.conversion * w;
    let lat_delta = rad_deg(height / EARTH_RADIUS_M);
    let long_delta_top = rad_deg(width / EARTH_RADIUS_M / deg_rad(latitude + lat_delta).cos());
    let long_delta_bottom = rad_deg(width / EARTH_RADIUS_M / deg_rad(latitude - lat_delta).cos());
    let long_delta = if latitude < 0.0 {
        long_delta_bottom
    } else {
        long_delta_top
    };
    [
        longitude - long_delta,
        latitude - lat_delta,
        longitude + long_delta,
        latitude + lat_delta,
    ]
}

/// The centre cell and neighbours covering a shape, at the precision Redis picks (one level
/// coarser when a neighbour does not reach the bounding box), with the neighbours that lie
/// wholly outside the box removed.
pub fn areas_for_shape(shape: &Shape) -> SearchAreas {
    let bounds = bounding_box(shape);
    let [min_lon, min_lat, max_lon, max_lat] = bounds;
    let (longitude, latitude) = shape.center;
    let radius_m = match shape.kind {
        ShapeKind::Circle { radius } => radius,
        ShapeKind::Box { width, height } => {
            ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
        }
    } * shape.conversion;
    let mut steps = estimate_steps_by_radius(radius_m, latitude);

    let cell_at = |steps: u8| {
        let hash = encode_wgs84(longitude, latitude, steps).unwrap_or(HashBits {
            bits: 0,
            step: steps,
        });
        let n = neighbors(hash);
        (hash, n, decode_wgs84(hash))
    };
    let (mut hash, mut n, mut area) = cell_at(steps);

    let reaches = |h: HashBits| decode_wgs84(h);
    let mut decrease = false;
    if let Some(a) = reaches(n.north) {
        decrease |= a.latitude.max < max_lat;
    }
    if let Some(a) = reaches(n.south) {
        decrease |= a.latitude.min > min_lat;
    }
    if let Some(a) = reaches(n.east) {
        decrease |= a.longitude.max < max_lon;
    }
    if let Some(a) = reaches(n.west) {
        decrease |= a.longitude.min > min_lon;
    }
    if steps > 1 && decrease {
        steps -= 1;
        (hash, n, area) = cell_at(steps);
    }

    let area = area.unwrap_or(Area {
        hash,
        longitude: Range { min: 0.0, max: 0.0 },
        latitude: Range { min: 0.0, max: 0.0 },
    });
    if steps >= 2 {
        if area.latitude.min < min_lat {
            n.south = HashBits::NONE;
            n.south_west = HashBits::NONE;
            n.south_east = HashBits::NONE;
        }
        if area.latitude.max > max_lat {
            n.north = HashBits::NONE;
            n.north_east = HashBits::NONE;
            n.north_west = HashBits::NONE;
        }
        if area.longitude.min < min_lon {
            n.west = HashBits::NONE;
            n.south_west = HashBits::NONE;
            n.north_west = HashBits::NONE;
        }
        if area.longitude.max > max_lon {
            n.east = HashBits::NONE;
            n.south_east = HashBits::NONE;
            n.north_east = HashBits::NONE;
        }
    }
    SearchAreas {
        hash,
        area,
        neighbors: n,
        bounds,
    }
}

/// The cells to scan, in Redis's order (centre, N, S, E, W, NE, NW, SE, SW), without removed
/// neighbours and without a cell equal to the previously scanned neighbour (huge radii make
/// neighbours coincide).
pub fn cells_to_scan(areas: &SearchAreas) -> Vec<HashBits> {
    let n = &areas.neighbors;
    let all = [
        areas.hash,
        n.north,
        n.south,
        n.east,
        n.west,
        n.north_east,
        n.north_west,
        n.south_east,
        n.south_west,
    ];
    let mut out = Vec::with_capacity(9);
    let mut last = 0usize;
    for (i, h) in all.iter().enumerate() {
        if h.is_none() {
            continue;
        }
        if last != 0 && *h == all[last] {
            continue;
        }
        out.push(*h);
        last = i;
    }
    out
}

/// The score range [min, max) of the members inside a cell.
pub fn score_range(hash: HashBits) -> (u64, u64) {
    let min = align52(hash);
    let max = align52(HashBits {
        bits: hash.bits + 1,
        step: hash.step,
    });
    (min, max)
}

/// Does the member with this score fall in the shape? Returns its position and its distance
/// from the centre in metres.
pub fn within_shape(shape: &Shape, score: f64) -> Option<((f64, f64), f64)> {
    let (lon, lat) = position_of(score)?;
    let (cx, cy) = shape.center;
    let d = match shape.kind {
        ShapeKind::Circle { radius } => {
            distance_if_in_radius(cx, cy, lon, lat, radius * shape.conversion)?
        }
        ShapeKind::Box { width, height } => distance_if_in_rectangle(
            width * shape.conversion,
            height * shape.conversion,
            cx,
            cy,
            lon,
            lat,
        )?,
    };
    Some(((lon, lat), d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (member, longitude, latitude, score, GEOPOS longitude, GEOPOS latitude, GEOHASH), from
    /// GEOADD / ZSCORE / GEOPOS / GEOHASH on redis-server.
    const POINTS: &[(&str, f64, f64, u64, &str, &str, &str)] = &[
        (
            "Palermo",
            13.361389,
            38.115556,
            3479099956230698,
            "13.36138933897018433",
            "38.11555639549629859",
            "sqc8b49rny0",
        ),
        (
            "Catania",
            15.087269,
            37.502669,
            3479447370796909,
            "15.08726745843887329",
            "37.50266842333162032",
            "sqdtr74hyu0",
        ),
        (
            "SF",
            -122.4194,
            37.7749,
            1367859919124626,
            "-122.41940170526504517",
            "37.77490001056577995",
            "9q8yyk8ytp0",
        ),
        (
            "Tokyo",
            139.6917,
            35.6895,
            4171231230197045,
            "139.69170123338699341",
            "35.68950126697937009",
            "xn774c06kt0",
        ),
        (
            "origin",
            0.0,
            0.0,
            3377699720527872,
            "0.00000268220901489",
            "0.00000126736058093",
            "s0000000000",
        ),
        (
            "east",
            180.0,
            0.0,
            10133099161583616,
            "180",
            "0.00000126736058093",
            "80000000000",
        ),
        (
            "west",
            -180.0,
            0.0,
            1125899906842624,
            "-179.99999731779098511",
            "0.00000126736058093",
            "80000000000",
        ),
        (
            "north",
            0.0,
            85.05112878,
            6755399441055744,
            "0.00000268220901489",
            "85.0511287799999991",
            "up05b5048p0",
        ),
        (
            "south",
            0.0,
            -85.05112878,
            2251799813685248,
            "0.00000268220901489",
            "-85.05112751263942528",
            "h0bh0hbj200",
        ),
        (
            "NY",
            -73.935242,
            40.730610,
            1791875640195835,
            "-73.93524438142776489",
            "40.73061047253818145",
            "dr5rtwccpb0",
        ),
        (
            "Sydney",
            151.2093,
            -33.8688,
            3252046221964352,
            "151.20929986238479614",
            "-33.86880091934155956",
            "r3gx2f77bj0",
        ),
        (
            "corner",
            179.999999,
            -85.05,
            3002399751663611,
            "179.99999731779098511",
            "-85.04999956172352427",
            "pbzupvpgzf0",
        ),
    ];

    fn point(name: &str) -> (f64, f64) {
        let p = POINTS.iter().find(|p| p.0 == name).unwrap();
        position_of(p.3 as f64).unwrap()
    }

    #[test]
    fn interleave_roundtrip() {
        for (a, b) in [
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (u32::MAX, 0),
            (0x1234_5678, 0x9abc_def0),
        ] {
            assert_eq!(deinterleave(interleave(a, b)), (a, b));
        }
        assert_eq!(interleave(1, 0), 1);
        assert_eq!(interleave(0, 1), 2);
        assert_eq!(interleave(u32::MAX, u32::MAX), u64::MAX);
    }

    #[test]
    fn scores_positions_and_hashes_match_redis() {
        for &(name, lon, lat, score, plon, plat, gh) in POINTS {
            assert_eq!(score_of(lon, lat), Some(score as f64), "{name} score");
            let (x, y) = position_of(score as f64).unwrap();
            // GEOPOS prints the long double form (17 decimals, trailing zeros trimmed).
            let human = |v: f64| tern_runtime::float::LongDouble::from_f64(v).to_human();
            assert_eq!(human(x), plon.as_bytes(), "{name} longitude");
            assert_eq!(human(y), plat.as_bytes(), "{name} latitude");
            assert_eq!(
                &geohash_string(score as f64).unwrap(),
                gh.as_bytes(),
                "{name} geohash"
            );
        }
    }

    #[test]
    fn limits() {
        assert!(valid_lonlat(180.0, LAT_MAX));
        assert!(!valid_lonlat(180.000001, 0.0));
        assert!(!valid_lonlat(0.0, 85.06));
        assert_eq!(score_of(200.0, 100.0), None);
        assert_eq!(
            invalid_lonlat_error(200.0, 100.0),
            "ERR invalid longitude,latitude pair 200.000000,100.000000"
        );
        assert_eq!(
            invalid_lonlat_error(10.0, 85.06),
            "ERR invalid longitude,latitude pair 10.000000,85.060000"
        );
    }

    #[test]
    fn distances_match_redis() {
        // GEODIST replies from redis-server, in the unit given.
        let cases = [
            ("Palermo", "Catania", 1.0, "166274.1516"),
            ("Palermo", "Catania", 1000.0, "166.2742"),
            ("SF", "Tokyo", 1609.34, "5140.6461"),
            ("north", "south", 1.0, "18919844.5891"),
            ("east", "west", 0.3048, "0.9788"),
            ("NY", "Sydney", 1.0, "15999353.1876"),
            ("origin", "north", 1.0, "9459922.2241"),
        ];
        for (a, b, unit, want) in cases {
            let (x1, y1) = point(a);
            let (x2, y2) = point(b);
            assert_eq!(
                format_distance(distance(x1, y1, x2, y2) / unit),
                want,
                "{a}-{b}"
            );
        }
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(0.00004), "0.0000");
        assert_eq!(format_distance(1.23456), "1.2346");
        assert_eq!(format_distance(12.5), "12.5000");
    }

    #[test]
    fn argument_errors_match_redis() {
        assert_eq!(parse_radius(b"abc", b"km"), Err("ERR need numeric radius"));
        assert_eq!(
            parse_radius(b"-1", b"km"),
            Err("ERR radius cannot be negative")
        );
        assert_eq!(parse_radius(b"1", b"yd"), Err(ERR_UNIT));
        assert_eq!(parse_radius(b"2.5", b"KM"), Ok((2.5, 1000.0)));
        assert_eq!(parse_box(b"a", b"1", b"km"), Err("ERR need numeric width"));
        assert_eq!(parse_box(b"1", b"b", b"km"), Err("ERR need numeric height"));
        assert_eq!(
            parse_box(b"-1", b"1", b"km"),
            Err("ERR height or width cannot be negative")
        );
        assert_eq!(
            parse_box(b"1", b"-1", b"yd"),
            Err("ERR height or width cannot be negative")
        );
        assert_eq!(parse_box(b"1", b"2", b"ft"), Ok((1.0, 2.0, 0.3048)));
        assert_eq!(
            parse_lonlat(b"x", b"0"),
            Err("ERR value is not a valid float".to_string())
        );
        assert_eq!(
            parse_lonlat(b" 1", b"0"),
            Err("ERR value is not a valid float".to_string())
        );
        assert_eq!(
            parse_lonlat(b"0", b"90"),
            Err("ERR invalid longitude,latitude pair 0.000000,90.000000".to_string())
        );
        assert_eq!(
            parse_lonlat(b"inf", b"0"),
            Err("ERR invalid longitude,latitude pair inf,0.000000".to_string())
        );
        assert_eq!(parse_lonlat(b"13.5", b"-85.05112878"), Ok((13.5, LAT_MIN)));
    }

    #[test]
    fn units() {
        assert_eq!(unit_factor(b"KM"), Some(1000.0));
        assert_eq!(unit_factor(b"mi"), Some(1609.34));
        assert_eq!(unit_factor(b"Ft"), Some(0.3048));
        assert_eq!(unit_factor(b"m"), Some(1.0));
        assert_eq!(unit_factor(b"yd"), None);
    }

    #[test]
    fn neighbours_are_adjacent_cells() {
        let h = encode_wgs84(13.361389, 38.115556, 10).unwrap();
        let a = decode_wgs84(h).unwrap();
        let n = neighbors(h);
        let east = decode_wgs84(n.east).unwrap();
        let north = decode_wgs84(n.north).unwrap();
        let sw = decode_wgs84(n.south_west).unwrap();
        assert_eq!(east.longitude.min, a.longitude.max);
        assert_eq!(east.latitude, a.latitude);
        assert_eq!(north.latitude.min, a.latitude.max);
        assert_eq!(north.longitude, a.longitude);
        assert_eq!(sw.latitude.max, a.latitude.min);
        assert_eq!(sw.longitude.max, a.longitude.min);
        // Moving east then west comes back.
        let mut back = n.east;
        move_x(&mut back, -1);
        assert_eq!(back, h);
    }

    #[test]
    fn step_estimates() {
        assert_eq!(estimate_steps_by_radius(0.0, 0.0), 26);
        assert_eq!(estimate_steps_by_radius(1.0, 0.0), 24);
        assert_eq!(estimate_steps_by_radius(100_000.0, 0.0), 7);
        assert_eq!(estimate_steps_by_radius(100_000.0, 70.0), 6);
        assert_eq!(estimate_steps_by_radius(100_000.0, -81.0), 5);
        assert_eq!(estimate_steps_by_radius(50_000_000.0, 0.0), 1);
    }

    /// A small GEOSEARCH over the sample points, the way the command will run it: every
    /// candidate cell's score range, then the exact shape test.
    fn search(shape: &Shape) -> Vec<(&'static str, String)> {
        let areas = areas_for_shape(shape);
        let mut hits = Vec::new();
        for cell in cells_to_scan(&areas) {
            let (min, max) = score_range(cell);
            for &(name, _, _, score, ..) in POINTS {
                if score >= min && score < max {
                    if let Some((_, d)) = within_shape(shape, score as f64) {
                        hits.push((name, format_distance(d / shape.conversion)));
                    }
                }
            }
        }
        hits.sort_by(|a, b| {
            a.1.parse::<f64>()
                .unwrap()
                .total_cmp(&b.1.parse::<f64>().unwrap())
        });
        hits
    }

    #[test]
    fn searches_match_redis() {
        // GEOSEARCH g FROMLONLAT <lon> <lat> BYRADIUS r <unit> | BYBOX w h <unit> ASC WITHDIST,
        // replies from redis-server over the sample points.
        let circle = |lon, lat, radius, conversion| Shape {
            center: (lon, lat),
            conversion,
            kind: ShapeKind::Circle { radius },
        };
        let rect = |lon, lat, width, height, conversion| Shape {
            center: (lon, lat),
            conversion,
            kind: ShapeKind::Box { width, height },
        };
        let cases: &[(Shape, &str)] = &[
            (
                circle(15.0, 37.0, 200.0, 1000.0),
                "Catania 56.4413 Palermo 190.4424",
            ),
            (
                rect(15.0, 37.0, 400.0, 400.0, 1000.0),
                "Catania 56.4413 Palermo 190.4424",
            ),
            (
                // "north" is 9459.9 km away but outside every scanned cell, as in Redis.
                circle(0.0, 0.0, 10000.0, 1000.0),
                "origin 0.0003 Catania 4449.6961 Palermo 4454.7332 NY 8664.0161 south 9459.9222",
            ),
            (
                rect(0.0, 0.0, 20000.0, 20000.0, 1000.0),
                "origin 0.0003 Catania 4449.6961 Palermo 4454.7332 NY 8664.0161 south 9459.9222 \
                 corner 10560.9372 SF 12799.0271",
            ),
            (
                circle(170.0, -80.0, 3000.0, 1000.0),
                "corner 577.9385 south 1657.0761",
            ),
            (
                circle(-100.0, 40.0, 3000.0, 1609.34),
                "SF 1212.5872 NY 1368.4352",
            ),
            (
                circle(0.0, 0.0, 20000.0, 1000.0),
                "origin 0.0003 Catania 4449.6961 Palermo 4454.7332 NY 8664.0161 south 9459.9222 \
                 corner 10560.9372 SF 12799.0271 Tokyo 14266.8984 Sydney 15203.7386",
            ),
        ];
        for (shape, want) in cases {
            let got: Vec<String> = search(shape)
                .into_iter()
                .map(|(n, d)| format!("{n} {d}"))
                .collect();
            assert_eq!(got.join(" "), *want, "{shape:?}");
        }
    }
}

/// Randomized comparison with a running redis-server: `GEO_REDIS_PORT=6379 cargo test
/// --release -p tern-commands geohash -- --ignored`. Random points are GEOADDed there; random
/// GEOSEARCH circles and boxes must find exactly the members (and distances) that this
/// module's cells, score ranges and shape tests find.
#[cfg(test)]
mod redis_differential {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;

    #[derive(Debug)]
    #[allow(dead_code)]
    enum Resp {
        Str(String),
        Int(i64),
        Arr(Vec<Resp>),
        Nil,
    }

    fn read(r: &mut BufReader<TcpStream>) -> Resp {
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let (t, rest) = line.trim_end().split_at(1);
        match t {
            "+" => Resp::Str(rest.into()),
            "-" => panic!("redis error: {rest}"),
            ":" => Resp::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return Resp::Nil;
                }
                let mut b = vec![0u8; n as usize + 2];
                r.read_exact(&mut b).unwrap();
                b.truncate(n as usize);
                Resp::Str(String::from_utf8(b).unwrap())
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                Resp::Arr((0..n.max(0)).map(|_| read(r)).collect())
            }
            _ => panic!("bad reply {line}"),
        }
    }

    fn call(w: &mut TcpStream, r: &mut BufReader<TcpStream>, args: &[String]) -> Resp {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out += &format!("${}\r\n{a}\r\n", a.len());
        }
        w.write_all(out.as_bytes()).unwrap();
        read(r)
    }

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
    }

    #[test]
    #[ignore]
    fn random_searches_match_redis() {
        let Ok(port) = std::env::var("GEO_REDIS_PORT") else {
            return;
        };
        let mut w = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
        let mut r = BufReader::new(w.try_clone().unwrap());
        let s = |x: &str| x.to_string();
        call(&mut w, &mut r, &[s("DEL"), s("geo-diff")]);
        let mut rng = Lcg(42);
        let centers = [
            (13.4, 38.1),
            (-122.4, 37.8),
            (0.0, 0.0),
            (179.9, -84.9),
            (-179.9, 84.9),
        ];
        let mut points: Vec<(String, u64)> = Vec::new();
        for i in 0..2000 {
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
            let (lon_s, lat_s) = (format!("{lon:.6}"), format!("{lat:.6}"));
            let name = format!("p{i}");
            let score = score_of(lon_s.parse().unwrap(), lat_s.parse().unwrap()).unwrap();
            call(
                &mut w,
                &mut r,
                &[s("GEOADD"), s("geo-diff"), lon_s, lat_s, name.clone()],
            );
            points.push((name, score as u64));
        }
        let units = [("m", 1.0), ("km", 1000.0), ("mi", 1609.34), ("ft", 0.3048)];
        for round in 0..400 {
            let (lon, lat) = if round % 2 == 0 {
                (rng.between(-180.0, 180.0), rng.between(-85.05, 85.05))
            } else {
                let c = centers[round % centers.len()];
                (
                    (c.0 + rng.between(-1.0, 1.0)).clamp(-180.0, 180.0),
                    (c.1 + rng.between(-1.0, 1.0)).clamp(-85.05, 85.05),
                )
            };
            let (unit, conversion) = units[round % units.len()];
            let metres = 10f64.powf(rng.between(0.0, 7.3));
            let size = format!("{:.3}", metres / conversion);
            let size2 = format!("{:.3}", metres * rng.between(0.2, 3.0) / conversion);
            let (lon_s, lat_s) = (format!("{lon:.6}"), format!("{lat:.6}"));
            let by_box = round % 3 == 0;
            let mut args = vec![s("GEOSEARCH"), s("geo-diff"), s("FROMLONLAT")];
            args.extend([lon_s.clone(), lat_s.clone()]);
            let kind = if by_box {
                args.extend([s("BYBOX"), size.clone(), size2.clone(), s(unit)]);
                ShapeKind::Box {
                    width: size.parse().unwrap(),
                    height: size2.parse().unwrap(),
                }
            } else {
                args.extend([s("BYRADIUS"), size.clone(), s(unit)]);
                ShapeKind::Circle {
                    radius: size.parse().unwrap(),
                }
            };
            args.push(s("WITHDIST"));
            let Resp::Arr(items) = call(&mut w, &mut r, &args) else {
                panic!()
            };
            let mut want: Vec<String> = items
                .into_iter()
                .map(|it| match it {
                    Resp::Arr(v) => match (&v[0], &v[1]) {
                        (Resp::Str(n), Resp::Str(d)) => format!("{n} {d}"),
                        o => panic!("{o:?}"),
                    },
                    o => panic!("{o:?}"),
                })
                .collect();
            let shape = Shape {
                center: (lon_s.parse().unwrap(), lat_s.parse().unwrap()),
                conversion,
                kind,
            };
            let mut got = Vec::new();
            for cell in cells_to_scan(&areas_for_shape(&shape)) {
                let (min, max) = score_range(cell);
                for (name, score) in &points {
                    if *score >= min && *score < max {
                        if let Some((_, d)) = within_shape(&shape, *score as f64) {
                            got.push(format!("{name} {}", format_distance(d / conversion)));
                        }
                    }
                }
            }
            want.sort();
            got.sort();
            assert_eq!(got, want, "{args:?}");
        }
    }
}
