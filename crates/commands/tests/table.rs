//! The command table as the families hand it to the runtime.
use std::collections::HashMap;
use tern_runtime::table::CommandSpec;

/// Every command and subcommand is defined once: a second entry of the same name would
/// silently replace the first in the registry, depending on the families' order.
#[test]
fn every_command_is_defined_once() {
    let mut seen: HashMap<String, usize> = HashMap::new();
    fn walk(prefix: &str, specs: &[CommandSpec], seen: &mut HashMap<String, usize>) {
        for s in specs {
            let name = format!("{prefix}{}", s.name);
            *seen.entry(name.clone()).or_default() += 1;
            walk(&format!("{name}|"), s.subcommands, seen);
        }
    }
    for family in tern_commands::FAMILIES {
        walk("", family, &mut seen);
    }
    let twice: Vec<_> = seen.into_iter().filter(|(_, n)| *n > 1).collect();
    assert!(twice.is_empty(), "defined more than once: {twice:?}");
    assert!(
        tern_commands::FAMILIES
            .iter()
            .map(|f| f.len())
            .sum::<usize>()
            > 200
    );
}
