//! LOLWUT [VERSION v] [args...]: computer art and the version, with Redis 7.2's dispatch —
//! version 5 draws Georg Nees's "Schotter" in Braille dots, version 6 an 8-bit skyline in
//! terminal colours, anything else (and no VERSION: this server's own 7.2) only the version.

use tern_runtime::args::{eq_ic, parse_i64, Args, ERR_NOT_INT};
use tern_runtime::ctx::Ctx;
use tern_runtime::table::CommandSpec;

pub static COMMANDS: &[CommandSpec] = tern_runtime::table::commands! { group "server";
    ("lolwut", -1, [READONLY FAST], [], [], lolwut, "5.0.0",
        "Displays computer art and the Redis version", complexity: ""),
};

fn lolwut(ctx: &mut Ctx, args: &Args) {
    let all: Vec<&[u8]> = args.iter().collect();
    // The art's own arguments follow the command name, or `VERSION v` when it is given.
    let (major, rest) = if all.len() >= 3 && eq_ic(all[1], "version") {
        let Some(v) = parse_i64(all[2]) else {
            return ctx.out.error(ERR_NOT_INT);
        };
        // Redis prints the number as an unsigned 32-bit "N.0.0" and dispatches on that text:
        // only a single digit 5 or 6 selects an artwork.
        let v = v as u32;
        (if v <= 9 { Some(v) } else { None }, &all[3..])
    } else {
        // This server's own version (7.2): no artwork.
        (None, &all[1..])
    };
    // Each artwork reads only as many arguments as it takes (version 5 three, 6 two); the
    // rest, and every argument of the version-only reply, are ignored as in Redis.
    let takes = match major {
        Some(5) => 3,
        Some(6) => 2,
        _ => 0,
    };
    let mut params = Vec::with_capacity(takes);
    for a in rest.iter().take(takes) {
        match parse_i64(a) {
            Some(n) => params.push(n),
            None => return ctx.out.error(ERR_NOT_INT),
        }
    }
    let mut rng = Rng::seeded();
    let mut text = match major {
        Some(5) => {
            let arg = |i: usize, dflt: i64| params.get(i).copied().unwrap_or(dflt);
            let mut t = schotter(
                arg(0, 66).clamp(1, 1000) as i32,
                arg(1, 8).clamp(1, 200) as i32,
                arg(2, 12).clamp(1, 200) as i32,
                &mut rng,
            );
            t.push_str("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ");
            t
        }
        Some(6) => {
            let arg = |i: usize, dflt: i64| params.get(i).copied().unwrap_or(dflt);
            let mut t = skyline(
                arg(0, 80).clamp(1, 1000) as i32,
                arg(1, 20).clamp(1, 1000) as i32,
                &mut rng,
            );
            t.push_str(
                "\nDedicated to the 8 bit game developers of past and present.\n\
                 Original 8 bit image from Plaguemon by hikikomori. Redis ver. ",
            );
            t
        }
        _ => String::from("Redis ver. "),
    };
    text.push_str(tern_runtime::REDIS_VERSION);
    text.push('\n');
    ctx.out.verbatim(text.as_bytes());
}

/// A small xorshift generator: the art only needs to look random.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9);
        Rng(t | 1)
    }

    /// A non-negative number below 2^31, like C's rand().
    fn next(&mut self) -> i32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 33) as i32
    }

    /// Uniform in [0, 1].
    fn unit(&mut self) -> f32 {
        self.next() as f32 / i32::MAX as f32
    }
}

/// A grid of pixels, each a colour number; drawing outside it is ignored.
struct Canvas {
    width: i32,
    height: i32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i32, height: i32, background: u8) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![background; (width.max(0) as usize) * (height.max(0) as usize)],
        }
    }

    fn inside(&self, x: i32, y: i32) -> bool {
        x >= 0 && y >= 0 && x < self.width && y < self.height
    }

    fn set(&mut self, x: i32, y: i32, colour: u8) {
        if self.inside(x, y) {
            self.pixels[(x + y * self.width) as usize] = colour;
        }
    }

    fn get(&self, x: i32, y: i32) -> u8 {
        if self.inside(x, y) {
            self.pixels[(x + y * self.width) as usize]
        } else {
            0
        }
    }

    /// Bresenham's line from (x0, y0) to (x1, y1), ends included.
    fn line(&mut self, (mut x0, mut y0): (i32, i32), (x1, y1): (i32, i32)) {
        let (dx, dy) = ((x1 - x0).abs(), (y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let mut err = dx - dy;
        loop {
            self.set(x0, y0, 1);
            if x0 == x1 && y0 == y1 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x0 += sx;
            }
            if e2 < dx {
                err += dx;
                y0 += sy;
            }
        }
    }

    /// The outline of a square of side `side` centred on (x, y), turned by `angle` radians:
    /// its corners lie on a circle, a quarter turn apart.
    fn square(&mut self, x: i32, y: i32, side: f32, angle: f32) {
        let radius = (side / std::f32::consts::SQRT_2).round() as f64;
        let mut k = std::f64::consts::FRAC_PI_4 + angle as f64;
        let mut corners = [(0, 0); 4];
        for c in corners.iter_mut() {
            *c = (
                (k.sin() * radius + x as f64).round() as i32,
                (k.cos() * radius + y as f64).round() as i32,
            );
            k += std::f64::consts::FRAC_PI_2;
        }
        for j in 0..4 {
            self.line(corners[j], corners[(j + 1) % 4]);
        }
    }
}

