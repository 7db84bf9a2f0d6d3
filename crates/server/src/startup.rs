//! Command-line handling, redis-server style: `tern-server [config-file] [--name value ...]`.

use std::path::Path;
use tern_runtime::config::Config;

pub enum Startup {
    Run(Box<Config>),
    Exit(i32),
}

pub fn parse_args(args: &[String]) -> Startup {
    let config = Config::new();
    let mut rest = args;
    if let Some(first) = rest.first() {
        match first.as_str() {
            "-v" | "--version" => {
                println!(
                    "tern-server v={} (Redis {} compatible)",
                    env!("CARGO_PKG_VERSION"),
                    tern_runtime::REDIS_VERSION
                );
                return Startup::Exit(0);
            }
            "-h" | "--help" => {
                println!("Usage: tern-server [/path/to/tern.conf] [options]\n       tern-server --port 7777 --save \"\"\n       tern-server -v | --version");
                return Startup::Exit(0);
            }
            _ => {}
        }
        if !first.starts_with("--") {
            let path = Path::new(first);
            let text = if first == "-" {
                let mut s = String::new();
                let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut s);
                s
            } else {
                match std::fs::read_to_string(path) {
                    Ok(t) => t,
                    Err(e) => {
                        eprintln!("Fatal error, can't open config file '{}': {e}", first);
                        return Startup::Exit(1);
                    }
                }
            };
            // Resolved before loading: a `dir` line changes the working directory.
            let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            if let Err(e) = config.load_text(&text, path, 0) {
                eprintln!("{e}");
                return Startup::Exit(1);
            }
            if first != "-" {
                *config.file.write() = Some(abs);
            }
            rest = &rest[1..];
        }
    }
    // `--name v1 v2 --other v` becomes config lines, with redis-server's exact rules.
    let text = tern_runtime::config::options_from_args(rest);
    if let Err(e) = config.load_text(&text, Path::new("(command line)"), 0) {
        eprintln!("{e}");
        return Startup::Exit(1);
    }
    Startup::Run(Box::new(config))
}
