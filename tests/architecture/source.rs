//! Reading the source as text for the architecture checks: code without comments and unit
//! tests, the paths it names (`crate::…`, `super::…`, `self::…`, a child module's name), the
//! module tree of a crate's files, and the cycles of a graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's path from its crate's root (`["pipeline", "runner"]`; the root is empty).
pub type ModPath = Vec<String>;

/// Code without its unit tests (an inline `#[cfg(test)] mod tests { … }`, attributes allowed
/// between the two, runs to the end of the file) and without line comments.
pub fn code_of(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let tests_at = (0..lines.len()).find(|&i| {
        lines[i] == "#[cfg(test)]"
            && lines[i + 1..]
                .iter()
                .find(|l| !l.starts_with("#["))
                .is_some_and(|l| *l == "mod tests {")
    });
    lines[..tests_at.unwrap_or(lines.len())]
        .iter()
        .filter(|line| !line.trim_start().starts_with("//"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules a file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`), each with whether
/// it is public; `tests` left out.
pub fn declared_mods(code: &str) -> Vec<(bool, String)> {
    code.lines()
        .map(str::trim)
        .filter_map(|line| {
            let (public, rest) = match line.strip_prefix("pub mod ") {
                Some(rest) => (true, rest),
                None => (
                    false,
                    line.strip_prefix("mod ").or_else(|| {
                        line.strip_prefix("pub(crate) mod ")
                            .or_else(|| line.strip_prefix("pub(super) mod "))
                    })?,
                ),
            };
            let name = rest.strip_suffix(';')?;
            (name != "tests").then(|| (public, name.to_owned()))
        })
        .collect()
}

fn identifier_at(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The paths of a use tree that starts at `text` (right after a `prefix::`), groups expanded:
/// `a::{b, c::d}` is `a::b` and `a::c::d`; `self` in a group names the path before it.
fn use_tree(text: &str) -> Vec<ModPath> {
    fn parse(text: &str, at: &mut usize, base: &ModPath, out: &mut Vec<ModPath>) {
        let bytes = text.as_bytes();
        let skip_space = |at: &mut usize| {
            while bytes.get(*at).is_some_and(u8::is_ascii_whitespace) {
                *at += 1;
            }
        };
        let mut path = base.clone();
        loop {
            skip_space(at);
            if bytes.get(*at) == Some(&b'{') {
                *at += 1;
                loop {
                    parse(text, at, &path, out);
                    skip_space(at);
                    match bytes.get(*at) {
                        Some(b',') => *at += 1,
                        Some(b'}') => {
                            *at += 1;
                            return;
                        }
                        _ => return,
                    }
                    // A trailing comma before the group closes.
                    skip_space(at);
                    if bytes.get(*at) == Some(&b'}') {
                        *at += 1;
                        return;
                    }
                }
            }
            let name = identifier_at(&text[*at..]);
            if name.is_empty() {
                if !path.is_empty() {
                    out.push(path);
                }
                return;
            }
            *at += name.len();
            if name != "self" {
                path.push(name.to_owned());
            }
            if text[*at..].starts_with("::") {
                *at += 2;
            } else {
                out.push(path);
                return;
            }
        }
    }
    let mut out = Vec::new();
    parse(text, &mut 0, &Vec::new(), &mut out);
    out
}

/// Every path `code` names after `prefix` (`crate::`, `super::`, …), where `prefix` is not
/// the tail of a longer path (`$crate::` names the crate too).
pub fn paths_after(code: &str, prefix: &str) -> Vec<ModPath> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        let before = code[..at].chars().next_back();
        let longer = before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':');
        if !longer {
            found.extend(use_tree(&code[at + prefix.len()..]));
        }
    }
    found
}

pub fn is_test_file(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "tests.rs")
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// Every `.rs` file under `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The module a file of the crate at `src` is (`lib.rs` the root, `a/b.rs` and `a/b/mod.rs`
/// are `a::b`).
pub fn module_of(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: ModPath = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(path.last().map(String::as_str), Some("lib" | "mod")) {
        path.pop();
    }
    path
}

/// The crate at `src` as modules: each with its code (unit tests and comments left out).
pub fn crate_modules(src: &Path) -> BTreeMap<ModPath, String> {
    rust_files(src)
        .into_iter()
        .filter(|f| !is_test_file(f))
        .map(|f| {
            (
                module_of(src, &f),
                code_of(&fs::read_to_string(&f).unwrap()),
            )
        })
        .collect()
}

/// The modules `code` (module `at` of a crate with `modules`) uses: every path it names,
/// resolved to the deepest module it reaches (`reexports` maps the crate root's re-exported
/// names to their modules).
pub fn uses(
    at: &ModPath,
    code: &str,
    modules: &BTreeSet<ModPath>,
    reexports: &[(&str, &[&str])],
) -> BTreeSet<ModPath> {
    let parent: ModPath = at[..at.len().saturating_sub(1)].to_vec();
    let mut named: Vec<ModPath> = Vec::new();
    for path in paths_after(code, "crate::") {
        match reexports
            .iter()
            .find(|(name, _)| path.first().is_some_and(|p| p == name))
        {
            Some((_, module)) => named.push(module.iter().map(|s| (*s).to_owned()).collect()),
            None => named.push(path),
        }
    }
    for path in paths_after(code, "super::") {
        named.push([parent.clone(), path].concat());
    }
    for path in paths_after(code, "self::") {
        named.push([at.clone(), path].concat());
    }
    for (_, child) in declared_mods(code) {
        for path in paths_after(code, &format!("{child}::")) {
            named.push([at.clone(), vec![child.clone()], path].concat());
        }
    }
    named
        .into_iter()
        .filter_map(|path| {
            (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|prefix| modules.contains(prefix))
        })
        .filter(|used| used != at)
        .collect()
}

/// The import cycles between sibling modules of a crate: a use from `a` to `b`, neither
/// within the other, is a use between the two children of their nearest common ancestor that
/// hold them; those uses must form no cycle (a module may use its parent, and its parent it).
/// Each cycle as `within <ancestor>: a -> b -> a`.
pub fn sibling_cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let mut between: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (user, used) in graph {
        for target in used {
            let common = user.iter().zip(target).take_while(|(a, b)| a == b).count();
            if common == user.len() || common == target.len() {
                continue;
            }
            between
                .entry(user[..common].to_vec())
                .or_default()
                .entry(user[common].clone())
                .or_default()
                .insert(target[common].clone());
        }
    }
    let mut found = Vec::new();
    for (ancestor, siblings) in between {
        for cycle in cycles(&siblings) {
            let name = if ancestor.is_empty() {
                "the crate root".to_owned()
            } else {
                ancestor.join("::")
            };
            found.push(format!(
                "within {name}: {} -> {}",
                cycle.join(" -> "),
                cycle[0]
            ));
        }
    }
    found
}

/// The import cycles of the graph, each as its modules in order.
pub fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn walk(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            found.push(path[at..].to_vec());
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            walk(next, graph, path, done, found);
        }
        path.pop();
        done.insert(node.to_owned());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        walk(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

/// The names in backticks (`x`, [`x`], [`mod@x`]) of `text`.
pub fn backticked(text: &str) -> BTreeSet<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|name| name.trim_start_matches("mod@").to_owned())
        .filter(|name| {
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect()
}