/// Version 5: rows of squares, more disordered (turned and shifted) the lower they are,
/// rendered as Braille characters of 2x4 dots. Every text row ends with a newline except when
/// the canvas's last pixel row starts a text row (as Redis renders it).
fn schotter(cols: i32, per_row: i32, per_col: i32, rng: &mut Rng) -> String {
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32 + (padding * 2) as f32) as i32;
    let mut canvas = Canvas::new(width, height, 0);
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i32;
            let mut angle = 0.0;
            if y > 1 {
                let mut disorder = || rng.unit() / per_col as f32 * y as f32;
                let (mut r1, mut r2, mut r3) = (disorder(), disorder(), disorder());
                for r in [&mut r1, &mut r2, &mut r3] {
                    if rng.next() % 2 == 1 {
                        *r = -*r;
                    }
                }
                angle = r1;
                sx += (r2 * side / 3.0) as i32;
                sy += (r3 * side / 3.0) as i32;
            }
            canvas.square(sx, sy, side, angle);
        }
    }
    let mut text = String::new();
    let mut y = 0;
    while y < canvas.height {
        let mut x = 0;
        while x < canvas.width {
            // Dot numbering of a Braille cell: 0 1 2 down the left column, 3 4 5 down the
            // right, then 6 and 7 for the bottom row.
            let dots = [
                (0, 0),
                (0, 1),
                (0, 2),
                (1, 0),
                (1, 1),
                (1, 2),
                (0, 3),
                (1, 3),
            ];
            let mut bits = 0u32;
            for (i, (dx, dy)) in dots.into_iter().enumerate() {
                if canvas.get(x + dx, y + dy) != 0 {
                    bits |= 1 << i;
                }
            }
            text.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
            x += 2;
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
        y += 4;
    }
    text
}

/// Version 6: a city skyline in four grays (terminal colour escapes, one space per pixel):
/// two rows of window-less buildings behind, one row with lit windows in front.
fn skyline(cols: i32, rows: i32, rng: &mut Rng) -> String {
    let mut canvas = Canvas::new(cols, rows, 3);
    for colour in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += rng.next() % 8;
            let width = 10 + rng.next() % 9;
            let height = if colour == 2 {
                canvas.height / 2 + (rng.next() % canvas.height) / 2
            } else {
                canvas.height / 2 + (rng.next() % canvas.height) / 3
            };
            building(&mut canvas, offset, width, height, colour, false, rng);
            offset += if colour == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < canvas.width {
        offset += rng.next() % 8;
        let mut width = 5 + rng.next() % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = canvas.height / 3 + (rng.next() % canvas.height) / 2;
        building(&mut canvas, offset, width, height, 0, true, rng);
        offset += width + 5;
    }
    let mut text = String::new();
    for y in 0..canvas.height {
        for x in 0..canvas.width {
            let escape = match canvas.get(x, y) {
                1 => "0;90;100m",
                2 => "0;37;47m",
                3 => "0;97;107m",
                _ => "0;30;40m",
            };
            text.push_str("\x1b[");
            text.push_str(escape);
            text.push_str(" \x1b[0m");
        }
        if y != canvas.height - 1 {
            text.push('\n');
        }
    }
    text
}

/// One building standing on the bottom row, its roof two pixels narrower on each side;
/// windows (two pixels wide, one tall, a random other gray) keep off its edges.
fn building(
    canvas: &mut Canvas,
    xoff: i32,
    width: i32,
    height: i32,
    colour: u8,
    windows: bool,
    rng: &mut Rng,
) {
    let bottom = canvas.height - 1;
    let top = bottom - height + 1;
    for y in (top..=bottom).rev() {
        for x in xoff..xoff + width {
            if y == top && (x <= xoff + 1 || x >= xoff + width - 2) {
                continue;
            }
            let mut c = colour;
            if windows && x > xoff + 1 && x < xoff + width - 2 && y > top + 1 && y < bottom - 1 {
                let (relx, rely) = (x - (xoff + 1), y - (top + 1));
                if (relx / 2) % 2 == 1 && rely % 2 == 1 {
                    c = loop {
                        let pick = 1 + (rng.next() % 2) as u8;
                        if pick != colour {
                            break pick;
                        }
                    };
                    if relx % 2 == 1 {
                        c = canvas.get(x - 1, y);
                    }
                }
            }
            canvas.set(x, y, c);
        }
    }
}
