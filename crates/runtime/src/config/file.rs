//! Reading configuration text: redis.conf files (with `include`) and the command line's
//! `--name value` options, as Redis parses them.

use super::*;

impl Config {
    /// Parse redis.conf text: one directive per line, `#` comments, quoted arguments,
    /// `include path`. Errors are Redis's FATAL CONFIG FILE ERROR text naming the line.
    /// `origin` "(command line)" marks the `--name value` options, which Redis numbers after the
    /// config file's lines.
    pub fn load_text(&self, text: &str, origin: &Path, depth: usize) -> Result<(), String> {
        let is_cmdline = origin == Path::new("(command line)");
        let offset = if is_cmdline && depth == 0 {
            // Redis parses `file + "\n" + options`: options start after the file's last line.
            match self.file_lines.load(Relaxed) {
                0 => 1,
                n => n,
            }
        } else {
            0
        };
        if depth == 0 && !is_cmdline {
            self.file_lines
                .store(text.matches('\n').count() + 1, Relaxed);
        }
        for (i, raw) in text.split('\n').enumerate() {
            let line = raw.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    crate::REDIS_VERSION,
                    offset + i + 1,
                    line,
                    msg
                )
            };
            let Some(mut argv) = sdssplitargs(line) else {
                return Err(bad("Unbalanced quotes in configuration line"));
            };
            if argv.is_empty() {
                continue;
            }
            argv[0] = argv[0].to_ascii_lowercase();
            if let Some(p) = find(&argv[0]) {
                if !p.multi_arg() && argv.len() != 2 {
                    return Err(bad("wrong number of arguments"));
                }
                let args: Vec<String> = if p.multi_arg() && argv.len() == 2 && !argv[1].is_empty() {
                    // `--save "900 1"` style: one argument holding several.
                    sdssplitargs(&argv[1]).unwrap_or_default()
                } else {
                    argv[1..].to_vec()
                };
                let cur = self.values.read().get(p.name).cloned().unwrap_or_default();
                let v = self
                    .canonical_args(p, &args, Origin::File, &cur)
                    .map_err(|e| bad(&e))?;
                self.store(p.name, v);
                continue;
            }
            let argc = argv.len();
            match argv[0].as_str() {
                "list-max-ziplist-entries"
                | "list-max-ziplist-value"
                | "lua-replicate-commands"
                    if argc == 2 => {}
                "include" if argc == 2 => {
                    if depth > 16 {
                        return Err(bad("Bad include directive"));
                    }
                    let path = Path::new(&argv[1]);
                    let text = match std::fs::read_to_string(path) {
                        Ok(t) => t,
                        Err(e) => {
                            return Err(format!(
                                "Fatal error, can't open config file '{}': {}",
                                argv[1],
                                strerror(&e)
                            ))
                        }
                    };
                    self.load_text(&text, path, depth + 1)?;
                }
                "rename-command" if argc == 3 => {
                    let exists =
                        crate::table::all_commands().any(|c| c.name.eq_ignore_ascii_case(&argv[1]));
                    if !exists {
                        return Err(bad("No such command in rename-command"));
                    }
                    self.renames
                        .lock()
                        .push((argv[1].to_ascii_lowercase(), argv[2].clone()));
                }
                "user" if argc >= 2 => {
                    let declared = |j: usize, msg: &str| {
                        bad(&format!("Error in user declaration '{}': {msg}", argv[j]))
                    };
                    if self.users.lock().iter().any(|u| u[0] == argv[1]) {
                        return Err(declared(
                            1,
                            crate::acl::rules::SetError::Duplicate.message(),
                        ));
                    }
                    if let Err((j, msg)) = crate::acl::validate_user_line(&argv) {
                        return Err(declared(j.min(argc - 1), msg));
                    }
                    self.users.lock().push(argv[1..].to_vec());
                }
                "loadmodule" if argc >= 2 => self.loadmodules.lock().push(argv[1..].to_vec()),
                name if name.contains('.') => {
                    if argc < 2 {
                        return Err(bad("Module config specified without value"));
                    }
                    self.module_configs
                        .lock()
                        .push((argv[0].clone(), argv[1..].join(" ")));
                }
                "sentinel" => {
                    if argc != 1 {
                        return Err(bad("sentinel directive while not in sentinel mode"));
                    }
                }
                _ => return Err(bad("Bad directive or wrong number of arguments")),
            }
        }
        Ok(())
    }
}

/// Redis's command-line convention: `[file] --name v1 v2 "--name2 v" ...` becomes config-file
/// text appended after the file (`--save` with no value means `save ""`). Returns the options
/// text; the caller parses it with `load_text(.., Path::new("(command line)"), 0)`.
pub fn options_from_args(args: &[String]) -> String {
    let mut options = String::new();
    let mut handled_last = true;
    let n = args.len();
    for (j, a) in args.iter().enumerate() {
        if a == "-" && (j == 0 || j == n - 1) {
            continue;
        }
        if handled_last && a.starts_with("--") {
            if !options.is_empty() {
                options.push('\n');
            }
            options.push_str(&a[2..]);
            options.push(' ');
            let parts = sdssplitargs(a).map(|v| v.len()).unwrap_or(0);
            if parts == 1 {
                handled_last = false;
                let next_is_opt = j + 1 < n && args[j + 1].starts_with("--");
                if a.eq_ignore_ascii_case("--save") && (next_is_opt || j == n - 1) {
                    options.push_str("\"\"");
                    handled_last = true;
                } else if a.eq_ignore_ascii_case("--sentinel") && next_is_opt {
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            options.push_str(&repr(a));
            options.push(' ');
            handled_last = true;
        }
    }
    options
}
